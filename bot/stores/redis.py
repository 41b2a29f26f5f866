"""Threads in Redis: one list of JSON events per thread, appended with compare-and-set.

The list length is the thread's version. Appending is O(1), one round trip, and never
rewrites history;
a writer that read an older version gets a Conflict, re-reads what it missed
(`LRANGE key version -1`, also O(new events)) and decides again.

Creating a thread and appending to it WAIT for a replica when given `replicas` and the
master has one (bot/stores/replicas.py), in the same round trip: a decision,
`deploy_started` or a deploy's result acknowledged here survives a failover.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from typing import Any, cast

from redis.asyncio import Redis

from bot import events as ev
from bot.events import Event, new_id
from bot.ports import Conflict, LeaseLost, ThreadExists, ThreadNotFound
from bot.retry import retrying
from bot.stores import scripts
from bot.stores.keys import Keys
from bot.stores.replicas import Replicas
from bot.stores.replies import text
from bot.thread import Origin, Thread

log = logging.getLogger(__name__)

# KEYS: events, lease. ARGV: expected version, the run appending ('' for people, who need no
# lease), then the events to append. Every thread is created with its first event, so an
# empty list means an unknown thread. Returns the new version; -1 for an unknown thread;
# -2 - actual_version on a lost race; 0 when another run holds the thread's lease (a run
# whose lease lapsed must not decide anything any more).
_APPEND = """
local n = redis.call('LLEN', KEYS[1])
if n == 0 then return -1 end
if n ~= tonumber(ARGV[1]) then return -2 - n end
if ARGV[2] ~= '' then
  local holder = redis.call('GET', KEYS[2])
  if holder and holder ~= ARGV[2] then return 0 end
end
return redis.call('RPUSH', KEYS[1], unpack(ARGV, 3))
"""


# KEYS: meta, events. ARGV: created-at, origin JSON, then the first events.
# Returns 1, or 0 when the id is taken (nothing is written then).
_CREATE = """
if redis.call('HSETNX', KEYS[1], 'created', ARGV[1]) == 0 then return 0 end
redis.call('HSET', KEYS[1], 'origin', ARGV[2])
redis.call('RPUSH', KEYS[2], unpack(ARGV, 3))
return 1
"""


# KEYS: lease. ARGV: owner, ttl in ms. Take a free lease or extend our own.
_LEASE = """
local holder = redis.call('GET', KEYS[1])
if holder and holder ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return 1
"""
# KEYS: lease, meta, events. ARGV: owner, ttl in ms. The lease and the thread in one round
# trip: {1, origin, events...}, {0} when another runner holds it, {-1} for an unknown thread.
_CLAIM = """
local holder = redis.call('GET', KEYS[1])
if holder and holder ~= ARGV[1] then return {0} end
local origin = redis.call('HGET', KEYS[2], 'origin')
if not origin then return {-1} end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
local out = redis.call('LRANGE', KEYS[3], 0, -1)
table.insert(out, 1, origin)
table.insert(out, 1, 1)
return out
"""
# KEYS: lease, events. ARGV: owner, version. Let go, and return what was appended after
# `version` meanwhile (by a writer that could not run the thread while we held it).
_RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('DEL', KEYS[1]) end
return redis.call('LRANGE', KEYS[2], tonumber(ARGV[2]), -1)
"""


FACT_ATTEMPTS = 50  # each one lost a race to another writer; re-read and append at once


class RedisThreadStore:
    def __init__(self, redis: Redis, keys: Keys | None = None, replicas: Replicas | None = None) -> None:
        self.redis = redis
        self.keys = keys or Keys()
        self.replicas = replicas  # None: writes never WAIT (no replicas, or a cluster)

    async def create(
        self, origin: Origin, events: Sequence[Event], thread_id: str | None = None
    ) -> Thread:
        if not events:
            raise ValueError("a thread starts with at least one event")
        thread_id = thread_id or new_id()
        now = time.time()
        keys = [self.keys.meta(thread_id), self.keys.events(thread_id)]
        args: list[float | str] = [now, origin.dump(), *(ev.dump(e) for e in events)]
        # One round trip: the thread's keys in one script (one cluster slot), the global
        # recency index beside it in the same pipeline (not a transaction: another slot),
        # then WAIT for a replica when there is one.
        wait_ms = await self.replicas.timeout_ms() if self.replicas else 0
        async with self.redis.pipeline(transaction=False) as pipe:
            pipe.eval(_CREATE, len(keys), *keys, *args)
            pipe.zadd(self.keys.recent(), {thread_id: now}, nx=True)
            if wait_ms:
                pipe.wait(1, wait_ms)
            created, _, *acked = await pipe.execute()
        if self.replicas and acked:
            self.replicas.acked(acked[0], f"thread {thread_id}: creating it")
        if not created:
            if await self._landed(thread_id, 0, events):
                return await self.load(thread_id)
            raise ThreadExists(thread_id)
        return Thread(thread_id, tuple(events), origin)

    async def load(self, thread_id: str) -> Thread:
        async with self.redis.pipeline(transaction=True) as pipe:
            pipe.hget(self.keys.meta(thread_id), "origin")
            pipe.lrange(self.keys.events(thread_id), 0, -1)
            origin, raw = await pipe.execute()
        if origin is None:
            raise ThreadNotFound(thread_id)
        return Thread(thread_id, tuple(ev.load(r) for r in raw), Origin.model_validate_json(origin))

    async def refresh(self, thread: Thread) -> Thread:
        raw = await self.redis.lrange(self.keys.events(thread.id), thread.version, -1)
        return thread.extended([ev.load(r) for r in raw])

    async def append(self, thread: Thread, events: Sequence[Event], holder: str | None = None) -> Thread:
        if not events:
            return thread
        keys = [self.keys.events(thread.id), self.keys.lease(thread.id)]
        args = (thread.version, holder or "", *(ev.dump(e) for e in events))
        if self.replicas:  # WAITs for a replica in the same round trip, when there is one
            version = await self.replicas.script(
                _APPEND, keys, *args, what=f"thread {thread.id}: appending {events[0].type}"
            )
        else:
            version = await self._script(_APPEND, keys, *args)
        if version == -1:
            raise ThreadNotFound(thread.id)
        if version == 0:
            raise LeaseLost(thread.id)
        if version < -1:
            if await self._landed(thread.id, thread.version, events):
                return await self.refresh(thread)
            raise Conflict(thread.id, thread.version, -2 - version)
        return thread.extended(events)

    async def _landed(self, thread_id: str, version: int, events: Sequence[Event]) -> bool:
        """Did these events land already? redis-py resends a command whose connection broke
        (a Redis restart), and the first send may have run: then the "conflict" is our own
        write, and appending again would record everything twice."""
        first = await self.redis.lindex(self.keys.events(thread_id), version)
        return first is not None and ev.load(first).id == events[0].id

    async def append_fact(self, thread: Thread, events: Sequence[Event]) -> Thread:
        what = f"thread {thread.id}: appending {events[0].type if events else 'nothing'}"
        try:
            async for attempt in retrying([0] * (FACT_ATTEMPTS - 1), (Conflict,), what, log, logging.DEBUG):
                with attempt:
                    if attempt.retry_state.attempt_number > 1:
                        thread = await self.refresh(thread)  # take in what beat us, then append
                    return await self.append(thread, events)
        except Conflict as e:
            raise RuntimeError(f"thread {thread.id}: could not append after {FACT_ATTEMPTS} conflicts") from e
        raise AssertionError("unreachable: retrying returns or raises")

    async def _script(self, source: str, keys: list[str], *args: object) -> Any:
        return await scripts.run(self.redis, source, keys, *args)

    async def lease(self, thread_id: str, owner: str, ttl_ms: int) -> bool:
        return bool(await self._script(_LEASE, [self.keys.lease(thread_id)], owner, ttl_ms))

    async def claim(self, thread_id: str, owner: str, ttl_ms: int) -> Thread | None:
        keys = [self.keys.lease(thread_id), self.keys.meta(thread_id), self.keys.events(thread_id)]
        reply = await self._script(_CLAIM, keys, owner, ttl_ms)
        if reply[0] == -1:
            raise ThreadNotFound(thread_id)
        if reply[0] == 0:
            return None
        return Thread(thread_id, tuple(ev.load(r) for r in reply[2:]), Origin.model_validate_json(reply[1]))

    async def release(self, thread: Thread, owner: str) -> Thread:
        """One round trip: the script (one slot) and the recency index beside it. EVAL, not
        EVALSHA: redis-py's cluster pipeline refuses EVALSHA, and this script is short."""
        keys = [self.keys.lease(thread.id), self.keys.events(thread.id)]
        async with self.redis.pipeline(transaction=False) as pipe:
            pipe.eval(_RELEASE, len(keys), *keys, owner, thread.version)
            pipe.zadd(self.keys.recent(), {thread.id: time.time()}, xx=True)
            raw, _ = await pipe.execute(raise_on_error=False)
        if isinstance(raw, Exception):
            raise raw
        return thread.extended([ev.load(r) for r in raw])

    async def recent(self, limit: int) -> list[str]:
        # Members only: redis-py's declared reply type also covers WITHSCORES pairs.
        ids = cast(list[bytes | str], await self.redis.zrevrange(self.keys.recent(), 0, limit - 1))
        return [text(i) for i in ids]

    async def ping(self) -> None:
        await self.redis.ping()
