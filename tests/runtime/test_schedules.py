"""Schedules against real Redis: each occurrence starts exactly one thread with two workers
ticking at once, across restarts, and after downtime (missed occurrences run once). The
clock is driven by the test; everything else is real (Redis, the service, the Slack
stand-in the thread is posted to)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from bot.adapters.redis.schedules import RedisScheduleMarks
from bot.runtime.scheduler import Scheduler, occurrence_thread_id
from bot.testing.fake_slack import FakeSlack
from bot.wiring.app import App, build
from tests.helpers import eventually

pytestmark = [pytest.mark.redis, pytest.mark.network]

CHANNEL = "C0123DEPLOY"
CRON, ZONE, MESSAGE = "0 10 * * 1-5", "Europe/Berlin", "deploy backend v1.2.3 to staging"


class Clock:
    def __init__(self, now: datetime) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now


@pytest.fixture
def fake_slack() -> Iterator[FakeSlack]:
    slack = FakeSlack().start()
    yield slack
    slack.stop()


@pytest.fixture
def settings(settings, fake_slack, tmp_path: Path):
    config = tmp_path / "deploybot.toml"
    config.write_text(f"""
[[schedules]]
cron = "{CRON}"
timezone = "{ZONE}"
message = "{MESSAGE}"
notify = ["slack:{CHANNEL}"]
""")
    return settings.model_copy(update={
        "deploybot_config": config, "slack_bot_token": "xoxb-test", "slack_signing_secret": "s",
        "slack_api_url": fake_slack.base_url, "approvers": "production:UAPPROVER",
    })


@pytest.fixture
async def workers(settings, redis) -> AsyncIterator[list[App]]:
    """Two processes' worth of parts on one Redis (each with its own connections)."""
    apps = [build(settings), build(settings)]
    for app in apps:
        await app.start(worker=False)  # the Slack client's session; no worker loop: the test ticks
    yield apps
    for app in apps:
        await app.close()


def scheduler(app: App, clock: Clock) -> Scheduler:
    return Scheduler(app.settings.schedules(), RedisScheduleMarks(app.redis), app.service, app.queue.push, clock)


def berlin(*args: int) -> datetime:
    from zoneinfo import ZoneInfo

    return datetime(*args, tzinfo=ZoneInfo(ZONE)).astimezone(UTC)


async def threads(app: App) -> list[str]:
    return await app.store.recent(100)


async def test_a_new_schedule_counts_from_when_it_is_first_seen_then_fires_once_per_occurrence(workers, fake_slack):
    app, _ = workers
    clock = Clock(berlin(2026, 3, 30, 9, 0))  # Monday, an hour before the first occurrence
    first = scheduler(app, clock)
    assert await first.tick() == []  # seen now: nothing earlier fires
    clock.now = berlin(2026, 3, 30, 9, 59, 59)
    assert await first.tick() == []
    clock.now = berlin(2026, 3, 30, 10, 0, 2)
    [thread_id] = await first.tick()
    assert await first.tick() == []  # the same occurrence again: nothing
    clock.now = berlin(2026, 3, 30, 11, 0)
    assert await first.tick() == []

    thread = await app.service.get(thread_id)
    said = thread.events[0]
    assert (said.text, said.channel, said.person) == (MESSAGE, "schedule", None)
    assert said.user == f"schedule {CRON} ({ZONE})"
    assert thread.origin.notify == (f"slack:{CHANNEL}",)
    await fake_slack.wait_for("chat.postMessage", channel=CHANNEL, text=f"({'schedule'}): {MESSAGE}")


async def test_two_workers_ticking_at_once_start_one_thread_per_occurrence(workers):
    clock = Clock(berlin(2026, 3, 30, 9, 0))
    a, b = (scheduler(app, clock) for app in workers)
    await asyncio.gather(a.tick(), b.tick())
    clock.now = berlin(2026, 3, 30, 10, 0, 1)
    started = await asyncio.gather(*(s.tick() for s in (a, b, a, b, a, b)))
    assert sum(len(s) for s in started) == 1
    assert len(await threads(workers[0])) == 1
    clock.now = berlin(2026, 3, 31, 10, 0, 1)  # the next day: one more
    started = await asyncio.gather(*(s.tick() for s in (b, a, b, a)))
    assert sum(len(s) for s in started) == 1
    assert len(await threads(workers[0])) == 2


async def test_after_a_restart_an_occurrence_is_not_repeated_and_missed_ones_run_once(workers, settings):
    app, _ = workers
    clock = Clock(berlin(2026, 3, 30, 9, 0))
    await scheduler(app, clock).tick()
    clock.now = berlin(2026, 3, 30, 10, 0, 1)
    assert len(await scheduler(app, clock).tick()) == 1

    # Every process restarts at the same moment: nothing new.
    restarted = build(settings)
    try:
        assert await scheduler(restarted, clock).tick() == []
        # Down from Monday 10:01 to Thursday 12:00: Tuesday's, Wednesday's and Thursday's
        # occurrences were missed; at start they run once, as Thursday's.
        clock.now = berlin(2026, 4, 2, 12, 0)
        [thread_id] = await scheduler(restarted, clock).tick()
        assert thread_id == occurrence_thread_id(restarted.settings.schedules()[0],
                                                 int(berlin(2026, 4, 2, 10, 0).timestamp()))
        assert await scheduler(restarted, clock).tick() == []
        assert len(await threads(app)) == 2
    finally:
        await restarted.close()


async def test_a_worker_that_died_between_starting_the_thread_and_marking_it_is_not_repeated(workers):
    app, other = workers
    clock = Clock(berlin(2026, 3, 30, 9, 0))
    await scheduler(app, clock).tick()
    clock.now = berlin(2026, 3, 30, 10, 0, 1)
    # What the dead worker left: the occurrence's thread, and the mark not moved.
    schedule = app.settings.schedules()[0]
    marks = RedisScheduleMarks(app.redis)
    occurrence = int(berlin(2026, 3, 30, 10, 0).timestamp())
    dying = scheduler(app, clock)

    async def no_advance(schedule_id: str, to: int) -> None:
        raise ConnectionError("died here")

    dying.marks = type("Dying", (), {"first_seen": marks.first_seen, "advance": staticmethod(no_advance)})()
    assert await dying.tick() == []  # it failed (logged) after starting the thread
    assert await threads(app) == [occurrence_thread_id(schedule, occurrence)]
    assert await scheduler(other, clock).tick() == []  # the survivor does not start it again
    assert len(await threads(app)) == 1
    assert int(await app.redis.get(app.store.keys.schedule(schedule.id))) == occurrence


async def test_the_worker_fires_schedules_as_a_chore(settings, redis):
    app = build(settings)
    try:
        assert [every for every, _ in app.worker.chores] == [5.0, 1.0, 10.0]  # schedules, timers, retention
        await app.start(worker=True)
        # Its first tick marks the schedule as seen.
        schedule = app.settings.schedules()[0]
        await eventually(lambda: app.redis.get(app.store.keys.schedule(schedule.id)), within=5)
    finally:
        await app.close()
