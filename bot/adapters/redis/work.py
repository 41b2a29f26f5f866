"""The handoff between processes: a Redis Stream read through one consumer group.

An entry taken by a worker sits in the group's pending list, under that worker's name,
until the worker acknowledges it; so work survives the death of the worker that took
it. Live workers `keep` their entries (XCLAIM to themselves, which resets the idle
time), so an entry idle for longer than a few heartbeats belongs to a dead worker and
any other worker may `reclaim` it (XAUTOCLAIM). Done entries are acknowledged and
deleted together, so the stream holds only work not yet done. What could still pile up is
trimmed by bot/runtime/gc.py: entries older than a day (work whose worker died and that nobody
acknowledged: XTRIM MINID; a reclaim of one returns it as deleted, and is acknowledged), and
the group's consumers of dead workers (each worker process has its own name), once idle and
holding nothing (XGROUP DELCONSUMER).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from redis.asyncio import Redis
from redis.asyncio.cluster import RedisCluster
from redis.exceptions import ResponseError

from bot.adapters.redis.keys import Keys
from bot.adapters.redis.replies import text
from bot.runtime.ports import Work

GROUP = "workers"


class RedisWorkQueue:
    def __init__(self, redis: Redis, keys: Keys | None = None) -> None:
        self.redis = redis
        self.keys = keys or Keys()
        self.stream = self.keys.work()
        self._cursor: bytes | str = "0-0"

    async def push(self, thread_id: str) -> None:
        await self.redis.xadd(self.stream, {"thread": thread_id})

    def shares(self, redis: Redis) -> bool:
        """Whether a script on `redis` may push to this queue's stream itself, behind what it
        writes (ThreadStore.create with a handoff): the same client, and not a cluster (where
        the stream is in another slot)."""
        return redis is self.redis and not isinstance(redis, RedisCluster)

    async def take(self, worker: str, count: int, block_ms: int, done: Sequence[str] = ()) -> list[Work]:
        if done:  # one round trip: acknowledge and delete what is done, then read
            reply = await self._grouped(lambda: self._done_then_read(worker, count, block_ms, done))
        else:
            reply = await self._grouped(
                lambda: self.redis.xreadgroup(GROUP, worker, {self.stream: ">"}, count=count, block=block_ms)
            )
        return [w for _, entries in reply or [] for w in self._works(entries)]

    async def _done_then_read(self, worker: str, count: int, block_ms: int, done: Sequence[str]) -> Any:
        """XACK, XDEL, XREADGROUP as one pipeline on the stream's one slot; a NOGROUP of the
        read is raised (so `_grouped` creates the group), after the acknowledgement ran."""
        async with self.redis.pipeline(transaction=False) as pipe:
            pipe.xack(self.stream, GROUP, *done)
            pipe.xdel(self.stream, *done)
            pipe.xreadgroup(GROUP, worker, {self.stream: ">"}, count=count, block=block_ms)
            replies = await pipe.execute(raise_on_error=False)
        for reply in replies:
            if isinstance(reply, Exception):
                raise reply
        return replies[2]

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

    async def trim(self, older_than_ms: int, dry_run: bool = False) -> int:
        minid = f"{int(time.time() * 1000) - older_than_ms}-0"
        if dry_run:
            return len(await self.redis.xrange(self.stream, "-", f"({minid}", count=100_000) or [])
        return int(await self.redis.xtrim(self.stream, minid=minid, approximate=False))

    async def drop_dead(self, idle_ms: int, dry_run: bool = False) -> list[str]:
        try:
            consumers = await self.redis.xinfo_consumers(self.stream, GROUP)
        except ResponseError as e:  # no stream or group yet: nobody to forget
            if "NOGROUP" in str(e) or "no such key" in str(e):
                return []
            raise
        dead = [text(c["name"]) for c in consumers if int(c["pending"]) == 0 and int(c["idle"]) > idle_ms]
        if not dry_run:
            for name in dead:
                await self.redis.xgroup_delconsumer(self.stream, GROUP, name)
        return dead

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
