"""The deploy counters GET /metrics shows, kept in one Redis hash so that every web process
answers for the whole system: per service, environment and outcome, the deploys and a
histogram of their durations; per service and environment, a histogram of approval waits.
Counted where a deploy's result goes into the history (RedisEnvironments.record), from its
record (which carries its start and its approval's ask and decision).

A field is the JSON of [kind, service, environment, outcome, what]; `what` is "count", "sum"
or a bucket's upper bound. Buckets are cumulative (Prometheus's `le`), "+Inf" included."""

from __future__ import annotations

import json
import math
from typing import Any

from redis.asyncio import Redis

from bot.runtime.ports import DeployRecord, Tally

DEPLOY_BUCKETS = (10.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1800.0, 3600.0, math.inf)
WAIT_BUCKETS = (60.0, 300.0, 900.0, 1800.0, 3600.0, 4 * 3600.0, 12 * 3600.0, 86400.0, 3 * 86400.0, math.inf)


def _field(kind: str, service: str, environment: str, outcome: str, what: str) -> str:
    return json.dumps([kind, service, environment, outcome, what])


def _bound(bucket: float) -> str:
    return "+Inf" if math.isinf(bucket) else repr(bucket)


def count(pipe: Any, key: str, record: DeployRecord) -> None:
    """Queue the increments for `record` on `pipe` (a Redis pipeline)."""
    outcome = "success" if record.ok else "failure"
    labels = (record.service, record.environment)
    pipe.hincrby(key, _field("deploy", *labels, outcome, "count"), 1)
    if record.started_at is not None:
        _observe(pipe, key, ("deploy", *labels, outcome), (record.at - record.started_at).total_seconds(),
                 DEPLOY_BUCKETS)
    if record.approval_asked_at is not None and record.decided_at is not None:
        waited = (record.decided_at - record.approval_asked_at).total_seconds()
        _observe(pipe, key, ("approval_wait", *labels, ""), waited, WAIT_BUCKETS)
        pipe.hincrby(key, _field("approval_wait", *labels, "", "count"), 1)


def _observe(pipe: Any, key: str, series: tuple[str, str, str, str], seconds: float,
             buckets: tuple[float, ...]) -> None:
    seconds = max(0.0, seconds)
    pipe.hincrbyfloat(key, _field(*series, "sum"), seconds)
    for bucket in buckets:
        if seconds <= bucket:
            pipe.hincrby(key, _field(*series, _bound(bucket)), 1)


async def tallies(redis: Redis, key: str) -> list[Tally]:
    """Every series in the hash (one HGETALL: its size follows the number of series, not of deploys)."""
    found: dict[tuple[str, str, str, str], dict[str, float]] = {}
    for name, value in (await redis.hgetall(key)).items():
        try:
            kind, service, environment, outcome, what = json.loads(name)
        except (ValueError, TypeError):
            continue  # not ours
        found.setdefault((kind, service, environment, outcome), {})[what] = float(value)
    return [_tally(series, values) for series, values in sorted(found.items())]


def _tally(series: tuple[str, str, str, str], values: dict[str, float]) -> Tally:
    bounds = DEPLOY_BUCKETS if series[0] == "deploy" else WAIT_BUCKETS
    buckets = tuple((b, int(values.get(_bound(b), 0))) for b in bounds)
    return Tally(*series, count=int(values.get("count", 0)), total=values.get("sum", 0.0), buckets=buckets)
