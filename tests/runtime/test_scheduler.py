"""When a schedule is due: the latest occurrence of its cron line in its time zone."""

from __future__ import annotations

from datetime import UTC, datetime

from bot.core.triggers import Schedule
from bot.runtime.scheduler import due

CRON, ZONE, MESSAGE = "0 10 * * 1-5", "Europe/Berlin", "deploy backend v1.2.3 to staging"


def test_due_is_the_latest_occurrence_in_the_time_zone_across_daylight_saving_time():
    schedule = Schedule(CRON, ZONE, MESSAGE)
    # Friday 27 March 2026 is winter time (10:00 = 09:00 UTC); Monday 30 March summer (08:00 UTC).
    assert due(schedule, datetime(2026, 3, 27, 9, 0, tzinfo=UTC)) == datetime(2026, 3, 27, 9, 0, tzinfo=UTC)
    assert due(schedule, datetime(2026, 3, 27, 8, 59, 59, tzinfo=UTC)) == datetime(2026, 3, 26, 9, 0, tzinfo=UTC)
    assert due(schedule, datetime(2026, 3, 30, 7, 0, tzinfo=UTC)) == datetime(2026, 3, 27, 9, 0, tzinfo=UTC)
    assert due(schedule, datetime(2026, 3, 30, 8, 0, 1, tzinfo=UTC)) == datetime(2026, 3, 30, 8, 0, tzinfo=UTC)
