"""A deploy's environment lock holds while a channel is slow to answer: Slack rate-limits the
bot's post that the deploy started (429 with a Retry-After longer than the lock's time to
live), and a second deploy of the same service and environment asked meanwhile meets the
lock instead of deploying beside the first. Real HTTP to the app, a Slack Web API stand-in,
real Redis, a deploy command that writes down when each deploy starts and ends."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest

from tests.adapters.channels.slack import test_slack as base
from tests.adapters.channels.slack.test_slack import settled

pytestmark = [pytest.mark.redis, pytest.mark.processes, pytest.mark.network]

fake_slack, slack = base.fake_slack, base.slack

TTL_MS = 1_000  # the lock's time to live here (a minute in production)
RETRY_AFTER = 4  # seconds Slack says to wait: the lock would lapse several times over
DEPLOY_SECONDS = 3

SPANS = """
import os, sys, time
def note(what):
    with open(sys.argv[1], "a") as f:
        f.write(what + " " + os.environ["DEPLOY_ID"] + "\\n")
note("start")
time.sleep(float(sys.argv[2]))
note("end")
"""


@pytest.fixture
def spans(tmp_path: Path) -> Path:
    return tmp_path / "spans.log"


@pytest.fixture
def settings(settings, fake_slack, tmp_path: Path, spans: Path):
    script = tmp_path / "spans.py"
    script.write_text(SPANS)
    return settings.model_copy(update={
        "slack_bot_token": "xoxb-test-token", "slack_signing_secret": base.SECRET,
        "slack_api_url": fake_slack.base_url,
        "deploy_command": f"{sys.executable} {script} {spans} {DEPLOY_SECONDS}",
    })


@pytest.fixture
def app(app):
    app.runner.deploying.lock_ttl_ms = TTL_MS
    return app


def overlaps(spans: Path) -> list[str]:
    """Each deploy that started while another was running."""
    running: set[str] = set()
    found = []
    for line in spans.read_text().splitlines():
        what, deploy_id = line.split()
        if what == "start":
            if running:
                found.append(f"{deploy_id} started while {sorted(running)} ran")
            running.add(deploy_id)
        else:
            running.discard(deploy_id)
    return found


async def test_a_rate_limited_slack_never_lets_a_second_deploy_in_beside_the_first(app, slack, fake_slack, spans):
    deploying = "Deploying backend v1.2.3 to staging"
    fake_slack.fail("chat.postMessage", 429, {"ok": False, "error": "ratelimited"},
                    {"Retry-After": str(RETRY_AFTER)}, when={"text": deploying})
    _, first_ts = await slack.mention("deploy backend v1.2.3 to staging")
    # The first deploy holds the lock and waits out Slack's rate limit on saying it started.
    await fake_slack.wait_for("chat.postMessage", text=deploying)
    await asyncio.sleep(2 * TTL_MS / 1000)  # long enough for an unrenewed lock to have lapsed
    _, second_ts = await slack.mention("deploy backend v1.2.3 to staging")

    first = await settled(app, first_ts, within=30)
    second = await settled(app, second_ts, within=30)

    assert overlaps(spans) == []
    [result] = [e for e in first.events if e.type == "deploy_result"]
    assert result.ok and first.status() == "done"
    assert [e for e in second.events if e.type == "deploy_result"] == []
    assert f"locked by deploy {result.deploy_id}" in second.events[-1].message
    assert [line.split()[1] for line in spans.read_text().splitlines()] == [result.deploy_id] * 2
