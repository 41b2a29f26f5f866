"""A deploy's verification in Slack, end to end (signed requests to the running app, a local
server playing Slack's Web API, real Redis, a real HTTP endpoint for the check): one message,
posted when the bake starts and updated in place with each round's values; a failure updated
there and said anew in the thread, with the failing value."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from bot.testing.prometheus import Exporter
from tests.adapters.channels.slack import test_slack as base
from tests.helpers import reply

pytestmark = [pytest.mark.prometheus, pytest.mark.redis, pytest.mark.network]

fake_slack, slack = base.fake_slack, base.slack


@pytest.fixture
def endpoint() -> Iterator[Exporter]:
    served = Exporter()
    yield served
    served.stop()


@pytest.fixture
def settings(settings, fake_slack, tmp_path: Path, endpoint: Exporter):
    path = tmp_path / "deploybot.toml"
    path.write_text(f"""
[services.backend]
[services.frontend]
[services.backend.verify.staging]
bake = "1h"
interval = "1s"
[[services.backend.verify.staging.http]]
url = "{endpoint.url}/health"
contains = "ok"
""")
    return settings.model_copy(update={
        "deploybot_config": path, "slack_bot_token": "xoxb-test-token", "slack_signing_secret": base.SECRET,
        "slack_api_url": fake_slack.base_url, "approvers": "production:UBOB;staging:*",
    })


async def test_the_verification_message_is_updated_in_place_and_a_failure_told_in_the_thread(
    app, slack, fake_slack, fake_llm, endpoint,
):
    fake_llm.default = reply(intent="done_for_now", message="done")
    response, root = await slack.mention("deploy backend v1.2.3 to staging")
    assert response.status_code == 200
    [posted] = await fake_slack.wait_for("chat.postMessage", thread_ts=root, text="Verifying", within=20)
    assert "v1.2.3" in posted["text"] and "/health" in posted["text"]
    ts = fake_slack.answer(posted)["ts"]
    updates = await fake_slack.wait_for("chat.update", text="HTTP 200 (holds)", within=20)
    assert updates[0]["ts"] == ts
    endpoint.health_status = 503
    # the round that saw it and the verdict both update the message (one or two updates, by
    # how the rounds fell): always the same message
    failed = await fake_slack.wait_for("chat.update", text="HTTP 503, not 200 (FAILS)", within=20)
    assert {f["ts"] for f in failed} == {updates[0]["ts"]}
    [told] = await fake_slack.wait_for("chat.postMessage", thread_ts=root, text="FAILED", within=20)
    assert "HTTP 503, not 200" in told["text"] and "/health" in told["text"]
    assert len(fake_slack.matching("chat.postMessage", thread_ts=root, text="Verifying")) == 1
