"""ThreadStore (with Retention and Health), as RedisThreadStore: tests/runtime/ports holds the two to
the same cases."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

from bot.core import events as ev
from bot.core.events import Event, new_id
from bot.core.thread import FINISHED, Origin, Thread
from bot.runtime.ports import Conflict, LeaseLost, Removal, ThreadExists, ThreadNotFound, WorkQueue
from bot.testing.memory.clock import Monotonic
from bot.testing.memory.server import Expiry, round_trip

FACT_ATTEMPTS = 50  # as RedisThreadStore: append_fact gives up after this many lost races


@dataclass
class _Stored:
    origin: str  # JSON, as stored: what a thread is read back as goes through the same
    events: list[str]  # serialization as in Redis, so an event that does not round-trip fails here too
    packed: bool = False  # compacted: stored otherwise in Redis, the same thread to every reader


def _cursor(position: tuple[int, str]) -> str:
    return f"m{position[0]}:{position[1]}"


def _position(cursor: str) -> tuple[int, str]:
    tick, sep, member = cursor[1:].partition(":")
    if not cursor.startswith("m") or not sep or not tick.isdigit():
        raise ValueError("not a cursor from this listing")
    return int(tick), member


class MemoryThreadStore:
    """ThreadStore: compare-and-set appends, leases that fence a run's decisions, and the
    recency index, in a dict."""

    def __init__(self, clock: Monotonic = time.monotonic) -> None:
        self.clock = clock
        self._threads: dict[str, _Stored] = {}
        self._leases = Expiry(clock)
        self._recent: dict[str, int] = {}  # thread id -> when last created or released
        self._ticks = 0
        # The status index, as RedisThreadStore's: id -> (version, status); per status, id ->
        # (when it entered it by `clock`, a tick for the order); finished and not compacted.
        self._indexed: dict[str, tuple[int, str]] = {}
        self._by_status: dict[str, dict[str, tuple[float, int]]] = {}
        self._to_compact: dict[str, float] = {}

    def _touch(self, thread_id: str) -> None:
        self._ticks += 1
        self._recent[thread_id] = self._ticks

    def _index(self, thread: Thread) -> None:
        status = thread.status()
        old = self._indexed.get(thread.id)
        if old is not None and old[0] > thread.version:
            return
        if old is not None and old[1] != status:
            self._by_status.get(old[1], {}).pop(thread.id, None)
        self._indexed[thread.id] = (thread.version, status)
        members = self._by_status.setdefault(status, {})
        if thread.id not in members:
            self._ticks += 1
            members[thread.id] = (self.clock(), self._ticks)
        if status in FINISHED:
            if old is None or old[1] not in FINISHED:
                self._to_compact.setdefault(thread.id, self.clock())
        else:
            self._to_compact.pop(thread.id, None)

    def _thread(self, thread_id: str, stored: _Stored) -> Thread:
        return Thread(
            thread_id, tuple(ev.load(raw) for raw in stored.events), Origin.model_validate_json(stored.origin)
        )

    def _landed(self, thread_id: str, version: int, events: Sequence[Event]) -> bool:
        """As RedisThreadStore: the same events at the same place are a resent write, not
        someone else's."""
        stored = self._threads.get(thread_id)
        return (
            stored is not None
            and len(stored.events) > version
            and ev.load(stored.events[version]).id == events[0].id
        )

    async def create(
        self, origin: Origin, events: Sequence[Event], thread_id: str | None = None,
        handoff: WorkQueue | None = None,
    ) -> Thread:
        if not events:
            raise ValueError("a thread starts with at least one event")
        await round_trip()
        thread_id = thread_id or new_id()
        if thread_id in self._threads:
            if not self._landed(thread_id, 0, events):
                raise ThreadExists(thread_id)
            thread = self._thread(thread_id, self._threads[thread_id])  # a resent create: still handed off
        else:
            self._threads[thread_id] = _Stored(origin.dump(), [ev.dump(e) for e in events])
            self._touch(thread_id)
            thread = Thread(thread_id, tuple(events), origin)
            self._index(thread)
        if handoff is not None:
            await handoff.push(thread_id)
        return thread

    async def load(self, thread_id: str) -> Thread:
        await round_trip()
        stored = self._threads.get(thread_id)
        if stored is None:
            raise ThreadNotFound(thread_id)
        return self._thread(thread_id, stored)

    async def refresh(self, thread: Thread) -> Thread:
        await round_trip()
        stored = self._threads.get(thread.id)
        if stored is None:
            return thread
        return thread.extended([ev.load(raw) for raw in stored.events[thread.version:]])

    async def append(self, thread: Thread, events: Sequence[Event], holder: str | None = None) -> Thread:
        if not events:
            return thread
        await round_trip()
        stored = self._threads.get(thread.id)
        if stored is None:
            raise ThreadNotFound(thread.id)
        if len(stored.events) != thread.version:
            if self._landed(thread.id, thread.version, events):
                return thread.extended([ev.load(raw) for raw in stored.events[thread.version:]])
            raise Conflict(thread.id, thread.version, len(stored.events))
        if holder:
            held = self._leases.get(thread.id)
            if held is not None and held != holder:
                raise LeaseLost(thread.id)
        stored.events.extend(ev.dump(e) for e in events)
        stored.packed = False  # expanded first, in Redis
        return thread.extended(events)

    async def append_fact(self, thread: Thread, events: Sequence[Event]) -> Thread:
        for _ in range(FACT_ATTEMPTS):
            try:
                return await self.append(thread, events)
            except Conflict:
                thread = await self.refresh(thread)
        raise RuntimeError(f"thread {thread.id}: could not append after {FACT_ATTEMPTS} conflicts")

    async def lease(self, thread_id: str, owner: str, ttl_ms: int) -> bool:
        await round_trip()
        held = self._leases.get(thread_id)
        if held is not None and held != owner:
            return False
        self._leases.set(thread_id, owner, ttl_ms / 1000)
        return True

    async def claim(self, thread_id: str, owner: str, ttl_ms: int) -> Thread | None:
        await round_trip()
        held = self._leases.get(thread_id)
        if held is not None and held != owner:
            return None
        stored = self._threads.get(thread_id)
        if stored is None:
            raise ThreadNotFound(thread_id)
        self._leases.set(thread_id, owner, ttl_ms / 1000)
        return self._thread(thread_id, stored)

    async def release(self, thread: Thread, owner: str) -> Thread:
        await round_trip()
        if self._leases.get(thread.id) == owner:
            self._leases.delete(thread.id)
        if thread.id in self._recent:
            self._touch(thread.id)
        self._index(thread)
        stored = self._threads.get(thread.id)
        if stored is None:
            return thread
        return thread.extended([ev.load(raw) for raw in stored.events[thread.version:]])

    async def finish(self, thread: Thread, events: Sequence[Event], owner: str) -> Thread:
        return await self.release(await self.append(thread, events, owner), owner)

    async def recent(self, limit: int) -> list[str]:
        await round_trip()
        newest = sorted(self._recent, key=lambda i: self._recent[i], reverse=True)
        return newest[:limit]

    async def index(self, thread: Thread) -> None:
        await round_trip()
        self._index(thread)

    async def listed(
        self, statuses: Sequence[str] | None, limit: int, cursor: str | None = None
    ) -> tuple[list[str], str | None]:
        after = _position(cursor) if cursor else None
        await round_trip()
        if statuses is None:
            entries = [(tick, i) for i, tick in self._recent.items()]
        else:
            entries = [(tick, i) for s in set(statuses) for i, (_, tick) in self._by_status.get(s, {}).items()]
        entries = sorted((e for e in entries if after is None or e < after), reverse=True)[:limit + 1]
        shown = entries[:limit]
        more = len(entries) > limit and shown
        return [i for _, i in shown], _cursor(shown[-1]) if more else None

    # --- Retention --------------------------------------------------------------------

    async def finished(self, older_than: float, limit: int) -> list[tuple[str, int]]:
        await round_trip()
        before = self.clock() - older_than
        found = sorted((at, i) for s in FINISHED for i, (at, _) in self._by_status.get(s, {}).items() if at <= before)
        return [(i, self._indexed[i][0]) for _, i in found[:limit]]

    async def remove(self, thread_id: str, version: int) -> Removal:
        await round_trip()
        stored = self._threads.get(thread_id)
        if stored is None:
            return "gone"
        if self._leases.get(thread_id) is not None or (not stored.packed and len(stored.events) != version):
            self._index(self._thread(thread_id, stored))
            return "kept"
        del self._threads[thread_id]
        return "removed"

    async def unindex(self, thread_id: str) -> None:
        await round_trip()
        old = self._indexed.pop(thread_id, None)
        for members in self._by_status.values():
            members.pop(thread_id, None)
        self._to_compact.pop(thread_id, None)
        self._recent.pop(thread_id, None)
        del old

    async def compactable(self, older_than: float, limit: int) -> list[str]:
        await round_trip()
        before = self.clock() - older_than
        return [i for at, i in sorted((at, i) for i, at in self._to_compact.items() if at <= before)][:limit]

    async def compact(self, thread_id: str) -> bool:
        await round_trip()
        stored = self._threads.get(thread_id)
        if stored is None or stored.packed:
            self._to_compact.pop(thread_id, None)
            return False
        thread = self._thread(thread_id, stored)
        if thread.status() not in FINISHED:
            self._index(thread)
            return False
        if self._leases.get(thread_id) is not None:
            return False
        stored.packed = True
        self._to_compact.pop(thread_id, None)
        return True

    def packed(self, thread_id: str) -> bool:
        """For tests: whether the thread is compacted."""
        stored = self._threads.get(thread_id)
        return stored is not None and stored.packed

    async def ping(self) -> None:
        await round_trip()
