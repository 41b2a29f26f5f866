"""Schedules start threads: `[[schedules]]` of deploybot.toml, fired by the workers.

Every worker calls `Scheduler.tick` every few seconds; each occurrence starts exactly one
thread however many workers tick and however often they restart:

- a schedule counts from when it is first seen (its mark in the store is created then);
- at a tick, the due occurrence is the latest one at or before now (croniter, in the
  schedule's time zone, so daylight saving time is handled): occurrences missed while every
  process was down collapse into that one, run once at start;
- the thread of an occurrence has an id derived from the schedule and the occurrence, and
  the store creates a thread id once (ThreadExists for everyone after the first), so two
  workers at one occurrence, or a worker that died between starting the thread and moving
  the mark, start it once; the mark is then moved forward (never back).
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Awaitable, Callable, Sequence
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

from croniter import croniter  # type: ignore[import-untyped]

from bot.core.people import Identity
from bot.core.thread import Origin
from bot.core.triggers import SCHEDULE, Schedule
from bot.runtime.clock import utcnow
from bot.runtime.ports import ScheduleMarks, ThreadExists
from bot.runtime.service import ThreadService

log = logging.getLogger(__name__)

TICK_EVERY = 5.0  # seconds between two looks at the schedules, per worker


def due(schedule: Schedule, now: datetime) -> datetime:
    """The latest occurrence of `schedule` at or before `now` (UTC)."""
    # get_prev is strictly before its start: start a second after now (whole seconds).
    start = now.astimezone(ZoneInfo(schedule.timezone)).replace(microsecond=0) + timedelta(seconds=1)
    return croniter(schedule.cron, start).get_prev(datetime).astimezone(UTC)


def occurrence_thread_id(schedule: Schedule, occurrence: int) -> str:
    """The one thread id an occurrence may start (same length as events.new_id)."""
    return hashlib.sha256(f"schedule:{schedule.id}:{occurrence}".encode()).hexdigest()[:16]


class Scheduler:
    def __init__(
        self,
        schedules: Sequence[Schedule],
        marks: ScheduleMarks,
        service: ThreadService,
        kick: Callable[[str], Awaitable[None]],
        clock: Callable[[], datetime] = utcnow,
    ) -> None:
        self.schedules = tuple(schedules)
        self.marks, self.service, self.kick, self.clock = marks, service, kick, clock

    async def tick(self) -> list[str]:
        """Start the thread of every schedule that is due; the ids of those started here."""
        started = []
        now = self.clock()
        for schedule in self.schedules:
            try:
                thread_id = await self._fire(schedule, now)
            except Exception:  # one broken schedule (or Redis away) must not stop the others
                log.exception("schedule %s (%s): could not fire", schedule.id, schedule.cron)
                continue
            if thread_id:
                started.append(thread_id)
        return started

    async def _fire(self, schedule: Schedule, now: datetime) -> str | None:
        mark = await self.marks.first_seen(schedule.id, int(now.timestamp()))
        occurrence = int(due(schedule, now).timestamp())
        if occurrence <= mark:
            return None
        thread_id = occurrence_thread_id(schedule, occurrence)
        who = Identity(None, SCHEDULE, schedule.label)
        origin = Origin(channel=SCHEDULE, notify=schedule.notify)
        mine = True
        try:
            await self.service.launch(schedule.message, who, SCHEDULE, origin, thread_id)
        except ThreadExists:
            mine = False  # another worker (or this one before a crash) started it
        # Handed over either way: a thread started by a process that died before handing it
        # over would wait for the sweep; twice costs one idle run.
        await self.kick(thread_id)
        await self.marks.advance(schedule.id, occurrence)
        if mine:
            log.info("schedule %s (%s): started thread %s", schedule.id, schedule.cron, thread_id)
        return thread_id if mine else None
