"""Delivery metrics (GET /console/metrics): a window of 7, 30 or 90 days of a service in an
environment (or all), as charts drawn on the server (console/charts.py) with the numbers
beside them, and the same figures as CSV (GET /console/metrics.csv, the same filters)."""

from __future__ import annotations

import csv
import io
from urllib.parse import urlencode

from fastapi import APIRouter, Request
from fastapi.responses import Response

from bot.adapters.http.console import charts, model
from bot.adapters.http.console.forms import Page
from bot.adapters.http.console.routes import HEADERS, PREFIX, Console
from bot.core import wording
from bot.core.delivery_metrics import WINDOWS, Metrics


def router(console: Console) -> APIRouter:
    r = APIRouter(include_in_schema=False)
    r.get(PREFIX + "/metrics")(console.route(metrics_page))
    r.get(PREFIX + "/metrics.csv")(console.route(metrics_csv))
    return r


def _filters(console: Console, request: Request) -> dict[str, str]:
    q = request.query_params
    filters = {"service": q.get("service", "")[:100], "environment": q.get("environment", "")[:100],
               "days": q.get("days", "30")}
    if filters["days"] not in {str(d) for d in WINDOWS}:
        raise Page(422, "Not valid", f"days must be one of {', '.join(str(d) for d in WINDOWS)}")
    if filters["environment"] and filters["environment"] not in console.policy.environments:
        raise Page(422, "Not valid", wording.unknown_environment(filters["environment"], console.policy.environments))
    if filters["service"] and filters["service"] not in console.policy.catalog.services:
        raise Page(422, "Not valid", wording.unknown_service(filters["service"], console.policy.catalog.names))
    return filters


async def _metrics(console: Console, request: Request) -> tuple[dict[str, str], Metrics]:
    console.viewer(request)
    f = _filters(console, request)
    return f, await console.parts.delivery.metrics(int(f["days"]), f["service"] or None, f["environment"] or None)


async def metrics_page(console: Console, request: Request) -> Response:
    filters, m = await _metrics(console, request)
    policy = console.policy
    return console.render(
        request, "metrics.html", m=m, filters=filters, windows=WINDOWS,
        query=urlencode({k: v for k, v in filters.items() if v}),
        environments=model.ordered(policy.environments, policy), services=list(policy.catalog.names),
        bars=charts.bars(m.weeks), lead=charts.line(m.weeks, lambda w: w.lead_time),
        wait=charts.line(m.weeks, lambda w: w.approval_wait), chart=charts, span=wording.span,
        per_day=wording.per_day, share=wording.share,
    )


COLUMNS = ("period", "start", "end", "deploys", "failed", "deploy_frequency", "change_failure_rate",
           "lead_time_median_seconds", "lead_time_p90_seconds", "approval_wait_median_seconds",
           "approval_wait_p90_seconds", "time_to_restore_median_seconds")


async def metrics_csv(console: Console, request: Request) -> Response:
    """A row per week (the charts' points), then the window's row (the numbers beside them)."""
    filters, m = await _metrics(console, request)
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(COLUMNS)
    for w in m.weeks:
        writer.writerow(["week", w.start.isoformat(), w.end.isoformat(), w.deploys, w.failed,
                         round(w.frequency, 4),
                         _ratio(w.failed, w.deploys), _n(w.lead_time), "", _n(w.approval_wait), "", ""])
    writer.writerow(["window", m.since.isoformat(), m.until.isoformat(), m.deploys, m.failed,
                     round(m.deploy_frequency, 4), _n(m.change_failure_rate), _n(m.lead_time.median),
                     _n(m.lead_time.p90), _n(m.approval_wait.median), _n(m.approval_wait.p90),
                     _n(m.time_to_restore.median)])
    name = "-".join(["metrics", *(v for v in (filters["service"], filters["environment"]) if v), f"{filters['days']}d"])
    return Response(out.getvalue(), media_type="text/csv; charset=utf-8", headers={
        **HEADERS, "Content-Disposition": f'attachment; filename="{name}.csv"'})


def _n(value: float | None) -> str | float:
    return "" if value is None else round(value, 4)


def _ratio(part: int, whole: int) -> str | float:
    return round(part / whole, 4) if whole else ""
