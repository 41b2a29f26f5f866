"""GET /metrics/delivery: delivery metrics (bot/core/delivery_metrics.py defines them) of a
service in an environment (or all of either) over a window of days, as JSON. Behind the same
front door as the rest of the API (bot.adapters.http.front_door: the API token, a personal
token or a session)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from fastapi import APIRouter, Depends, Query

from bot.adapters.http.api.who import authorized, the_parts
from bot.adapters.http.shared import Parts
from bot.core import wording
from bot.core.delivery_metrics import Metrics, Spread
from bot.runtime.service import Invalid

MAX_DAYS = 365

router = APIRouter(dependencies=[Depends(authorized)])


@router.get("/metrics/delivery")
async def delivery(
    service: str | None = Query(None, max_length=100), environment: str | None = Query(None, max_length=100),
    days: int = Query(30, ge=1, le=MAX_DAYS), a: Parts = Depends(the_parts),
) -> dict[str, Any]:
    """`service`, `environment` left out: all of them. `days`: the window ending now."""
    service, environment = known(a, service, environment)
    return metrics_json(await a.delivery.metrics(days, service, environment), service, environment)


def known(a: Parts, service: str | None, environment: str | None) -> tuple[str | None, str | None]:
    """The service and environment asked for, as the policy names them (None: all); an unknown
    one is refused (422) saying which are known."""
    if environment and environment not in a.policy.environments:
        raise Invalid(wording.unknown_environment(environment, a.policy.environments))
    if service:
        service = a.policy.catalog.find(service) or service  # as chat: `API` is api
        if service not in a.policy.catalog.services:
            raise Invalid(wording.unknown_service(service, a.policy.catalog.names))
    return service or None, environment or None


def _spread(s: Spread, p90: bool = True) -> dict[str, float | None]:
    return {"median": s.median, "p90": s.p90} if p90 else {"median": s.median}


def _time(t: datetime) -> str:
    return t.isoformat()


def metrics_json(m: Metrics, service: str | None, environment: str | None) -> dict[str, Any]:
    return {
        "service": service, "environment": environment, "days": m.days,
        "since": _time(m.since), "until": _time(m.until),
        "deploys": m.deploys, "failed": m.failed,
        "deploy_frequency": m.deploy_frequency,
        "lead_time_seconds": _spread(m.lead_time),
        "approval_wait_seconds": _spread(m.approval_wait),
        "change_failure_rate": m.change_failure_rate,
        "time_to_restore_seconds": _spread(m.time_to_restore, p90=False),
        "approvers": m.approvers,
        "weeks": [{"start": _time(w.start), "end": _time(w.end), "deploys": w.deploys, "failed": w.failed,
                   "lead_time_seconds": w.lead_time, "approval_wait_seconds": w.approval_wait} for w in m.weeks],
    }
