"""Threads in Redis: one list of JSON events per thread, appended with compare-and-set.

The list length is the thread's version. Appending is O(1), one round trip, and never
rewrites history;
a writer that read an older version gets a Conflict, re-reads what it missed
(`LRANGE key version -1`, also O(new events)) and decides again.
"""

from __future__ import annotations

import hashlib
import json
import time
from typing import Any, Sequence

from redis.asyncio import Redis
from redis.exceptions import NoScriptError

from bot import events as ev
from bot.events import Event, new_id
from bot.ports import Conflict, LeaseLost, ThreadExists, ThreadNotFound
from bot.stores.keys import Keys
from bot.thread import Thread

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


# KEYS: delivery marker, conversation. ARGV: marker TTL, the id for a new thread ('' when
# this message may not start one), a token for this call. Returns {fresh, thread id or '',
# started}; a repeated delivery gets the conversation's thread too, so it can be handed to a
# worker again. The marker holds the token: a call resent after a broken connection (its
# first send may have run) finds its own token and is still fresh, not a repeat.
_RECEIVE = """
local bound = redis.call('GET', KEYS[2])
if not redis.call('SET', KEYS[1], ARGV[3], 'NX', 'EX', ARGV[1]) then
  local ours = redis.call('GET', KEYS[1]) == ARGV[3]
  if ours then return {1, bound or '', (bound and bound == ARGV[2]) and 1 or 0} end
  return {0, bound or '', 0}
end
if bound then return {1, bound, 0} end
if ARGV[2] == '' then return {1, '', 0} end
redis.call('SET', KEYS[2], ARGV[2])
return {1, ARGV[2], 1}
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


FACT_ATTEMPTS = 50
_SHAS: dict[str, str] = {}


def _sha(source: str) -> str:
    if source not in _SHAS:
        _SHAS[source] = hashlib.sha1(source.encode()).hexdigest()
    return _SHAS[source]


class RedisThreadStore:
    def __init__(self, redis: Redis, keys: Keys | None = None) -> None:
        self.redis = redis
        self.keys = keys or Keys()

    async def create(
        self, origin: dict[str, str], events: Sequence[Event], thread_id: str | None = None
    ) -> Thread:
        if not events:
            raise ValueError("a thread starts with at least one event")
        thread_id = thread_id or new_id()
        now = time.time()
        keys = [self.keys.meta(thread_id), self.keys.events(thread_id)]
        args = [now, json.dumps(origin), *(ev.dump(e) for e in events)]
        # One round trip: the thread's keys in one script (one cluster slot), the global
        # recency index beside it in the same pipeline.
        async with self.redis.pipeline(transaction=False) as pipe:
            pipe.eval(_CREATE, len(keys), *keys, *args)
            pipe.zadd(self.keys.recent(), {thread_id: now}, nx=True)
            created, _ = await pipe.execute()
        if not created:
            if await self._landed(thread_id, 0, events):
                return await self.load(thread_id)
            raise ThreadExists(thread_id)
        return Thread(thread_id, tuple(events), dict(origin))

    async def load(self, thread_id: str) -> Thread:
        async with self.redis.pipeline(transaction=True) as pipe:
            pipe.hget(self.keys.meta(thread_id), "origin")
            pipe.lrange(self.keys.events(thread_id), 0, -1)
            origin, raw = await pipe.execute()
        if origin is None:
            raise ThreadNotFound(thread_id)
        return Thread(thread_id, tuple(ev.load(r) for r in raw), json.loads(origin))

    async def refresh(self, thread: Thread) -> Thread:
        raw = await self.redis.lrange(self.keys.events(thread.id), thread.version, -1)
        return thread.extended([ev.load(r) for r in raw])

    async def append(self, thread: Thread, events: Sequence[Event], holder: str | None = None) -> Thread:
        if not events:
            return thread
        keys = [self.keys.events(thread.id), self.keys.lease(thread.id)]
        version = await self._script(_APPEND, keys, thread.version, holder or "", *(ev.dump(e) for e in events))
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
        for _ in range(FACT_ATTEMPTS):
            try:
                return await self.append(thread, events)
            except Conflict:
                thread = await self.refresh(thread)
        raise RuntimeError(f"thread {thread.id}: could not append after {FACT_ATTEMPTS} conflicts")

    async def _script(self, source: str, keys: list[str], *args: object) -> Any:
        """One command, one round trip. EVALSHA is sent directly (redis-py's Script objects
        add a SCRIPT EXISTS round trip when pipelined, and EVAL resends the source every
        time); a server that lost its script cache (restart, failover) answers NOSCRIPT
        once and gets the script loaded again."""
        sha = _sha(source)
        try:
            return await self.redis.evalsha(sha, len(keys), *keys, *args)
        except NoScriptError:
            await self.redis.script_load(source)
            return await self.redis.evalsha(sha, len(keys), *keys, *args)

    async def lease(self, thread_id: str, owner: str, ttl_ms: int) -> bool:
        return bool(await self._script(_LEASE, [self.keys.lease(thread_id)], owner, ttl_ms))

    async def claim(self, thread_id: str, owner: str, ttl_ms: int) -> Thread | None:
        keys = [self.keys.lease(thread_id), self.keys.meta(thread_id), self.keys.events(thread_id)]
        reply = await self._script(_CLAIM, keys, owner, ttl_ms)
        if reply[0] == -1:
            raise ThreadNotFound(thread_id)
        if reply[0] == 0:
            return None
        return Thread(thread_id, tuple(ev.load(r) for r in reply[2:]), json.loads(reply[1]))

    async def release(self, thread: Thread, owner: str) -> Thread:
        """One round trip: the script (one slot) and the recency index beside it."""
        keys = [self.keys.lease(thread.id), self.keys.events(thread.id)]
        for _ in range(2):
            async with self.redis.pipeline(transaction=False) as pipe:
                pipe.evalsha(_sha(_RELEASE), len(keys), *keys, owner, thread.version)
                pipe.zadd(self.keys.recent(), {thread.id: time.time()}, xx=True)
                raw, _ = await pipe.execute(raise_on_error=False)
            if not isinstance(raw, NoScriptError):
                break
            await self.redis.script_load(_RELEASE)
        if isinstance(raw, Exception):
            raise raw
        return thread.extended([ev.load(r) for r in raw])

    async def receive(
        self, scope: str, message_id: str, ttl_seconds: int, new_thread_id: str | None
    ) -> tuple[bool, str | None, bool]:
        keys = [self.keys.delivery(scope, message_id), self.keys.conversation(scope)]
        fresh, thread_id, started = await self._script(
            _RECEIVE, keys, ttl_seconds, new_thread_id or "", new_id()
        )
        return bool(fresh), (thread_id.decode() or None), bool(started)

    async def forget(self, scope: str, message_id: str) -> None:
        await self.redis.delete(self.keys.delivery(scope, message_id))

    async def link(self, name: str, value: str) -> str:
        """Bind `name` to `value` unless it is bound already; return what it is bound to."""
        async with self.redis.pipeline(transaction=True) as pipe:
            pipe.set(self.keys.ref(name), value, nx=True)
            pipe.get(self.keys.ref(name))
            _, bound = await pipe.execute()
        return bound.decode()

    async def lookup(self, name: str) -> str | None:
        value = await self.redis.get(self.keys.ref(name))
        return value.decode() if value is not None else None

    async def recent(self, limit: int) -> list[str]:
        ids = await self.redis.zrevrange(self.keys.recent(), 0, limit - 1)
        return [i.decode() if isinstance(i, bytes) else i for i in ids]

    async def ping(self) -> None:
        await self.redis.ping()
