"""The delivery metrics page in Chromium against the real bot: a month of deploys of commits
made in its repository (the command deployer's: the lead times' commit times), charts drawn
on the server (a bar per week, lines for lead time and approval wait) with their numbers
beside them, the filters, the CSV (neither for someone not signed in, nor a forged session),
and a phone's width. Screenshots: metrics.png, metrics-phone.png."""

from __future__ import annotations

import csv
import io
import os
import subprocess
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from playwright.sync_api import expect
from redis.asyncio import Redis

from bot.adapters.redis.environments import RedisEnvironments
from bot.runtime.ports import DeployRecord
from tests.adapters.http.console.conftest import Console, in_a_thread
from tests.adapters.http.console.test_console import signed_in

pytestmark = [pytest.mark.redis, pytest.mark.processes, pytest.mark.network]

COMMITS = 12  # one every 2.5 days over the month before now


def commit(repo: Path, at: datetime, n: int) -> str:
    stamp = at.strftime("%Y-%m-%dT%H:%M:%SZ")
    env = {**os.environ, "GIT_AUTHOR_NAME": "dana", "GIT_AUTHOR_EMAIL": "dana@example.com",
           "GIT_COMMITTER_NAME": "dana", "GIT_COMMITTER_EMAIL": "dana@example.com",
           "GIT_AUTHOR_DATE": stamp, "GIT_COMMITTER_DATE": stamp}
    subprocess.run(["git", "-C", str(repo), "commit", "-q", "--allow-empty", "-m", f"change {n}"], check=True,
                   env=env)
    return subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], check=True, capture_output=True,
                          text=True).stdout.strip()


def history(console: Console, now: datetime) -> list[DeployRecord]:
    """Each commit to staging 3 h after it, then to production a day later after an approval
    alice (or erin, every third) gave n * 10 minutes after the ask; every fourth production
    deploy fails and is redeployed an hour later."""
    records = []
    for n in range(COMMITS):
        made = now - timedelta(days=29) + n * timedelta(hours=60)
        sha = commit(Path(console.env["GIT_REPO"]), made, n)
        records.append(DeployRecord("staging", "backend", f"v2.{n}.0", sha, True, made + timedelta(hours=3),
                                    None, f"s{n}", f"staging-{n}"))
        shipped = made + timedelta(days=1, hours=n)
        asked = shipped - timedelta(hours=3)
        approval = {"approval_asked_at": asked, "decided_at": asked + timedelta(minutes=10 * (n + 1)),
                    "decided_by": "erin" if n % 3 == 0 else "alice"}
        records.append(DeployRecord("production", "backend", f"v2.{n}.0", sha, n % 4 != 3, shipped, None,
                                    f"p{n}", f"production-{n}", **approval))
        if n % 4 == 3:
            records.append(DeployRecord("production", "backend", f"v2.{n}.0", sha, True,
                                        shipped + timedelta(hours=1), None, f"r{n}", f"redeploy-{n}"))
    return sorted(records, key=lambda r: r.at)


def test_the_metrics_page_draws_its_charts_with_the_numbers_beside_them(context, browser, console: Console):
    records = history(console, datetime.now(UTC))

    async def store() -> None:
        redis = Redis.from_url(console.redis_url)
        try:
            for r in records:
                await RedisEnvironments(redis).record(r)
        finally:
            await redis.aclose()

    in_a_thread(store())
    page = signed_in(context, console, "alice")
    page.get_by_role("link", name="Metrics").click()
    expect(page.get_by_role("heading", name="Delivery metrics")).to_be_visible()
    page.select_option("#m-env", "production")
    page.select_option("#m-service", "backend")
    page.get_by_role("button", name="Show").click()
    expect(page).to_have_url(f"{console.url}/console/metrics?environment=production&service=backend&days=30")
    production = [r for r in records if r.environment == "production"]
    # 12 deploys and 3 redeploys; 3 failed (n = 3, 7, 11): 20%
    assert len(production) == 15
    expect(page.locator("#v-deploys")).to_have_text("15")
    expect(page.locator("#v-failed")).to_have_text("3")
    expect(page.locator("#v-cfr")).to_have_text("20%")
    # approval n was given (n + 1) * 10 minutes after the ask, n = 0..11: 10..120 min, median
    # (60 + 70) / 2 = 65 min; p90 the ceil(10.8) = 11th smallest: 110 min
    expect(page.locator("#v-wait-median")).to_have_text("1 h 5 min")
    expect(page.locator("#v-wait-p90")).to_have_text("1 h 50 min")
    expect(page.locator("#v-approvers")).to_have_text("alice (8), erin (4)")
    # charts: a bar per week (30 days: 4 weeks and 2 days), lines with a point per week measured
    expect(page.locator("#chart-frequency rect.bar")).to_have_count(5)
    assert page.locator("#chart-frequency rect.bar-failed").count() >= 1
    for chart in ("#chart-lead", "#chart-wait"):
        expect(page.locator(f"{chart} polyline.series").first).to_be_visible()
        assert page.locator(f"{chart} circle").count() >= 4
    box = page.locator("#chart-frequency").bounding_box()
    assert box is not None and box["width"] > 300 and box["height"] > 100  # drawn, not collapsed
    console.shot(page, "metrics")

    rows = list(csv.DictReader(io.StringIO(context.request.get(
        f"{console.url}/console/metrics.csv?environment=production&service=backend&days=30").text())))
    assert [r["period"] for r in rows] == ["week"] * 5 + ["window"]
    assert rows[-1]["deploys"] == "15" and rows[-1]["failed"] == "3"
    assert float(rows[-1]["approval_wait_median_seconds"]) == 3900
    assert sum(int(r["deploys"]) for r in rows[:-1]) == 15

    stranger = browser.new_context()  # no session: the sign-in page, and no figures
    try:
        for path in ("/console/metrics", "/console/metrics.csv"):
            answer = stranger.request.get(f"{console.url}{path}")
            assert answer.status == 401 and "alice" not in answer.text(), path
        forged = stranger.request.get(f"{console.url}/console/metrics.csv",
                                      headers={"Cookie": "deploybot_session=forged.value"})
        assert forged.status == 401
    finally:
        stranger.close()

    bad = context.request.get(f"{console.url}/console/metrics?days=12")
    assert bad.status == 422 and "days must be one of 7, 30, 90" in bad.text()

    page.set_viewport_size({"width": 390, "height": 844})  # a phone
    page.reload()
    expect(page.locator("#chart-lead")).to_be_visible()
    assert page.evaluate("document.documentElement.scrollWidth") <= 390  # nothing wider than the screen
    console.shot(page, "metrics-phone")
