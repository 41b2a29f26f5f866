"""Runs threads in this process: one task per thread, so a thread never races itself here."""

from __future__ import annotations

import asyncio
import logging

from bot.loop import Runner
from bot.ports import ThreadStore

log = logging.getLogger(__name__)
BUSY_WAIT, BUSY_RETRIES = 0.5, 40


class InProcessWorker:
    """At most `concurrency` runs at once: a burst of requests queues agent runs instead of
    starving the event loop that must answer Slack (and everyone else) within milliseconds."""

    def __init__(self, runner: Runner, concurrency: int = 4) -> None:
        self.runner = runner
        self._slots = asyncio.Semaphore(concurrency)
        self._tasks: dict[str, asyncio.Task[None]] = {}
        self._again: set[str] = set()

    def kick(self, thread_id: str) -> None:
        """Run the thread soon; if it is running now, run it once more afterwards."""
        if thread_id in self._tasks:
            self._again.add(thread_id)
            return
        self._tasks[thread_id] = asyncio.create_task(self._run(thread_id))

    async def _run(self, thread_id: str) -> None:
        try:
            while True:
                self._again.discard(thread_id)
                await self._run_once(thread_id)
                if thread_id not in self._again:
                    return
        finally:
            del self._tasks[thread_id]

    async def _run_once(self, thread_id: str) -> None:
        # Another process holding the thread re-reads it when it lets go, so nothing is
        # missed; retrying here covers a holder that died (its lease expires in seconds).
        for _ in range(BUSY_RETRIES):
            try:
                async with self._slots:
                    if await self.runner.run(thread_id) is not None:
                        return
            except Exception:
                log.exception("thread %s: run failed; it stays paused until kicked again", thread_id)
                return
            await asyncio.sleep(BUSY_WAIT)

    async def recover(self, store: ThreadStore, limit: int = 500) -> list[str]:
        """After a restart, pick up threads that were mid-run when a process died."""
        resumed = []
        for thread_id in await store.recent(limit):
            if (await store.load(thread_id)).status() == "running":
                self.kick(thread_id)
                resumed.append(thread_id)
        return resumed

    async def idle(self) -> None:
        while self._tasks:
            await asyncio.gather(*self._tasks.values(), return_exceptions=True)
