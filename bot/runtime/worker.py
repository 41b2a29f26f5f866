"""A worker takes "run this thread" work from the queue and runs the agent loop on it.

Any number of workers, in any processes, share one queue. Delivery is at least once:
an entry is acknowledged only after a run of its thread finished, so work a dead worker
held is reclaimed by another within seconds. Running a thread twice is harmless (the
runner holds a per-thread lease and every append is compare-and-set), so nothing here
has to be exactly once.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from bot.core.events import new_id
from bot.core.thread import ACTIVE
from bot.runtime.loop import LEASE_TTL_MS, Runner
from bot.runtime.ports import ThreadNotFound, ThreadStore, Work, WorkQueue
from bot.runtime.retry import retrying_for
from bot.runtime.skew import SKEW_EVERY, ClockCheck

log = logging.getLogger(__name__)

BLOCK_MS = 500  # how long one read waits for new work; also the reclaim polling period
MIN_IDLE_MS = 3_000  # work nobody kept for this long belongs to a dead worker
HEARTBEAT = 1.0  # seconds between keeping our entries; well under MIN_IDLE_MS
# Retrying a thread another run holds. A holder still there after more than a lease's
# lifetime is alive (it renews), and it re-reads the thread when it lets go: done.
BUSY_WAIT, BUSY_FOR = 0.25, LEASE_TTL_MS / 1000 + 1
SWEEP_EVERY = 30  # seconds; one worker at a time looks for threads nobody handed over


class _Busy(Exception):
    """Another run holds the thread: try again shortly."""


@dataclass
class _Job:
    """One thread this worker is running, and the entries that asked for it."""

    entries: list[str]  # covered by the run in progress: acknowledged when it finishes
    waiting: list[str] = field(default_factory=list)  # arrived meanwhile: another run
    task: asyncio.Task[None] | None = None


def worker_name() -> str:
    return f"{socket.gethostname()}-{os.getpid()}-{new_id()[:6]}"


class Worker:
    def __init__(
        self, runner: Runner, queue: WorkQueue, store: ThreadStore, concurrency: int = 4,
        name: str | None = None, chores: tuple[tuple[float, Callable[[], Awaitable[object]]], ...] = (),
        clock: ClockCheck | None = None, clock_every: float = SKEW_EVERY,
    ) -> None:
        """`chores`: (every seconds, what) run periodically while the worker serves (firing
        schedules: bot/runtime/scheduler.py); each must be safe to run in every worker at once.
        `clock`: this process's clock against the store's (bot/runtime/skew.py), measured every
        `clock_every` seconds: while it is off, the worker takes no work and runs no chore, since
        each run and chore reads the clock (expiry, reminders, schedules, timers)."""
        self.runner, self.queue, self.store = runner, queue, store
        self.concurrency = concurrency
        self.name = name or worker_name()
        self.chores = chores
        self.clock, self.clock_every = clock, clock_every
        self._jobs: dict[str, _Job] = {}
        self._freed = asyncio.Event()
        self._stopping = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []
        self._handed_back: list[tuple[str, list[str]]] = []
        # Entries whose runs finished, acknowledged with the next take (one round trip for
        # both); kept meanwhile like the entries of running jobs.
        self._finished: list[str] = []

    def start(self) -> None:
        if not self._tasks:
            # Each task is named after its coroutine (_serve, ...): the name _died logs.
            self._tasks = [
                asyncio.create_task(c, name=c.__name__) for c in (
                    self._serve(), self._heartbeat(), self._sweep(), *(self._chore(*c) for c in self.chores),
                    *([self.clock.watch(self.clock_every)] if self.clock else []),
                )
            ]
            for task in self._tasks:
                task.add_done_callback(self._died)

    def _died(self, task: asyncio.Task[None]) -> None:
        if not task.cancelled() and task.exception():
            log.error("worker %s: %s stopped", self.name, task.get_name(), exc_info=task.exception())

    async def stop(self, grace: float = 25.0) -> None:
        """Take no more work; let runs in progress finish for up to `grace` seconds, then
        cancel the rest (their leases are released; a deploy in progress still finishes and
        is recorded) and hand their work back to the queue so another worker takes it at once."""
        self._stopping.set()
        self._freed.set()
        if not self._tasks:
            return
        serve, heartbeat, sweep, *chores = self._tasks
        for task in (sweep, *chores):
            task.cancel()
        await serve
        running = [j.task for j in self._jobs.values() if j.task]
        if running:
            _, late = await asyncio.wait(running, timeout=grace)
            for task in late:
                task.cancel()
            await asyncio.gather(*running, return_exceptions=True)
        heartbeat.cancel()  # kept our entries until the last run ended
        await self._acknowledge()
        await self._hand_back()
        self._tasks = []

    async def idle(self) -> None:
        """Wait until no work is queued or running (for tests and benchmarks). Polled: the
        queue is shared with other processes, so no event here could say it is empty."""
        while True:
            if not self._jobs and not await self.queue.backlog():
                return
            await asyncio.sleep(0.02)

    async def recover(self, page: int = 200) -> list[str]:
        """Queue threads that are mid-run by their events: a process that recorded an event
        but could not hand the thread over (it died, or Redis failed in between) leaves such
        a thread behind. Threads another worker is running cost one short busy retry.

        Reads the active threads of the status index only (never the finished ones, however
        many are stored): a thread a person answered while it waited (an approval) is in a
        waiting status there until its run releases it, so each is loaded and its status
        derived from its events; one the index has wrong is indexed again."""
        stuck = []
        for status in ACTIVE:
            cursor = None
            while True:
                ids, cursor = await self.store.listed([status], page, cursor)
                for thread_id in ids:
                    try:
                        thread = await self.store.load(thread_id)
                    except ThreadNotFound:
                        continue
                    now = thread.status()
                    if now != status:
                        await self.store.index(thread)
                    if now == "running" and thread_id not in stuck:
                        stuck.append(thread_id)
                if cursor is None:
                    break
        for thread_id in stuck:
            await self.queue.push(thread_id)
        return stuck

    async def _sweep(self) -> None:
        first = True
        while True:
            try:
                if first or await self.queue.turn("sweep", SWEEP_EVERY):
                    if stuck := await self.recover():
                        log.info(
                            "worker %s: queued %d thread(s) left mid-run: %s", self.name, len(stuck), ", ".join(stuck)
                        )
            except Exception as e:
                log.warning("worker %s: looking for threads left mid-run failed: %s", self.name, e)
            first = False
            await asyncio.sleep(SWEEP_EVERY)

    def _clock_off(self) -> bool:
        return self.clock is not None and not self.clock.ok

    async def _clock_agrees(self) -> None:
        """Return once the clock was measured and agrees with the store's (at start: its first measurement)."""
        if self.clock is not None:
            await self.clock.agrees.wait()

    async def _chore(self, every: float, chore: Callable[[], Awaitable[object]]) -> None:
        while True:
            await self._clock_agrees()
            try:
                await chore()
            except Exception:
                log.exception("worker %s: a periodic chore failed", self.name)
            await asyncio.sleep(every)

    async def _serve(self) -> None:
        reclaimed_at = 0.0
        while not self._stopping.is_set():
            if self._clock_off():  # its work waits in the queue for a worker whose clock agrees
                await asyncio.sleep(min(0.25, self.clock_every))
                continue
            free = self.concurrency - len(self._jobs)
            if free <= 0:
                self._freed.clear()
                await self._freed.wait()
                continue
            try:
                work: list[Work] = []
                if time.monotonic() - reclaimed_at >= BLOCK_MS / 1000:
                    reclaimed_at = time.monotonic()
                    work += await self.queue.reclaim(self.name, MIN_IDLE_MS, free)
                if not work:
                    finished, self._finished = self._finished, []
                    try:
                        work += await self.queue.take(self.name, free, BLOCK_MS, finished)
                    except BaseException:
                        self._finished = finished + self._finished  # still to acknowledge
                        raise
            except Exception as e:  # Redis restarting: the work is safe in the queue; try again
                log.warning("worker %s: reading the queue failed: %s", self.name, e)
                await asyncio.sleep(1)
                continue
            for item in work:
                self._accept(item)

    def _accept(self, item: Work) -> None:
        job = self._jobs.get(item.thread_id)
        if job is not None:  # one run per thread here; a second one queues behind it
            job.waiting.append(item.entry)
            return
        job = self._jobs[item.thread_id] = _Job([item.entry])
        job.task = asyncio.create_task(self._drive(item.thread_id, job))

    async def _drive(self, thread_id: str, job: _Job) -> None:
        try:
            while await self._run(thread_id):
                self._finished += job.entries
                if not job.waiting:
                    return
                if self._stopping.is_set():
                    self._handed_back.append((thread_id, job.waiting))
                    return
                job.entries, job.waiting = job.waiting, []
            # Not run: the entries stay pending and unkept, so they are reclaimed and retried.
        except asyncio.CancelledError:
            self._handed_back.append((thread_id, job.entries + job.waiting))
            raise
        finally:
            del self._jobs[thread_id]
            self._freed.set()

    async def _run(self, thread_id: str) -> bool:
        """True once a run of the thread finished here."""
        try:
            # Almost always the thread is free: the retrying machinery only once it was not.
            if await self.runner.run(thread_id) is None:
                await asyncio.sleep(BUSY_WAIT)
                await self._run_when_free(thread_id)
            return True
        except _Busy:
            # Another run held the thread all along. It re-reads when it lets go, so what
            # woke us is not missed while it lives; if it died, its lease expires within seconds.
            return True
        except ThreadNotFound:
            log.warning("thread %s: handed over but not stored; dropped", thread_id)
            return True
        except self.runner.transient as e:
            log.warning("thread %s: the store is unreachable (%s); retried in %d s", thread_id, e, MIN_IDLE_MS // 1000)
            return False
        except Exception:
            log.exception("thread %s: run failed; it is retried in %d s", thread_id, MIN_IDLE_MS // 1000)
            return False

    async def _run_when_free(self, thread_id: str) -> None:
        """Try again every BUSY_WAIT for BUSY_FOR; _Busy if another run held it all along."""
        what = f"thread {thread_id}: running it"
        async for attempt in retrying_for(BUSY_FOR, BUSY_WAIT, (_Busy,), what, log, logging.DEBUG):
            with attempt:
                if await self.runner.run(thread_id) is None:
                    raise _Busy("another run holds it")

    async def _acknowledge(self) -> None:
        """Acknowledge the finished entries no take carried (the worker is stopping)."""
        finished, self._finished = self._finished, []
        try:
            await self.queue.done(finished)
        except Exception:  # they are reclaimed later and find nothing to do
            log.exception("worker %s: acknowledging %s failed", self.name, finished)

    async def _heartbeat(self) -> None:
        while True:
            await asyncio.sleep(HEARTBEAT)
            entries = [e for job in list(self._jobs.values()) for e in job.entries + job.waiting] + self._finished
            try:
                await self.queue.keep(self.name, entries)
            except Exception:
                log.exception("worker %s: keeping its work failed", self.name)

    async def _hand_back(self) -> None:
        for thread_id, entries in self._handed_back:
            try:
                await self.queue.push(thread_id)
                await self.queue.done(entries)
            except Exception:  # still pending under our name: reclaimed after MIN_IDLE_MS
                log.exception("worker %s: handing %s back failed", self.name, thread_id)
        self._handed_back = []
