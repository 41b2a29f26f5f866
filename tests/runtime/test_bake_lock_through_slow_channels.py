"""A verifying deploy's lock holds while a channel is slow to hear that the bake started:
Slack rate-limits the "Verifying" post for longer than the lock's time to live, and a second
deploy of the same service and environment asked meanwhile meets the lock instead of
deploying in the middle of the bake. Real HTTP to the app, a Slack Web API stand-in, a real
HTTP endpoint for the check, real Redis."""

from __future__ import annotations

import asyncio

import pytest

from tests.adapters.channels.slack import test_slack as base
from tests.adapters.channels.slack.test_slack import settled
from tests.adapters.channels.slack.test_slack_verification import endpoint, settings  # noqa: F401 (fixtures)
from tests.helpers import ledger_lines

pytestmark = [pytest.mark.redis, pytest.mark.processes, pytest.mark.network]

fake_slack, slack = base.fake_slack, base.slack

TTL_MS = 1_000  # the deploy's lock here (a minute in production)
RETRY_AFTER = 4  # seconds Slack says to wait before the bake's message may be posted


@pytest.fixture
def app(app):
    app.runner.deploying.lock_ttl_ms = TTL_MS
    return app


async def test_a_rate_limited_slack_never_lets_a_deploy_in_during_the_bake(app, slack, fake_slack, ledger):
    fake_slack.fail("chat.postMessage", 429, {"ok": False, "error": "ratelimited"},
                    {"Retry-After": str(RETRY_AFTER)}, when={"text": "Verifying"})
    _, first_ts = await slack.mention("deploy backend v1.2.3 to staging")
    await fake_slack.wait_for("chat.postMessage", text="Verifying", within=20)  # answered 429
    await asyncio.sleep(2 * TTL_MS / 1000)  # long enough for an unrenewed lock to have lapsed
    _, second_ts = await slack.mention("deploy backend v1.2.2 to staging")
    second = await settled(app, second_ts, within=30)

    first = await app.service.get(await base.bot_thread(app, first_ts))
    [result] = [e for e in first.events if e.type == "deploy_result"]
    assert [e for e in second.events if e.type == "deploy_result"] == []
    assert f"locked by deploy {result.deploy_id}" in second.events[-1].message
    assert len(ledger_lines(ledger)) == 1
