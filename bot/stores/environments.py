"""Per-environment state in Redis: deploy locks (SET NX PX, owner-checked renew and release)
and the history of deploys (a capped list per environment, newest first)."""

from __future__ import annotations

import json
import logging
from dataclasses import asdict
from datetime import datetime

from redis.asyncio import Redis

from bot.ports import DeployRecord, Lock
from bot.retry import retrying
from bot.stores.keys import Keys

HISTORY_LENGTH = 200
# Taking a lock is SET NX, then GET to see who holds it; the holder may let go in between.
# Three tries in all, straight away: letting go twice in a row while we look is rare.
ACQUIRE_WAITS = (0, 0)
log = logging.getLogger(__name__)


class _LetGo(Exception):
    """The lock was held at our SET and free at our GET: try again."""

# KEYS: lock. ARGV: owner, ttl in ms (renew) -- only the owner may touch its lock.
_RENEW = """
local held = redis.call('GET', KEYS[1])
if held and cjson.decode(held)['owner'] == ARGV[1] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0
"""
_RELEASE = """
local held = redis.call('GET', KEYS[1])
if held and (ARGV[1] == '' or cjson.decode(held)['owner'] == ARGV[1]) then
  return redis.call('DEL', KEYS[1])
end
return 0
"""


def _dump_lock(lock: Lock) -> str:
    return json.dumps({**asdict(lock), "since": lock.since.isoformat()})


def _load_lock(raw: bytes | str) -> Lock:
    data = json.loads(raw)
    return Lock(**{**data, "since": datetime.fromisoformat(data["since"])})


class RedisEnvironments:
    def __init__(self, redis: Redis, keys: Keys | None = None) -> None:
        self.redis = redis
        self.keys = keys or Keys()

    async def acquire(self, lock: Lock, ttl_ms: int | None) -> Lock | None:
        what = f"taking the lock on {lock.environment}"
        try:
            async for attempt in retrying(ACQUIRE_WAITS, (_LetGo,), what, log, logging.DEBUG):
                with attempt:
                    return await self._acquire_once(lock, ttl_ms)
        except _LetGo as e:
            raise RuntimeError(f"could not read or take the lock on {lock.environment}") from e
        raise AssertionError("unreachable: retrying returns or raises")

    async def _acquire_once(self, lock: Lock, ttl_ms: int | None) -> Lock | None:
        key = self.keys.lock(lock.environment)
        if await self.redis.set(key, _dump_lock(lock), nx=True, px=ttl_ms):
            return None
        raw = await self.redis.get(key)
        if raw is None:
            raise _LetGo()
        holder = _load_lock(raw)
        if holder.owner == lock.owner:
            if ttl_ms:
                await self.renew(lock.environment, lock.owner, ttl_ms)
            return None
        return holder

    async def renew(self, environment: str, owner: str, ttl_ms: int) -> bool:
        return bool(await self.redis.eval(_RENEW, 1, self.keys.lock(environment), owner, ttl_ms))

    async def release(self, environment: str, owner: str | None) -> bool:
        return bool(await self.redis.eval(_RELEASE, 1, self.keys.lock(environment), owner or ""))

    async def holder(self, environment: str) -> Lock | None:
        raw = await self.redis.get(self.keys.lock(environment))
        return _load_lock(raw) if raw is not None else None

    async def record(self, entry: DeployRecord) -> None:
        key = self.keys.history(entry.environment)
        async with self.redis.pipeline(transaction=True) as pipe:
            pipe.lpush(key, json.dumps({**asdict(entry), "at": entry.at.isoformat()}))
            pipe.ltrim(key, 0, HISTORY_LENGTH - 1)
            await pipe.execute()

    async def recent(self, environment: str, limit: int) -> list[DeployRecord]:
        raw = await self.redis.lrange(self.keys.history(environment), 0, limit - 1)
        records = []
        for item in raw:
            data = json.loads(item)
            records.append(DeployRecord(**{**data, "at": datetime.fromisoformat(data["at"])}))
        return records
