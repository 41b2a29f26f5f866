"""GET /metrics: Prometheus's text format, for teams that chart deploys in Grafana. The
counters live in Redis (bot/adapters/redis/deploy_counters.py), read on each scrape, so any
web process answers for the whole system. Behind the API's front door: with API_TOKEN set, a
scrape sends it (Prometheus's `authorization` setting with `credentials_file`)."""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence

from fastapi import APIRouter, Depends
from fastapi.responses import Response
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector

from bot.adapters.http.api.who import authorized, the_parts
from bot.adapters.http.shared import Parts
from bot.runtime.ports import Tally

router = APIRouter(dependencies=[Depends(authorized)])


@router.get("/metrics", include_in_schema=False)
async def metrics(a: Parts = Depends(the_parts)) -> Response:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(Tallies(await a.counters.tallies()))
    return Response(generate_latest(registry), media_type=CONTENT_TYPE_LATEST)


class Tallies(Collector):
    """What one read of the shared counters says, in Prometheus's families (a fresh registry
    per scrape: collect() is synchronous, the read from Redis is not)."""

    def __init__(self, tallies: Sequence[Tally]) -> None:
        self.tallies = tallies

    def collect(self) -> Iterator[Metric]:
        deploys = CounterMetricFamily("deploybot_deploys", "Deploys run, by outcome",
                                      labels=["service", "environment", "outcome"])
        durations = HistogramMetricFamily("deploybot_deploy_duration_seconds", "How long deploys ran",
                                          labels=["service", "environment", "outcome"])
        waits = HistogramMetricFamily("deploybot_approval_wait_seconds",
                                      "From asking for a deploy's approval to its decision",
                                      labels=["service", "environment"])
        for t in self.tallies:
            if t.kind == "deploy":
                deploys.add_metric([t.service, t.environment, t.outcome], t.count)
                durations.add_metric([t.service, t.environment, t.outcome], _buckets(t), t.total)
            elif t.kind == "approval_wait":
                waits.add_metric([t.service, t.environment], _buckets(t), t.total)
        yield from (deploys, durations, waits)


def _buckets(t: Tally) -> list[tuple[str, float]]:
    return [("+Inf" if math.isinf(bound) else repr(bound), float(n)) for bound, n in t.buckets]
