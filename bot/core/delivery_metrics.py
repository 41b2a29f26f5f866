"""Delivery metrics (DORA's four, plus approval wait and who approves) from deploys: pure
arithmetic over what the history recorded, no I/O (bot/runtime/delivery.py reads the history
and the commits' times and hands them here).

The definitions, written down once:
- a deploy counts in the window when it finished (`at`) inside it;
- deploy frequency: deploys that succeeded, per day of the window;
- failed: deploys that did not succeed, or were marked faulty (rolled back, or failed their
  verification) or rolled back by a later deploy; change failure rate: failed / deploys;
- lead time for changes: from the deployed commit's time to its first successful deploy to
  that environment (rollbacks, which ship an old commit, and commits of unknown time are left
  out);
- time to restore: from a failed deploy of a service in an environment to the next deploy
  there that succeeded and was not marked faulty (a run of failures counts from the first);
- approval wait: from the approval being asked to its decision; approvers: decisions by person;
- median: the middle value (the mean of the two middle ones for an even count); p90: the
  nearest-rank 90th percentile (the value at rank ceil(0.9 n) counted from the smallest).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

WINDOWS = (7, 30, 90)  # the windows offered, in days
WEEK = timedelta(days=7)


@dataclass(frozen=True)
class Deploy:
    """What the metrics need of one deploy record (bot.runtime.ports.DeployRecord), with its
    commit's time where it is known."""

    service: str
    environment: str
    deploy_id: str
    commit: str
    ok: bool
    at: datetime
    faulty: bool = False
    rollback_of: str | None = None
    approval_asked_at: datetime | None = None
    decided_at: datetime | None = None
    decided_by: str = ""
    committed_at: datetime | None = None


@dataclass(frozen=True)
class Spread:
    median: float | None
    p90: float | None = None


@dataclass(frozen=True)
class Week:
    """One bar of the charts: the deploys that finished in [start, end)."""

    start: datetime
    end: datetime
    deploys: int
    failed: int
    lead_time: float | None  # median seconds
    approval_wait: float | None  # median seconds
    succeeded: int = 0

    @property
    def frequency(self) -> float:
        """Deploys that succeeded, per day of this week (the oldest may be shorter)."""
        return self.succeeded / ((self.end - self.start).total_seconds() / 86400)


@dataclass(frozen=True)
class Metrics:
    days: int
    since: datetime
    until: datetime
    deploys: int
    failed: int
    deploy_frequency: float  # successful deploys per day
    change_failure_rate: float | None  # None: no deploys to judge
    lead_time: Spread
    approval_wait: Spread
    time_to_restore: Spread  # median only
    approvers: dict[str, int] = field(default_factory=dict)
    weeks: tuple[Week, ...] = ()


def median(values: Sequence[float]) -> float | None:
    if not values:
        return None
    ordered, middle = sorted(values), len(values) // 2
    if len(ordered) % 2:
        return ordered[middle]
    return (ordered[middle - 1] + ordered[middle]) / 2


def p90(values: Sequence[float]) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[max(0, math.ceil(0.9 * len(ordered)) - 1)]


def spread(values: Sequence[float]) -> Spread:
    return Spread(median(values), p90(values))


def failed_ids(deploys: Iterable[Deploy]) -> set[str]:
    """The deploys that count as failed: not ok, marked faulty, or rolled back by another."""
    listed = list(deploys)
    rolled_back = {d.rollback_of for d in listed if d.rollback_of and d.ok}
    return {d.deploy_id for d in listed if not d.ok or d.faulty or d.deploy_id in rolled_back}


def _series(deploys: Iterable[Deploy]) -> dict[tuple[str, str], list[Deploy]]:
    """Per service and environment, oldest first."""
    found: dict[tuple[str, str], list[Deploy]] = {}
    for d in sorted(deploys, key=lambda d: d.at):
        found.setdefault((d.service, d.environment), []).append(d)
    return found


def lead_times(deploys: Iterable[Deploy]) -> list[tuple[Deploy, float]]:
    """(deploy, seconds from its commit) for each commit's first successful deploy to its
    service's environment; not rollbacks, not commits of unknown time."""
    found = []
    for series in _series(deploys).values():
        shipped: set[str] = set()
        for d in series:
            if not d.ok or d.rollback_of or d.commit in shipped:
                continue
            shipped.add(d.commit)
            if d.committed_at is not None:
                found.append((d, max(0.0, (d.at - d.committed_at).total_seconds())))
    return found


def restore_times(deploys: Iterable[Deploy]) -> list[float]:
    """Seconds from each run of failures of a service in an environment to the next good deploy."""
    listed = list(deploys)
    failed = failed_ids(listed)
    found = []
    for series in _series(listed).values():
        broken_at: datetime | None = None
        for d in series:
            if d.deploy_id in failed:
                broken_at = broken_at or d.at
            elif broken_at is not None:
                found.append((d.at - broken_at).total_seconds())
                broken_at = None
    return found


def approval_waits(deploys: Iterable[Deploy]) -> list[tuple[Deploy, float]]:
    return [(d, (d.decided_at - d.approval_asked_at).total_seconds()) for d in deploys
            if d.approval_asked_at is not None and d.decided_at is not None]


def compute(deploys: Iterable[Deploy], until: datetime, days: int) -> Metrics:
    """The metrics of the deploys that finished in the `days` before `until` (others are
    ignored: a caller may pass a little more than the window)."""
    since = until - timedelta(days=days)
    inside = [d for d in deploys if since <= d.at < until]
    failed = failed_ids(inside)
    leads, waits = lead_times(inside), approval_waits(inside)
    succeeded = sum(1 for d in inside if d.ok)
    return Metrics(
        days=days, since=since, until=until, deploys=len(inside), failed=len(failed),
        deploy_frequency=succeeded / days,
        change_failure_rate=len(failed) / len(inside) if inside else None,
        lead_time=spread([s for _, s in leads]),
        approval_wait=spread([s for _, s in waits]),
        time_to_restore=Spread(median(restore_times(inside))),
        approvers=dict(Counter(d.decided_by for d in inside if d.decided_by).most_common()),
        weeks=_weeks(inside, failed, leads, waits, since, until),
    )


def _weeks(
    inside: Sequence[Deploy], failed: set[str], leads: Sequence[tuple[Deploy, float]],
    waits: Sequence[tuple[Deploy, float]], since: datetime, until: datetime,
) -> tuple[Week, ...]:
    """A bar per week, counted back from `until` (the oldest may be shorter), oldest first.
    One pass over the deploys: each goes to its week by arithmetic."""
    count = math.ceil((until - since) / WEEK)

    def week(d: Deploy) -> int:  # 0: the newest
        return min(count - 1, int((until - d.at) / WEEK))

    deploys, broke, ok = [0] * count, [0] * count, [0] * count
    lead: list[list[float]] = [[] for _ in range(count)]
    wait: list[list[float]] = [[] for _ in range(count)]
    for d in inside:
        i = week(d)
        deploys[i] += 1
        broke[i] += d.deploy_id in failed
        ok[i] += d.ok
    for d, seconds in leads:
        lead[week(d)].append(seconds)
    for d, seconds in waits:
        wait[week(d)].append(seconds)
    return tuple(
        Week(max(since, until - (i + 1) * WEEK), until - i * WEEK, deploys[i], broke[i], median(lead[i]),
             median(wait[i]), ok[i])
        for i in reversed(range(count))
    )
