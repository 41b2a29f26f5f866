"""The handoff between processes: a Redis Stream read through one consumer group.

An entry taken by a worker sits in the group's pending list, under that worker's name,
until the worker acknowledges it; so work survives the death of the worker that took
it. Live workers `keep` their entries (XCLAIM to themselves, which resets the idle
time), so an entry idle for longer than a few heartbeats belongs to a dead worker and
any other worker may `reclaim` it (XAUTOCLAIM). Done entries are acknowledged and
deleted together, so the stream holds only work not yet done.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from redis.asyncio import Redis
from redis.exceptions import ResponseError

from bot.ports import Work
from bot.stores.keys import Keys
from bot.stores.replies import text

GROUP = "workers"


class RedisWorkQueue:
    def __init__(self, redis: Redis, keys: Keys | None = None) -> None:
        self.redis = redis
        self.keys = keys or Keys()
        self.stream = self.keys.work()
        self._cursor: bytes | str = "0-0"

    async def push(self, thread_id: str) -> None:
        await self.redis.xadd(self.stream, {"thread": thread_id})

    async def take(self, worker: str, count: int, block_ms: int) -> list[Work]:
        reply = await self._grouped(
            lambda: self.redis.xreadgroup(GROUP, worker, {self.stream: ">"}, count=count, block=block_ms)
        )
        return [w for _, entries in reply or [] for w in self._works(entries)]

    async def reclaim(self, worker: str, min_idle_ms: int, count: int) -> list[Work]:
        reply = await self._grouped(
            lambda: self.redis.xautoclaim(
                self.stream, GROUP, worker, min_idle_ms, self._cursor, count=count
            )
        )
        if not reply:
            return []
        # The cursor walks the pending list a page at a time and comes back to 0-0 at its end.
        self._cursor, entries = reply[0], reply[1]
        # Deleted under us: nothing to run (Redis 6.2 returns them with no id, 7+ drops them).
        gone = [entry for entry, fields in entries if entry and not fields]
        if gone:
            await self.done(gone)
        return self._works(entries)

    async def keep(self, worker: str, entries: Sequence[str]) -> None:
        if entries:
            await self.redis.xclaim(self.stream, GROUP, worker, 0, list(entries), justid=True)

    async def done(self, entries: Sequence[str]) -> None:
        if not entries:
            return
        async with self.redis.pipeline(transaction=False) as pipe:
            pipe.xack(self.stream, GROUP, *entries)
            pipe.xdel(self.stream, *entries)
            await pipe.execute()

    async def backlog(self) -> int:
        return int(await self.redis.xlen(self.stream))

    async def turn(self, chore: str, seconds: int) -> bool:
        return bool(await self.redis.set(self.keys.turn(chore), "1", nx=True, ex=seconds))

    async def _grouped(self, command: Any) -> Any:
        """Run a group command, creating the group first if it is missing (a new or flushed
        server). Id 0: work pushed before any worker started is not skipped."""
        try:
            return await command()
        except ResponseError as e:
            if "NOGROUP" not in str(e):
                raise
        try:
            await self.redis.xgroup_create(self.stream, GROUP, id="0", mkstream=True)
        except ResponseError as e:
            if "BUSYGROUP" not in str(e):  # another worker created it first
                raise
        return await command()

    @staticmethod
    def _works(entries: list[Any]) -> list[Work]:
        return [
            Work(text(entry), text(fields[b"thread"]))
            for entry, fields in entries
            if fields and b"thread" in fields
        ]
