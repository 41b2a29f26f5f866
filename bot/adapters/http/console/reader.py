"""Reading threads for the console, cheaply: threads are append-only, so a thread read once is
kept (up to CACHE_SIZE of them) and brought up to date with `ThreadStore.refresh`, which reads
only the events appended since (one LRANGE, usually empty). Also the "has anything changed?"
fingerprint the live pages' event stream polls, computed at most once a second per process
however many tabs are open.
"""

from __future__ import annotations

import asyncio
import hashlib
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime

from bot.core.freeze_windows import active
from bot.core.policy import Policy
from bot.core.thread import ACTIVE, Thread
from bot.runtime.clock import utcnow
from bot.runtime.ports import FreezeStore, History, Locks, ThreadNotFound, ThreadStore

CACHE_SIZE = 2_000
WATCHED = 50  # the newest threads whose versions make the board's fingerprint
FRESH_SECONDS = 0.9  # a fingerprint this recent is shared, not recomputed
# Reads at once, across every page being rendered: the app's Redis pool is shared with the
# API and the worker, and a board reads hundreds of threads.
CONCURRENT_READS = 16


@dataclass
class Reader:
    store: ThreadStore
    locks: Locks
    history: History
    policy: Policy
    clock: Callable[[], float] = time.monotonic
    freezes: FreezeStore | None = None  # stop-the-line freezes (the board shows them)
    now: Callable[[], datetime] = utcnow  # what a freeze is compared with

    def __post_init__(self) -> None:
        self._cache: OrderedDict[str, Thread] = OrderedDict()
        self._prints: dict[str, tuple[float, str]] = {}
        self._computing: dict[str, asyncio.Lock] = {}
        self._slots = asyncio.Semaphore(CONCURRENT_READS)

    async def thread(self, thread_id: str) -> Thread:
        """The thread as stored now; raises ThreadNotFound."""
        cached = self._cache.get(thread_id)
        async with self._slots:
            thread = await self.store.refresh(cached) if cached is not None else await self.store.load(thread_id)
        self._cache[thread_id] = thread
        self._cache.move_to_end(thread_id)
        while len(self._cache) > CACHE_SIZE:
            self._cache.popitem(last=False)
        return thread

    async def maybe(self, thread_id: str) -> Thread | None:
        try:
            return await self.thread(thread_id)
        except ThreadNotFound:
            return None

    async def threads(self, ids: Sequence[str]) -> list[Thread]:
        """These threads (those that exist), in order, read concurrently."""
        found = await asyncio.gather(*(self.maybe(i) for i in ids))
        return [t for t in found if t is not None]

    async def recent(self, limit: int) -> list[Thread]:
        """The `limit` threads most recently created or run, newest first."""
        return await self.threads(await self.store.recent(limit))

    async def listed(
        self, statuses: Sequence[str] | None, limit: int, cursor: str | None = None
    ) -> tuple[list[Thread], str | None]:
        """A page of the status index (statuses None: of every thread by recency) and the
        next page's cursor, as ThreadStore.listed."""
        ids, after = await self.store.listed(statuses, limit, cursor)
        return await self.threads(ids), after

    async def active(self, limit: int) -> list[Thread]:
        """Up to `limit` threads the index has as active (running or waiting), newest first:
        what the board and the approvals page look at, however many finished ones are stored."""
        return (await self.listed(ACTIVE, limit))[0]

    # --- what the live pages watch --------------------------------------------------------

    async def fingerprint(self, watch: str) -> str:
        """A short digest that changes when what `watch` shows may have: "board" (the locks
        on environments and on services there, the freezes that hold, the newest deploys, the
        newest threads and their versions; the board, approvals, threads and deploys pages) or "thread:<id>"
        (that thread's version). A page reads it before what it shows: a change made while
        it renders then makes the next digest differ, and the page updates."""
        now = self.clock()
        known = self._prints.get(watch)
        if known and now - known[0] < FRESH_SECONDS:
            return known[1]
        lock = self._computing.setdefault(watch, asyncio.Lock())
        async with lock:
            known = self._prints.get(watch)
            if known and self.clock() - known[0] < FRESH_SECONDS:
                return known[1]
            digest = await self._compute(watch)
            self._prints[watch] = (self.clock(), digest)
            if len(self._prints) > CACHE_SIZE:  # one per watched thread: forget the stalest
                stalest = min(self._prints, key=lambda k: self._prints[k][0])
                self._prints.pop(stalest, None)
                self._computing.pop(stalest, None)
            return digest

    async def _compute(self, watch: str) -> str:
        parts: list[str] = []
        if watch.startswith("thread:"):
            thread = await self.maybe(watch.removeprefix("thread:"))
            parts.append(str(thread.version if thread else -1))
        else:
            environments = sorted(self.policy.environments)
            services = self.policy.catalog.names
            helds = await asyncio.gather(*(self.locks.held(e, services) for e in environments))
            heads = await asyncio.gather(*(self.history.recent(e, 1) for e in environments))
            stopped = await self.freezes.current() if self.freezes is not None else []
            holding, now = [*self.policy.freezes, *stopped], self.now()
            for env, held, head in zip(environments, helds, heads, strict=True):
                locks = ",".join(f"{lock.service}={lock.owner}@{lock.since}" for lock in held)
                hit = active(holding, env, now)
                frozen = f"{hit.source}|{hit.reason}|{hit.until}" if hit else ""
                parts.append(f"{env}:{locks}:{head[0].deploy_id if head else ''}:{frozen}")
            parts += [f"{t.id}:{t.version}" for t in await self.recent(WATCHED)]
        return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]
