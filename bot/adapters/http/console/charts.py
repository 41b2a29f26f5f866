"""The metrics page's charts as geometry for server-rendered SVG (templates/metrics.html draws
it): a bar per week, and lines across the weeks. Numbers only: every label is escaped by the
template like any other text."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import timedelta

from bot.core import wording
from bot.core.delivery_metrics import Week

WIDTH, HEIGHT = 400, 170  # the viewBox: the SVG itself is as wide as its column (a phone's too)
LEFT, RIGHT, TOP, BOTTOM = 8, 392, 18, 140  # the plot area


@dataclass(frozen=True)
class Bar:
    x: float
    width: float
    y: float  # the top of the whole bar
    height: float
    failed_y: float  # the failed part, drawn over the bottom of the bar
    failed_height: float
    count: int
    failed: int
    label: str  # the days the week holds, shown under every bar or every other one
    span: str  # its start and end to the minute, in its tooltip


@dataclass(frozen=True)
class Point:
    x: float
    y: float
    value: str  # the week's median, for people


@dataclass(frozen=True)
class Line:
    segments: tuple[str, ...]  # SVG polyline points: a gap where a week had nothing to measure
    points: tuple[Point, ...]
    top: str  # what the top of the plot stands for
    labels: tuple[tuple[float, str], ...]  # (x, the days the week holds), as under the bars


def _slots(n: int) -> tuple[float, float]:
    slot = (RIGHT - LEFT) / max(n, 1)
    return slot, slot * 0.7


def _label(week: Week) -> str:
    """The days the week holds, first to last: "Nov 20–27", "Nov 26–Dec 2" (a week counted
    back from now starts and ends at this hour: its first and last days are partly in it)."""
    first, last = week.start, week.end - timedelta(microseconds=1)
    if first.date() == last.date():
        return f"{first:%b %-d}"
    return f"{first:%b %-d}–{last:%-d}" if (first.year, first.month) == (last.year, last.month) else (
        f"{first:%b %-d}–{last:%b %-d}")


def span_of(week: Week) -> str:
    """To the minute, for the bar's tooltip: "Nov 20 12:00 – Nov 27 12:00 UTC"."""
    return f"{week.start:%b %-d %H:%M} – {week.end:%b %-d %H:%M} UTC"


def _labels(weeks: Sequence[Week]) -> tuple[tuple[float, str], ...]:
    slot, _ = _slots(len(weeks))
    every = 1 if len(weeks) <= 7 else 2
    return tuple((LEFT + slot * (i + 0.5), _label(w)) for i, w in enumerate(weeks) if i % every == 0)


def bars(weeks: Sequence[Week]) -> tuple[Bar, ...]:
    slot, width = _slots(len(weeks))
    top = max((w.deploys for w in weeks), default=0) or 1
    scale = (BOTTOM - TOP) / top
    found = []
    for i, w in enumerate(weeks):
        height, failed = w.deploys * scale, w.failed * scale
        x = LEFT + slot * i + (slot - width) / 2
        found.append(Bar(round(x, 1), round(width, 1), round(BOTTOM - height, 1), round(height, 1),
                         round(BOTTOM - failed, 1), round(failed, 1), w.deploys, w.failed, _label(w),
                         span_of(w)))
    return tuple(found)


def line(weeks: Sequence[Week], value: Callable[[Week], float | None]) -> Line:
    slot, _ = _slots(len(weeks))
    values = [value(w) for w in weeks]
    top = max((v for v in values if v is not None), default=0.0) or 1.0
    segments: list[list[str]] = [[]]
    points = []
    for i, v in enumerate(values):
        if v is None:
            segments.append([])
            continue
        x, y = round(LEFT + slot * (i + 0.5), 1), round(BOTTOM - v / top * (BOTTOM - TOP), 1)
        segments[-1].append(f"{x},{y}")
        points.append(Point(x, y, wording.span(v)))
    return Line(tuple(" ".join(s) for s in segments if s), tuple(points), wording.span(top), _labels(weeks))
