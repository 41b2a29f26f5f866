"""A running deploy's output in Redis (bot.runtime.ports.LiveOutput): a list per deploy,
trimmed to its newest lines and expiring a day after the last one, written in one pipeline
a batch of lines (the worker batches them: one round trip per half second at most)."""

from __future__ import annotations

from collections.abc import Sequence

from redis.asyncio import Redis

from bot.adapters.redis.keys import Keys
from bot.runtime.ports.output import LINE_CHARS, LIVE_LINES, LIVE_SECONDS


class RedisLiveOutput:
    def __init__(self, redis: Redis, keys: Keys | None = None) -> None:
        self.redis, self.keys = redis, keys or Keys()

    async def append(self, deploy_id: str, lines: Sequence[str]) -> None:
        if not lines:
            return
        key = self.keys.live_output(deploy_id)
        async with self.redis.pipeline(transaction=False) as pipe:
            pipe.rpush(key, *(line[:LINE_CHARS] for line in lines[-LIVE_LINES:]))
            pipe.ltrim(key, -LIVE_LINES, -1)
            pipe.expire(key, LIVE_SECONDS)
            await pipe.execute()

    async def tail(self, deploy_id: str) -> list[str]:
        found = await self.redis.lrange(self.keys.live_output(deploy_id), 0, -1)
        return [line.decode(errors="replace") if isinstance(line, bytes) else line for line in found]
