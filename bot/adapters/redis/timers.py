"""Due times and deploy queues in Redis.

Timers: one sorted set, thread id -> when it is next due (ms since the epoch). Workers take
what is due with a script that also pushes each one's score a lease ahead, so two workers
never take the same thread at once, and a thread a worker took but never ran (it died) is
due again when the lease lapses. Firing twice is harmless: the run decides what is due from
the thread's events and appends with compare-and-set.

Deploy queues: a sorted set per service and environment, deploy id -> when it joined.
"""

from __future__ import annotations

from datetime import datetime
from typing import cast

from redis.asyncio import Redis

from bot.adapters.redis import scripts
from bot.adapters.redis.keys import Keys
from bot.adapters.redis.replies import text

# KEYS: timers. ARGV: now (ms), lease until (ms), limit.
_TAKE = """
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, tonumber(ARGV[3]))
for _, id in ipairs(due) do
  redis.call('ZADD', KEYS[1], 'XX', ARGV[2], id)
end
return due
"""


def _ms(at: datetime) -> int:
    return int(at.timestamp() * 1000)


class RedisTimers:
    def __init__(self, redis: Redis, keys: Keys | None = None) -> None:
        self.redis = redis
        self.keys = keys or Keys()

    async def set(self, thread_id: str, due: datetime | None) -> None:
        if due is None:
            await self.redis.zrem(self.keys.timers(), thread_id)
        else:
            await self.redis.zadd(self.keys.timers(), {thread_id: _ms(due)})

    async def due(self, now: datetime, lease_ms: int, limit: int) -> list[str]:
        now_ms = _ms(now)
        taken = await scripts.run(self.redis, _TAKE, [self.keys.timers()], now_ms, now_ms + lease_ms, limit)
        return [text(t) for t in taken]


class RedisDeployQueue:
    def __init__(self, redis: Redis, keys: Keys | None = None) -> None:
        self.redis = redis
        self.keys = keys or Keys()

    async def join(self, environment: str, service: str, deploy_id: str, at: datetime) -> int:
        key = self.keys.queue(environment, service)
        async with self.redis.pipeline(transaction=True) as pipe:
            pipe.zadd(key, {deploy_id: _ms(at)}, nx=True)
            pipe.zrank(key, deploy_id)
            _, rank = await pipe.execute()
        return int(rank) + 1

    async def leave(self, environment: str, service: str, deploy_id: str) -> bool:
        return bool(await self.redis.zrem(self.keys.queue(environment, service), deploy_id))

    async def first(self, environment: str, service: str) -> str | None:
        head = cast(list[bytes | str], await self.redis.zrange(self.keys.queue(environment, service), 0, 0))
        return text(head[0]) if head else None
