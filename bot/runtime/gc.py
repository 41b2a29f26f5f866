"""Retention: what a deploy bot running for years lets go of, a small batch at a time.

- A thread finished (done, failed, cancelled) for longer than THREAD_RETENTION is removed
  with every key of it and every conversation and reference key bound to it (a Slack thread,
  an email's Message-ID, an approval's message). Its deploys' history records keep their
  audit trail (DeployRecord's audit fields, filled when the deploy is recorded).
- A thread finished for longer than THREAD_COMPACT_AFTER is stored compressed.
- History records older than DEPLOY_HISTORY_RETENTION (unset: never) are dropped.
- Work entries older than a day (lost: done work is deleted at once) are trimmed, and the
  consumers of dead workers (idle for an hour, holding nothing) leave the group.
- Delivery marks (dedupe) keep their own short TTLs; timers of removed threads are cleared.

A thread is removed in an order a crash at any point leaves safe to run again: its own keys
(only if it is still at the version the index has, and no run holds it; else it is indexed
again and kept), then what the Inbox bound to it, its timer, and last its index entries, so
the next pass finds it again if anything in between failed.

Workers run `collect` as a chore, one worker at a time (WorkQueue.turn); `python -m bot gc
[--dry-run]` runs it once and says what went (or would go).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Protocol

from bot.runtime.clock import utcnow
from bot.runtime.ports import History, Inbox, Retention, ThreadNotFound, ThreadStore, Timers, WorkQueue

log = logging.getLogger(__name__)

BATCH = 100  # threads (and history records per environment) per pass
WORK_MAX_AGE_MS = 86_400_000  # work entries older than this were lost: trimmed
DEAD_WORKER_IDLE_MS = 3_600_000  # a worker not seen for this long is dead (live ones read every 0.5 s)


class Threads(ThreadStore, Retention, Protocol):
    """The thread store, with what retention needs of it."""


@dataclass
class Report:
    threads: list[str] = field(default_factory=list)  # removed (with dry_run: would be)
    kept: list[str] = field(default_factory=list)  # moved on or held since they were listed
    names: int = 0  # conversation and reference keys dropped with them
    compacted: int = 0  # (with dry_run: would be, at most one batch)
    history: dict[str, int] = field(default_factory=dict)  # records dropped per environment
    work: int = 0  # stream entries trimmed
    consumers: list[str] = field(default_factory=list)  # dead workers forgotten
    more: bool = False  # a batch was full: another pass has more to do

    def lines(self, dry_run: bool = False) -> list[str]:
        verb = "would go" if dry_run else "went"
        out = [f"threads finished longer than the retention: {len(self.threads)} {verb}"]
        out += [f"  thread {t}" for t in self.threads]
        if self.kept:
            out.append(f"threads kept (moved on or running since): {', '.join(self.kept)}")
        if not dry_run:
            out.append(f"conversation and reference keys dropped with them: {self.names}")
        out.append(f"threads compacted: {self.compacted}" + (" would be (this batch)" if dry_run else ""))
        for environment, n in sorted(self.history.items()):
            out.append(f"deploy history of {environment}: {n} record(s) older than the retention {verb}")
        out.append(f"work entries older than a day: {self.work} {verb}")
        out.append(f"dead workers' consumers: {len(self.consumers)} {verb}" +
                   (f" ({', '.join(self.consumers)})" if self.consumers else ""))
        if self.more:
            out.append("more remains: the next pass takes the next batch")
        return out


@dataclass
class Collector:
    store: Threads
    inbox: Inbox
    history: History
    queue: WorkQueue
    environments: Sequence[str]
    thread_retention: float  # seconds
    history_retention: float | None = None  # seconds; None: forever
    compact_after: float | None = 86_400.0  # seconds; None: never
    timers: Timers | None = None
    clock: Callable[[], datetime] = utcnow
    batch: int = BATCH

    async def collect(self, dry_run: bool = False) -> Report:
        """One pass: at most one batch of each kind."""
        report = Report()
        candidates = await self.store.finished(self.thread_retention, self.batch)
        report.more = len(candidates) == self.batch
        for thread_id, version in candidates:
            if dry_run:
                report.threads.append(thread_id)
            else:
                await self._remove(thread_id, version, report)
        if self.compact_after is not None:
            compactable = await self.store.compactable(self.compact_after, self.batch)
            report.more |= len(compactable) == self.batch
            if dry_run:
                report.compacted = len(compactable)
            else:
                for thread_id in compactable:
                    report.compacted += await self.store.compact(thread_id)
        if self.history_retention is not None:
            before = self.clock() - timedelta(seconds=self.history_retention)
            for environment in self.environments:
                dropped = await self.history.expire(environment, before, self.batch, dry_run)
                report.history[environment] = dropped
                report.more |= dropped == self.batch
        report.work = await self.queue.trim(WORK_MAX_AGE_MS, dry_run)
        report.consumers = await self.queue.drop_dead(DEAD_WORKER_IDLE_MS, dry_run)
        return report

    async def _remove(self, thread_id: str, version: int, report: Report) -> None:
        outcome = await self.store.remove(thread_id, version)
        if outcome == "kept":
            report.kept.append(thread_id)
            return
        report.names += await self.inbox.drop(thread_id)
        if self.timers is not None:
            await self.timers.set(thread_id, None)
        await self.store.unindex(thread_id)
        if outcome == "removed":
            report.threads.append(thread_id)

    async def chore(self, passes: int = 5) -> None:
        """A worker's chore: a few passes while each had more to do."""
        for _ in range(passes):
            report = await self.collect()
            if report.threads or report.compacted or report.consumers or any(report.history.values()) or report.work:
                log.info("retention: %d thread(s) removed, %d compacted, %d history record(s), %d work entr(ies), "
                         "%d dead worker(s)", len(report.threads), report.compacted, sum(report.history.values()),
                         report.work, len(report.consumers))
            if not report.more:
                return

    async def reindex(self, page: int = 500) -> int:
        """Index every stored thread the status index may not know (threads stored before it
        existed): each is read once. The index ignores what it already has newer."""
        count, cursor = 0, None
        while True:
            ids, cursor = await self.store.listed(None, page, cursor)
            for thread_id in ids:
                try:
                    await self.store.index(await self.store.load(thread_id))
                    count += 1
                except ThreadNotFound:
                    pass
            if cursor is None:
                return count
