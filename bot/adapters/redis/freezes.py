"""Stop-the-line freezes in Redis: one hash, scope (an environment, or '*' for all) -> the
freeze as JSON. Setting one where one is already replaces it; lifting removes it. A freeze
whose `until` has passed is not returned, and is removed when next read (only if it is still
the one that was read: a new freeze set in between stays)."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import datetime

from redis.asyncio import Redis

from bot.adapters.redis import scripts
from bot.adapters.redis.keys import Keys
from bot.adapters.redis.replies import text
from bot.core.freeze_windows import Freeze, StopTheLine, stop_the_line
from bot.runtime.clock import utcnow

# KEYS: the hash. ARGV: scope, the JSON read -- removed only if it is still that JSON.
_DROP_IF_SAME = """
if redis.call('HGET', KEYS[1], ARGV[1]) == ARGV[2] then
  return redis.call('HDEL', KEYS[1], ARGV[1])
end
return 0
"""


def dump(freeze: Freeze) -> str:
    """A stop-the-line freeze as stored (its scope is the hash field)."""
    window = freeze.window
    if not isinstance(window, StopTheLine):
        raise ValueError(f"only stop-the-line freezes are stored: a {freeze.kind} freeze is written in deploybot.toml")
    return json.dumps({
        "reason": freeze.reason, "set_by": window.set_by, "since": window.since.isoformat(),
        "until": window.until.isoformat() if window.until is not None else None,
    })


def load(scope: str, raw: bytes | str) -> Freeze:
    data = json.loads(raw)
    until = data.get("until")
    return stop_the_line(
        scope, reason=data["reason"], set_by=data["set_by"], since=datetime.fromisoformat(data["since"]),
        until=datetime.fromisoformat(until) if until else None,
    )


class RedisFreezes:
    def __init__(self, redis: Redis, keys: Keys | None = None, clock: Callable[[], datetime] = utcnow) -> None:
        self.redis = redis
        self.keys = keys or Keys()
        self.clock = clock

    async def set(self, freeze: Freeze) -> None:
        """Stop deploys to the freeze's scope (replacing a freeze set there before)."""
        await self.redis.hset(self.keys.freezes(), freeze.scope, dump(freeze))

    async def lift(self, scope: str) -> bool:
        """Lift the freeze on `scope` (an environment, or '*': only the one set for all, not
        those set for single environments). False when there was none (or it had expired)."""
        key = self.keys.freezes()
        async with self.redis.pipeline(transaction=True) as pipe:
            pipe.hget(key, scope)
            pipe.hdel(key, scope)
            raw, removed = await pipe.execute()
        if not removed or raw is None:
            return False
        try:
            return not load(scope, raw).over(self.clock())
        except (ValueError, KeyError, TypeError):
            return True  # unreadable: it was there, and now it is gone

    async def current(self) -> list[Freeze]:
        """The freezes in force (not past their until), '*' first, then by environment."""
        key = self.keys.freezes()
        stored = await self.redis.hgetall(key)
        now = self.clock()
        found = []
        for field, raw in sorted((text(f), text(r)) for f, r in stored.items()):
            freeze = load(field, raw)
            if freeze.over(now):
                await scripts.run(self.redis, _DROP_IF_SAME, [key], field, raw)
            else:
                found.append(freeze)
        return found
