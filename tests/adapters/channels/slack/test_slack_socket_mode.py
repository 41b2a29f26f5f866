"""Socket Mode end to end: the real Bolt Socket Mode client of a running app connects to a
local WebSocket stand-in (the Web API stand-in answers apps.connections.open with its
ws:// URL), which sends events_api, interactive and slash_commands envelopes and checks
each is acknowledged. A mention, an approval click and a slash command, over it."""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest

from bot.adapters.channels.slack.blocks import APPROVE
from bot.testing.fake_slack import BOT_USER, FakeSlack
from bot.testing.fake_socket_mode import FakeSocketMode
from tests.adapters.channels.slack import test_slack as base
from tests.adapters.channels.slack.test_slack import ALICE, APPROVER, CHANNEL, approval_message, new_ts, settled
from tests.helpers import eventually, ledger_lines

pytestmark = [pytest.mark.redis, pytest.mark.network]

fake_slack = base.fake_slack


@pytest.fixture
def settings(settings, fake_slack):
    return settings.model_copy(update={
        "slack_bot_token": "xoxb-test-token", "slack_signing_secret": base.SECRET,
        "slack_app_token": "xapp-test-token", "slack_api_url": fake_slack.base_url,
        "approvers": f"production:{APPROVER};staging:*",
    })


@pytest.fixture
async def socket(fake_slack: FakeSlack) -> AsyncIterator[FakeSocketMode]:
    stand_in = await FakeSocketMode().start()
    fake_slack.socket_url = stand_in.url
    yield stand_in
    await stand_in.stop()


@pytest.fixture
async def running(app, socket):
    await app.start()  # the Slack channel connects over Socket Mode; a worker runs in-process
    await socket.connected()
    return app


def mention(text: str) -> dict[str, Any]:
    ts = new_ts()
    return {
        "type": "event_callback", "team_id": "T1", "api_app_id": "A1", "event_id": f"Ev{ts}",
        "event_time": int(time.time()),
        "event": {"type": "app_mention", "user": ALICE, "text": f"<@{BOT_USER}> {text}", "ts": ts,
                  "channel": CHANNEL, "event_ts": ts},
    }


def click(action_id: str, message: dict[str, Any], user: str) -> dict[str, Any]:
    button = next(e for b in message["blocks"] if b["type"] == "actions" for e in b["elements"]
                  if e["action_id"] == action_id)
    return {
        "type": "block_actions", "team": {"id": "T1"}, "api_app_id": "A1", "user": {"id": user},
        "trigger_id": f"trigger-{new_ts()}", "channel": {"id": CHANNEL},
        "container": {"type": "message", "message_ts": message["ts"], "channel_id": CHANNEL},
        "message": {"ts": message["ts"], "thread_ts": message["thread_ts"]},
        "actions": [{"type": "button", "action_id": action_id, "value": button["value"], "block_id": "b",
                     "action_ts": new_ts()}],
    }


def slash(text: str, fake_slack: FakeSlack) -> dict[str, Any]:
    return {
        "token": "legacy", "team_id": "T1", "team_domain": "acme", "channel_id": CHANNEL, "channel_name": "deploys",
        "user_id": ALICE, "user_name": "alice", "command": "/deploy", "text": text, "api_app_id": "A1",
        "is_enterprise_install": "false", "response_url": fake_slack.base_url + "response",
        "trigger_id": f"trigger-{new_ts()}",
    }


async def test_a_mention_an_approval_click_and_a_slash_command_over_socket_mode(
    running, socket, fake_slack, ledger
):
    app = running
    assert app.channels["slack"].routes() == ()  # Socket Mode: no HTTP endpoint for Slack
    assert fake_slack.called("apps.connections.open")

    # A mention: acknowledged, recorded, the deploy proposed with Approve / Reject buttons.
    payload = mention("deploy backend v1.2.3 to production")
    envelope = await socket.send("events_api", payload)
    assert (await socket.ack(envelope)).seconds < 3
    root = payload["event"]["ts"]
    thread = await settled(app, root)
    assert thread.status() == "waiting_for_approval"
    message = await approval_message(fake_slack, root)
    assert ledger_lines(ledger) == []

    # The approver clicks Approve: acknowledged, and the deploy runs.
    envelope = await socket.send("interactive", click(APPROVE, message, APPROVER))
    assert (await socket.ack(envelope)).seconds < 3
    thread = await settled(app, root)
    assert thread.status() == "done" and len(ledger_lines(ledger)) == 1
    updated = (await fake_slack.wait_for("chat.update", ts=message["ts"]))[-1]
    assert f"Approved by <@{APPROVER}>" in json.dumps(updated["blocks"])
    await fake_slack.wait_for("chat.postMessage", thread_ts=root, text="Deployed backend v1.2.3")

    # /deploy: acknowledged at once (Slack wants it within 3 s), posted in the channel, answered
    # in that post's thread: staging needs no approval, so it deploys.
    envelope = await socket.send("slash_commands", slash("backend v1.2.2 to staging", fake_slack),
                                 accepts_response_payload=True)
    assert (await socket.ack(envelope)).seconds < 3
    [posted] = await fake_slack.wait_for("chat.postMessage", channel=CHANNEL, text="/deploy backend v1.2.2 to staging")
    ts = fake_slack.answer(posted)["ts"]
    thread = await settled(app, ts)
    assert thread.events[0].text == "deploy backend v1.2.2 to staging"
    assert thread.status() == "done"
    await eventually(lambda: len(ledger_lines(ledger)) == 2)
    await fake_slack.wait_for("chat.postMessage", thread_ts=ts, text="Deployed backend v1.2.2")

    # /deploy help: answered privately, no thread.
    envelope = await socket.send("slash_commands", slash("help", fake_slack), accepts_response_payload=True)
    await socket.ack(envelope)
    [told] = await fake_slack.wait_for("response")
    assert told["response_type"] == "ephemeral"
    assert set(socket.acks) == {f"env-{i}" for i in range(1, 5)}  # every envelope acknowledged once
