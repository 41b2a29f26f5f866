"""GET /metrics/delivery and GET /metrics on the real app (uvicorn, real Redis, the git
repository of the command deployer for commit times), behind API_TOKEN; and a real Prometheus
(/usr/bin/prometheus) scraping /metrics with the token, read back through its query API."""

from __future__ import annotations

import asyncio
import os
import subprocess
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest

from bot.runtime.ports import DeployRecord
from bot.testing.prometheus import PrometheusServer

pytestmark = [pytest.mark.prometheus, pytest.mark.redis, pytest.mark.processes, pytest.mark.network]

TOKEN = "metrics-shared-token-value"
PROMETHEUS = "/usr/bin/prometheus"


@pytest.fixture
def settings(settings):
    return settings.model_copy(update={"api_token": TOKEN})


def sha(repo: Path, tag: str) -> str:
    return subprocess.run(["git", "-C", str(repo), "rev-parse", f"{tag}^{{commit}}"], check=True,
                          capture_output=True, text=True).stdout.strip()


async def seed(app, repo: Path, now: datetime) -> None:
    """make_repo's commits: v1.2.1 at 2026-11-01 12:00 UTC, v1.2.2 a day later, v1.2.3 two."""
    c1, c2, c3 = (sha(repo, t) for t in ("v1.2.1", "v1.2.2", "v1.2.3"))

    def rec(n: int, at: datetime, commit: str, ok: bool = True, env: str = "production", **kw) -> DeployRecord:
        return DeployRecord(env, "backend", f"v{n}", commit, ok, at, None, f"t{n}", f"d{n}", started_at=at - timedelta(
            seconds=40), **kw)

    day, hour = timedelta(days=1), timedelta(hours=1)
    for r in (
        rec(0, now - 10 * day, c1),  # outside a 7-day window (in the counters: they count all time)
        rec(1, now - 3 * day, c1, approval_asked_at=now - 3 * day - hour,
            decided_at=now - 3 * day - hour + timedelta(minutes=10), decided_by="alice"),
        rec(2, now - 2 * day, c2, ok=False, approval_asked_at=now - 2 * day - 2 * hour,
            decided_at=now - 2 * day - hour, decided_by="bob"),
        rec(3, now - 2 * day + timedelta(minutes=30), c2),
        rec(4, now - day, c3, approval_asked_at=now - day - timedelta(minutes=20),
            decided_at=now - day - timedelta(minutes=10), decided_by="alice"),
        rec(5, now - day, c3, env="staging"),  # another environment
    ):
        await app.environments.record(r)


async def test_delivery_metrics_of_a_seeded_history_behind_the_token(api, app, git_repo):
    now = datetime.now(UTC)
    await seed(app, git_repo, now)
    answer = await api.get("/metrics/delivery", params={"service": "backend", "environment": "production", "days": 7})
    assert answer.status_code == 200, answer.text
    m = answer.json()
    # in 7 days: d1..d4; d2 failed: 1 of 4; 3 succeeded over 7 days
    assert (m["deploys"], m["failed"], m["change_failure_rate"]) == (4, 1, 0.25)
    assert m["deploy_frequency"] == pytest.approx(3 / 7)
    # lead: L = d1 - v1.2.1's time; d3 - v1.2.2 = (now - 2 d + 30 min) - (Nov 1 + 1 d) = L + 1800;
    # d4 - v1.2.3 = (now - 1 d) - (Nov 1 + 2 d) = L. Sorted [L, L, L + 1800]: median L, p90 (3rd) L + 1800
    lead = ((now - timedelta(days=3)) - datetime(2026, 11, 1, 12, tzinfo=UTC)).total_seconds()
    assert m["lead_time_seconds"] == pytest.approx({"median": lead, "p90": lead + 1800})
    # waits [600 (d1), 3600 (d2), 600 (d4)]: median 600, p90 3600; restore d2 -> d3: 1800
    assert m["approval_wait_seconds"] == {"median": 600, "p90": 3600}
    assert m["time_to_restore_seconds"] == {"median": 1800}
    assert m["approvers"] == {"alice": 2, "bob": 1}
    everywhere = (await api.get("/metrics/delivery", params={"days": 7})).json()
    assert everywhere["deploys"] == 5 and everywhere["environment"] is None  # staging's d5 too

    for params, says in (({"days": 0}, "greater than or equal to 1"), ({"days": "week"}, "valid integer"),
                         ({"environment": "moon"}, "unknown environment 'moon'"),
                         ({"service": "nope"}, "unknown service 'nope'")):
        refused = await api.get("/metrics/delivery", params=params)
        assert refused.status_code == 422 and says in refused.text, (params, refused.text)
    for forged in ("", "Bearer wrong-token", "Bearer dbt_forged.personal"):
        for path in ("/metrics/delivery", "/metrics"):
            assert (await api.get(path, headers={"Authorization": forged})).status_code == 401, (path, forged)

    scraped = (await api.get("/metrics")).text
    assert 'deploybot_deploys_total{environment="production",outcome="success",service="backend"} 4.0' in scraped
    assert 'deploybot_deploys_total{environment="production",outcome="failure",service="backend"} 1.0' in scraped
    assert 'deploybot_approval_wait_seconds_count{environment="production",service="backend"} 3.0' in scraped
    assert 'deploybot_approval_wait_seconds_sum{environment="production",service="backend"} 4800.0' in scraped
    assert 'deploybot_deploy_duration_seconds_bucket{environment="staging",le="60.0",outcome="success",' \
           'service="backend"} 1.0' in scraped


async def answer(prom: httpx.AsyncClient, query: str) -> list:
    """What Prometheus answers for `query`; nothing while it is not up or not ready (a 503 in
    plain text while it starts)."""
    try:
        response = await prom.get("/api/v1/query", params={"query": query})
    except httpx.TransportError:
        return []
    return response.json()["data"]["result"] if response.status_code == 200 else []


async def test_a_real_prometheus_scrapes_the_counters_with_the_token(api, app, git_repo):
    if not os.access(PROMETHEUS, os.X_OK):
        pytest.fail(f"{PROMETHEUS} is missing: `make install` installs it (apt-get install prometheus)")
    await seed(app, git_repo, datetime.now(UTC))
    prometheus = PrometheusServer(f"{api.base_url.host}:{api.base_url.port}", job="deploybot", bearer=TOKEN)
    query = 'deploybot_deploys_total{service="backend",environment="production",outcome="success"}'
    try:
        async with httpx.AsyncClient(base_url=prometheus.url) as prom:
            deadline = time.monotonic() + 60
            while not (result := await answer(prom, query)):
                assert time.monotonic() < deadline and prometheus.process.poll() is None, "Prometheus read nothing"
                await asyncio.sleep(0.2)
            assert result[0]["value"][1] == "4"
            up = await answer(prom, 'up{job="deploybot"}')
            assert up[0]["value"][1] == "1"
    finally:
        prometheus.stop()
