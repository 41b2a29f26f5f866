"""Threads: the store of their events and leases, its errors, what the retention asks of it,
and whether the storage answers."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, Protocol

from bot.core.events import Event
from bot.core.thread import Origin, Thread
from bot.runtime.ports.work import WorkQueue


class ThreadNotFound(LookupError):
    pass


class ThreadExists(Exception):
    pass


class Conflict(Exception):
    """Someone appended to the thread first. Re-read it and decide again; never overwrite."""

    def __init__(self, thread_id: str, expected: int, actual: int) -> None:
        super().__init__(f"thread {thread_id}: expected version {expected}, found {actual}")
        self.expected, self.actual = expected, actual


class LeaseLost(Exception):
    """Another run holds the thread now (ours lapsed): this run must stop deciding."""


class ThreadStore(Protocol):
    """Threads: their events, and the lease that lets one run decide at a time."""

    async def create(
        self, origin: Origin, events: Sequence[Event], thread_id: str | None = None,
        handoff: WorkQueue | None = None,
    ) -> Thread:
        """A new thread; with `thread_id`, raises ThreadExists if that id is taken.
        `handoff`: the thread is also pushed on that queue, once it is stored (a worker that
        takes it finds it), in the same round trip where the store can. A create
        of an id that was taken may push it anyway: a worker then finds nothing new to do."""
        ...

    async def load(self, thread_id: str) -> Thread: ...

    async def refresh(self, thread: Thread) -> Thread:
        """The same thread with whatever was appended after `thread.version`."""
        ...

    async def append(self, thread: Thread, events: Sequence[Event], holder: str | None = None) -> Thread:
        """Append iff the stored version is still `thread.version`; else raise Conflict.
        With `holder` (a run's lease owner), raise LeaseLost if another run holds the lease."""
        ...

    async def append_fact(self, thread: Thread, events: Sequence[Event]) -> Thread:
        """Append what already happened, whatever was appended meanwhile (re-reading on
        conflict): a result or a failed delivery is a fact, not a decision to re-take."""
        ...

    async def lease(self, thread_id: str, owner: str, ttl_ms: int) -> bool:
        """Take (or, for its owner, extend) the right to run a thread; False if another has it."""
        ...

    async def claim(self, thread_id: str, owner: str, ttl_ms: int) -> Thread | None:
        """lease() and load() at once; None if another runner holds the thread."""
        ...

    async def release(self, thread: Thread, owner: str) -> Thread:
        """Give up the lease, mark the thread recently active (for listing and recovery),
        and return `thread` with whatever was appended after it (by writers that could not
        run the thread while it was held)."""
        ...

    async def finish(self, thread: Thread, events: Sequence[Event], owner: str) -> Thread:
        """append(thread, events, holder=owner), then release() of the result, in one round
        trip where the store can (the last events of a run that leaves nothing else behind).
        Raises as append() does, and then keeps the lease (the run decides again
        from what is stored); else returns what release() returns."""
        ...

    async def recent(self, limit: int) -> list[str]:
        """Ids of the threads most recently created or released, newest first."""
        ...

    async def index(self, thread: Thread) -> None:
        """Record `thread.status()` in the status index, unless the index already holds a
        newer version of the thread. create() and release() do it themselves; the service
        does it after a person's append, and the sweep when it finds the index behind."""
        ...

    async def listed(
        self, statuses: Sequence[str] | None, limit: int, cursor: str | None = None
    ) -> tuple[list[str], str | None]:
        """One page of thread ids, newest first, and the cursor of the next page (None on
        the last one). `statuses` None: every thread, by when it was last created or
        released; else the threads the index has in any of those statuses, by when they
        entered it. The cursor is opaque; a malformed one raises ValueError. A thread that
        moves while someone pages goes to the top: no page lists it twice."""
        ...


Removal = Literal["removed", "gone", "kept"]


class Retention(Protocol):
    """What bot/runtime/gc.py asks of the thread store: finished threads by age, removing them, and
    compacting them (the same thread, stored smaller)."""

    async def finished(self, older_than: float, limit: int) -> list[tuple[str, int]]:
        """(id, version) of threads the index has had as finished (done, failed, cancelled)
        for longer than `older_than` seconds, longest first."""
        ...

    async def remove(self, thread_id: str, version: int) -> Removal:
        """Delete the thread's events, meta and lease if it is still at `version` and no run
        holds it ("removed"; "gone": nothing was there; "kept": it moved on or is held, and
        is indexed again). Its Inbox names are the Inbox's (Inbox.drop); its index entries
        stay until `unindex`, so a crash in between leaves it for the next pass."""
        ...

    async def unindex(self, thread_id: str) -> None:
        """Forget the thread in every index (status, recency)."""
        ...

    async def compactable(self, older_than: float, limit: int) -> list[str]:
        """Threads finished for longer than `older_than` seconds and not compacted yet,
        longest first."""
        ...

    async def compact(self, thread_id: str) -> bool:
        """Store the thread in one compressed value, if it is finished and idle; True if it
        was. load, refresh and append see no difference (an append expands it first)."""
        ...


class Unsafe(Exception):
    """The storage answers but must not be trusted with what it holds (a Redis that may evict
    keys): the message says why and what to change."""


class Health(Protocol):
    async def ping(self) -> None:
        """Raise if the storage is unreachable, full, or Unsafe."""
        ...
