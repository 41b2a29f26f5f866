"""The metrics page's week labels: each bar is labelled by the days it holds."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from bot.adapters.http.console import charts
from bot.core.delivery_metrics import compute

NOON = datetime(2026, 12, 2, 12, tzinfo=UTC)


def test_a_week_is_labelled_by_its_first_and_last_day_and_its_tooltip_to_the_minute():
    weeks = compute([], NOON, 30).weeks  # counted back from now: 4 weeks and 2 days
    labels = [b.label for b in charts.bars(weeks)]
    assert labels == ["Nov 2–4", "Nov 4–11", "Nov 11–18", "Nov 18–25", "Nov 25–Dec 2"]
    assert charts.bars(weeks)[-1].span == "Nov 25 12:00 – Dec 2 12:00 UTC"
    midnight = compute([], datetime(2026, 12, 3, tzinfo=UTC), 7).weeks  # whole days: no day in two weeks
    assert [b.label for b in charts.bars(midnight)] == ["Nov 26–Dec 2"]
    assert charts.line(weeks, lambda w: None).labels[0][1] == "Nov 2–4"
    one_day = compute([], NOON, 1).weeks
    assert [b.label for b in charts.bars(one_day)] == ["Dec 1–2"]
    assert one_day[0].end - one_day[0].start == timedelta(days=1)
