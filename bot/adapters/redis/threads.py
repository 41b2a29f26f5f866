"""Threads in Redis: one list of JSON events per thread, appended with compare-and-set.

The list length is the thread's version. Appending is O(1), one round trip, and never
rewrites history; a writer that read an older version gets a Conflict, re-reads what it
missed (`LRANGE key version -1`, also O(new events)) and decides again.

Creating a thread and appending to it WAIT for a replica when given `replicas` and the
master has one (bot/adapters/redis/replicas.py), in the same round trip: a decision,
`deploy_started` or a deploy's result acknowledged here survives a failover.

The status index (keys `{threads}:...`, one slot): a hash, thread id -> "<version> <status>",
and a sorted set per status, thread id -> when it entered that status. create(), finish()
and release() update it in the same round trip as the thread's own script: inside that
script on one server; on a cluster, where it is another slot, as a separate command beside
it in a pipeline, sent after the thread's. An update carrying an older version than the
hash holds is ignored, so updates that arrive out of order never move a thread back. What
can leave it behind for a while: a person's append (the service indexes right after it,
then kicks a run, whose release indexes again), or a process dying between a thread's
script and the index update on a cluster; the sweep of active threads repairs whatever it
finds behind (bot/runtime/worker.py), and gc never removes a thread whose stored version
is not the one indexed (bot/runtime/gc.py).

A compacted thread (bot/adapters/redis/packing.py) is one `packed` key instead of `meta` and
`events`; load and claim unpack it, and an append first expands it back into a list, in one
script, so the list length is the version again.

The Lua scripts are thread_scripts.py's.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Sequence
from typing import Any, cast

from redis.asyncio import Redis
from redis.asyncio.cluster import RedisCluster
from redis.exceptions import OutOfMemoryError

from bot.adapters.redis import cursors, eviction, packing, scripts
from bot.adapters.redis import thread_scripts as lua
from bot.adapters.redis.keys import Keys
from bot.adapters.redis.replicas import Replicas
from bot.adapters.redis.replies import text
from bot.adapters.redis.work import RedisWorkQueue
from bot.core import events as ev
from bot.core.events import Event, new_id
from bot.core.thread import FINISHED, STATUSES, Origin, Thread
from bot.runtime.ports import Conflict, LeaseLost, Removal, ThreadExists, ThreadNotFound, Unsafe, WorkQueue
from bot.runtime.retry import retrying

log = logging.getLogger(__name__)


def encode_cursor(score: float, member: str) -> str:
    return cursors.pack(score, member)


def decode_cursor(cursor: str) -> tuple[float, str]:
    """ValueError unless it is a cursor encode_cursor made."""
    score, member = cursors.unpack(cursor)
    if isinstance(score, bool) or not isinstance(score, int | float) or not isinstance(member, str):
        raise ValueError(cursors.NOT_A_CURSOR)
    try:
        value = float(score)
    except OverflowError as e:  # a 300-digit integer
        raise ValueError(cursors.NOT_A_CURSOR) from e
    if not math.isfinite(value):  # NaN or infinity: Redis refuses them as scores
        raise ValueError(cursors.NOT_A_CURSOR)
    return value, member


def page_of(entries: list[tuple[float, str]], limit: int) -> tuple[list[str], str | None]:
    """Entries newest first (at most limit + 1 of them) -> the page and the next cursor."""
    shown = entries[:limit]
    more = len(entries) > limit and shown
    return [m for _, m in shown], encode_cursor(*shown[-1]) if more else None


Scored = list[tuple[bytes, float]]  # a sorted set's reply WITHSCORES
FACT_ATTEMPTS = 50  # each one lost a race to another writer; re-read and append at once


class RedisThreadStore:
    def __init__(self, redis: Redis, keys: Keys | None = None, replicas: Replicas | None = None) -> None:
        self.redis = redis
        self.keys = keys or Keys()
        self.replicas = replicas  # None: writes never WAIT (no replicas, or a cluster)
        self.one_server = not isinstance(redis, RedisCluster)  # every key in reach of one script
        self._index_key_list = [self.keys.indexed(), self.keys.to_compact(),
                                *(self.keys.by_status(s) for s in STATUSES)]

    async def create(
        self, origin: Origin, events: Sequence[Event], thread_id: str | None = None,
        handoff: WorkQueue | None = None,
    ) -> Thread:
        if not events:
            raise ValueError("a thread starts with at least one event")
        thread_id = thread_id or new_id()
        now = time.time()
        thread = Thread(thread_id, tuple(events), origin)
        keys = [self.keys.meta(thread_id), self.keys.events(thread_id), self.keys.packed(thread_id)]
        args: list[float | str] = [now, origin.dump(), *(ev.dump(e) for e in events)]
        # One round trip: on one server, one script; on a cluster, a pipeline of the slots'.
        # The handoff goes in it when it is this server's stream; else it is pushed after.
        along = handoff if isinstance(handoff, RedisWorkQueue) and handoff.shares(self.redis) else None
        if self.one_server:
            created = await self._create_here(thread, now, keys, args, along)
        else:
            created = await self._create_beside(thread, now, keys, args)
        if not created:
            existing = await self.load(thread_id)
            await self.index(existing)  # ours went to the index with the thread that was there
            if await self._landed(thread_id, 0, events):
                thread = existing
            else:
                raise ThreadExists(thread_id)
        if handoff is not None and along is None:
            await handoff.push(thread_id)
        return thread

    async def _create_here(
        self, thread: Thread, now: float, keys: list[str], args: list[float | str], along: RedisWorkQueue | None,
    ) -> Any:
        """One script: the thread, both indexes and the handoff (when it goes to this server's
        stream), and WAIT for a replica in the same round trip when there is one."""
        index = lua.index_args(thread.id, thread.version, thread.status(), now)
        stream = along.stream if along is not None else self.keys.work()
        all_keys = [*keys, self.keys.recent(), stream, *self._index_keys()]
        all_args = [*index, "1" if along is not None else "0", *args]
        return await self._written(lua.CREATE_HERE, all_keys, all_args, f"thread {thread.id}: creating it")

    async def _create_beside(self, thread: Thread, now: float, keys: list[str], args: list[float | str]) -> Any:
        """On a cluster: the thread's keys in one script (one slot), the recency and status
        indexes beside it in the same pipeline (not a transaction: other slots). The handoff
        is pushed after (a cluster's pipeline could land it first)."""
        async with self.redis.pipeline(transaction=False) as pipe:
            pipe.eval(lua.CREATE, len(keys), *keys, *args)
            pipe.zadd(self.keys.recent(), {thread.id: now}, nx=True)
            self._index_in(pipe, thread, now)
            created, _, _ = await pipe.execute()
        return created

    async def load(self, thread_id: str) -> Thread:
        async with self.redis.pipeline(transaction=True) as pipe:
            pipe.hget(self.keys.meta(thread_id), "origin")
            pipe.lrange(self.keys.events(thread_id), 0, -1)
            pipe.get(self.keys.packed(thread_id))
            origin, raw, packed = await pipe.execute()
        if origin is None:
            if packed is None:
                raise ThreadNotFound(thread_id)
            return self._unpacked(thread_id, packed)
        return Thread(thread_id, tuple(ev.load(r) for r in raw), Origin.model_validate_json(origin))

    @staticmethod
    def _unpacked(thread_id: str, packed: bytes) -> Thread:
        _, origin, raw = packing.unpack(packed)
        return Thread(thread_id, tuple(ev.load(r) for r in raw), Origin.model_validate_json(origin))

    async def refresh(self, thread: Thread) -> Thread:
        # A compacted thread has an empty list, and nothing new: it is expanded before an append.
        raw = await self.redis.lrange(self.keys.events(thread.id), thread.version, -1)
        return thread.extended([ev.load(r) for r in raw])

    async def append(self, thread: Thread, events: Sequence[Event], holder: str | None = None) -> Thread:
        if not events:
            return thread
        keys = [self.keys.events(thread.id), self.keys.lease(thread.id), self.keys.packed(thread.id)]
        args = (thread.version, holder or "", *(ev.dump(e) for e in events))
        return await self._appending(lua.APPEND, keys, args, thread, events)

    async def finish(self, thread: Thread, events: Sequence[Event], owner: str) -> Thread:
        if not events or not self.one_server:
            return await self.release(await self.append(thread, events, owner), owner)
        final = thread.extended(events)
        keys = [self.keys.events(thread.id), self.keys.lease(thread.id), self.keys.packed(thread.id),
                self.keys.recent(), *self._index_keys()]
        args = (*lua.index_args(thread.id, final.version, final.status(), time.time()),
                thread.version, owner, *(ev.dump(e) for e in events))
        # Nothing can be appended between the append and the release (one script): the
        # thread as let go is `final`, as `_appending` returns it.
        return await self._appending(lua.FINISH_HERE, keys, args, thread, events)

    async def _appending(
        self, source: str, keys: list[str], args: Sequence[Any], thread: Thread, events: Sequence[Event]
    ) -> Thread:
        """Run an appending script (APPEND's replies), WAITing for a replica in the same round
        trip when there is one; a compacted thread is expanded, then appended to."""
        for _ in range(3):
            version = await self._written(source, keys, args, f"thread {thread.id}: appending {events[0].type}")
            if not isinstance(version, bytes | str):
                break
            await self._expand(thread.id)
        else:
            raise RuntimeError(f"thread {thread.id}: compacted again while appending, three times")
        if version == -1:
            raise ThreadNotFound(thread.id)
        if version == 0:
            raise LeaseLost(thread.id)
        if version < -1:
            if await self._landed(thread.id, thread.version, events):
                return await self.refresh(thread)
            raise Conflict(thread.id, thread.version, -2 - version)
        return thread.extended(events)

    async def _expand(self, thread_id: str) -> None:
        """A compacted thread back into its list, as it was (nothing if that happened already)."""
        packed = cast(bytes | None, await self.redis.get(self.keys.packed(thread_id)))
        if packed is None:
            return
        created, origin, raw = packing.unpack(packed)
        keys = [self.keys.packed(thread_id), self.keys.meta(thread_id), self.keys.events(thread_id)]
        await self._script(lua.EXPAND, keys, packed, created, origin, *raw)

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

    async def _written(self, source: str, keys: list[str], args: Sequence[Any], what: str) -> Any:
        """A script that records events: it WAITs for a replica in the same round trip when
        there is one (Replicas.script)."""
        if self.replicas:
            return await self.replicas.script(source, keys, *args, what=what)
        return await self._script(source, keys, *args)

    async def _script(self, source: str, keys: list[str], *args: object) -> Any:
        return await scripts.run(self.redis, source, keys, *args)

    async def lease(self, thread_id: str, owner: str, ttl_ms: int) -> bool:
        return bool(await self._script(lua.LEASE, [self.keys.lease(thread_id)], owner, ttl_ms))

    async def claim(self, thread_id: str, owner: str, ttl_ms: int) -> Thread | None:
        keys = [self.keys.lease(thread_id), self.keys.meta(thread_id), self.keys.events(thread_id),
                self.keys.packed(thread_id)]
        reply = await self._script(lua.CLAIM, keys, owner, ttl_ms)
        if reply[0] == -1:
            raise ThreadNotFound(thread_id)
        if reply[0] == 0:
            return None
        if reply[0] == 2:
            return self._unpacked(thread_id, reply[1])
        return Thread(thread_id, tuple(ev.load(r) for r in reply[2:]), Origin.model_validate_json(reply[1]))

    async def release(self, thread: Thread, owner: str) -> Thread:
        """One round trip: the script (one slot), and the recency and status indexes beside
        it; on one server, all three in one script. The status indexed is `thread`'s: if more
        was appended meanwhile, the caller runs the thread again and releases it again."""
        now = time.time()
        if self.one_server:
            keys = [self.keys.lease(thread.id), self.keys.events(thread.id), self.keys.recent(), *self._index_keys()]
            index = lua.index_args(thread.id, thread.version, thread.status(), now)
            raw = await self._script(lua.RELEASE_HERE, keys, *index, owner)
        else:
            raw = await self._release_beside(thread, owner, now)
        return thread.extended([ev.load(r) for r in raw])

    async def _release_beside(self, thread: Thread, owner: str, now: float) -> Any:
        """On a cluster: EVAL, not EVALSHA (redis-py's cluster pipeline refuses EVALSHA, and
        these scripts are short)."""
        keys = [self.keys.lease(thread.id), self.keys.events(thread.id)]
        async with self.redis.pipeline(transaction=False) as pipe:
            pipe.eval(lua.RELEASE, len(keys), *keys, owner, thread.version)
            pipe.zadd(self.keys.recent(), {thread.id: now}, xx=True)
            self._index_in(pipe, thread, now)
            raw, _, _ = await pipe.execute(raise_on_error=False)
        if isinstance(raw, Exception):
            raise raw
        return raw

    async def recent(self, limit: int) -> list[str]:
        # Members only: redis-py's declared reply type also covers WITHSCORES pairs.
        ids = cast(list[bytes | str], await self.redis.zrevrange(self.keys.recent(), 0, limit - 1))
        return [text(i) for i in ids]

    # --- the status index -------------------------------------------------------------------

    def _index_keys(self) -> list[str]:
        return self._index_key_list

    def _index_in(self, pipe: Any, thread: Thread, now: float) -> None:
        keys = self._index_keys()
        pipe.eval(lua.INDEX, len(keys), *keys, *lua.index_args(thread.id, thread.version, thread.status(), now))

    async def index(self, thread: Thread) -> None:
        args = lua.index_args(thread.id, thread.version, thread.status(), time.time())
        await self._script(lua.INDEX, self._index_keys(), *args)

    async def listed(
        self, statuses: Sequence[str] | None, limit: int, cursor: str | None = None
    ) -> tuple[list[str], str | None]:
        after = decode_cursor(cursor) if cursor else None
        keys = [self.keys.recent()] if statuses is None else [self.keys.by_status(s) for s in dict.fromkeys(statuses)]
        found: dict[str, float] = {}
        for key in keys:
            for score, member in await self._after(key, after, limit + 1):
                found[member] = max(score, found.get(member, score))
        entries = sorted(((score, member) for member, score in found.items()), reverse=True)
        return page_of(entries[:limit + 1], limit)

    async def _after(self, key: str, after: tuple[float, str] | None, count: int) -> list[tuple[float, str]]:
        """Up to `count` members of the sorted set after the cursor, newest first (members of
        one score in reverse order, as ZREVRANGEBYSCORE gives them)."""
        top = "+inf" if after is None else repr(after[0])
        out: list[tuple[float, str]] = []
        offset, batch = 0, count + 8
        while True:
            got = cast(Scored, await self.redis.zrevrangebyscore(key, top, "-inf", start=offset, num=batch,
                                                                  withscores=True))
            for member, score in got:
                m = text(member)
                if after is not None and score == after[0] and m >= after[1]:
                    continue  # at or before the cursor, among those of its score
                out.append((float(score), m))
            if len(out) >= count or len(got) < batch:
                return out[:count]
            offset += len(got)

    # --- retention (bot/runtime/gc.py) --------------------------------------------------------------

    async def finished(self, older_than: float, limit: int) -> list[tuple[str, int]]:
        before = time.time() - older_than
        entries: list[tuple[float, str]] = []
        for status in FINISHED:
            got = cast(Scored, await self.redis.zrangebyscore(self.keys.by_status(status), "-inf", repr(before),
                                                              start=0, num=limit, withscores=True))
            entries += [(float(score), text(member)) for member, score in got]
        ids = [m for _, m in sorted(entries)[:limit]]
        if not ids:
            return []
        indexed = await self.redis.hmget(self.keys.indexed(), ids)
        return [(i, int(text(v).split(" ", 1)[0])) for i, v in zip(ids, indexed, strict=True) if v is not None]

    async def remove(self, thread_id: str, version: int) -> Removal:
        keys = self.keys.thread_keys(thread_id)
        outcome = text(await self._script(lua.REMOVE, keys, version))
        if outcome == "kept":  # it moved on (the index may not know yet) or a run holds it
            try:
                await self.index(await self.load(thread_id))
            except ThreadNotFound:
                pass
        return cast(Removal, outcome)

    async def unindex(self, thread_id: str) -> None:
        keys = self._index_keys()
        async with self.redis.pipeline(transaction=False) as pipe:
            pipe.eval(lua.UNINDEX, len(keys), *keys, thread_id)
            pipe.zrem(self.keys.recent(), thread_id)
            await pipe.execute()

    async def compactable(self, older_than: float, limit: int) -> list[str]:
        before = time.time() - older_than
        got = cast(list[bytes], await self.redis.zrangebyscore(self.keys.to_compact(), "-inf", repr(before),
                                                               start=0, num=limit))
        return [text(m) for m in got]

    async def compact(self, thread_id: str) -> bool:
        async with self.redis.pipeline(transaction=True) as pipe:
            pipe.hget(self.keys.meta(thread_id), "created")
            pipe.hget(self.keys.meta(thread_id), "origin")
            pipe.lrange(self.keys.events(thread_id), 0, -1)
            created, origin, raw = await pipe.execute()
        if origin is None or not raw:  # compacted already, or gone
            await self.redis.zrem(self.keys.to_compact(), thread_id)
            return False
        thread = Thread(thread_id, tuple(ev.load(r) for r in raw), Origin.model_validate_json(origin))
        if thread.status() not in FINISHED:  # the index was behind: it takes it off the list
            await self.index(thread)
            return False
        blob = packing.pack(text(created or b"0"), text(origin), [text(r) for r in raw])
        keys = self.keys.thread_keys(thread_id)
        if not await self._script(lua.COMPACT, keys, len(raw), blob):
            return False  # moved on meanwhile, or a run holds it: another time
        await self.redis.zrem(self.keys.to_compact(), thread_id)
        return True

    async def ping(self) -> None:
        """Raise if Redis is unreachable, or full: at its maxmemory it refuses every write
        (OutOfMemoryError), which is an outage too though PING still answers; or Unsafe: it
        may evict keys (read each time: a Redis restarted or failed over with another
        configuration is met only after the start, where the policy was first checked)."""
        await self.redis.ping()
        if full(await self.redis.info("memory")):
            raise OutOfMemoryError("Redis is at its maxmemory: writes are refused")
        evicting, _ = await eviction.problem(self.redis)
        if evicting:
            raise Unsafe(evicting)


def full(info: dict[str, Any]) -> bool:
    """Whether an INFO memory answer (or a cluster's, one per node) says used_memory has
    reached maxmemory on some node (0: no limit)."""
    nodes = [info] if "used_memory" in info else [v for v in info.values() if isinstance(v, dict)]
    return any(int(n.get("maxmemory", 0) or 0) and int(n.get("used_memory", 0)) >= int(n["maxmemory"])
               for n in nodes)
