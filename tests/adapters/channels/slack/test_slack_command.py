"""`/deploy` over HTTP: signed slash-command requests to the running app, the Slack Web API
played by a local server. The command is acknowledged at once; the bot then posts it in the
channel and answers in that post's thread, like a mention."""

from __future__ import annotations

import asyncio
import itertools
import json
import time
from typing import Any
from urllib.parse import urlencode

import pytest

from bot.adapters.channels.slack.names import slack_conversation
from bot.runtime.service import NotFound
from bot.testing.fake_slack import FakeSlack
from tests.adapters.channels.slack import test_slack as base
from tests.adapters.channels.slack.test_slack import ALICE, APPROVER, CHANNEL, Slack
from tests.helpers import eventually

pytestmark = [pytest.mark.redis, pytest.mark.processes, pytest.mark.network]

# The fixtures of test_slack.py: the stand-in, settings pointing at it, a signed-request sender.
fake_slack, settings, slack = base.fake_slack, base.settings, base.slack

_trigger = itertools.count(1)


def command_payload(fake_slack: FakeSlack, text: str, user: str = ALICE, trigger_id: str | None = None) -> dict:
    return {
        "token": "legacy", "team_id": "T1", "team_domain": "acme", "channel_id": CHANNEL, "channel_name": "deploys",
        "user_id": user, "user_name": "alice", "command": "/deploy", "text": text, "api_app_id": "A1",
        "response_url": fake_slack.base_url + "response", "trigger_id": trigger_id or f"trig-{next(_trigger)}",
    }


async def command(slack: Slack, fake_slack: FakeSlack, text: str, **kw: Any):
    body = urlencode(command_payload(fake_slack, text, **kw))
    started = time.monotonic()
    response = await slack.post(body, "application/x-www-form-urlencoded")
    return response, time.monotonic() - started


async def thread_of(app, ts: str) -> str | None:
    value = await app.store.redis.get(app.store.keys.conversation(slack_conversation(CHANNEL, ts)))
    return value.decode() if value else None


async def test_deploy_command_is_acknowledged_at_once_posted_in_the_channel_and_answered_in_its_thread(
    app, slack, fake_slack
):
    # How soon the ack comes is measured by bench/slack_ack.py, not asserted here (no timing
    # thresholds in tests): here, that it is the ack and the work happens after it.
    response, _ = await command(slack, fake_slack, "backend v1.2.3 to production")
    assert response.status_code == 200
    [posted] = await fake_slack.wait_for("chat.postMessage", channel=CHANNEL,
                                         text="/deploy backend v1.2.3 to production")
    assert posted["text"].startswith(f"<@{ALICE}> asked:") and "thread_ts" not in posted
    ts = fake_slack.answer(posted)["ts"]
    thread_id = await eventually(lambda: thread_of(app, ts))

    async def waiting():
        await app.worker.idle()
        try:  # the conversation is bound to its thread id a moment before the thread is stored
            thread = await app.service.get(thread_id)
        except NotFound:
            return None
        return thread if thread.status() == "waiting_for_approval" else None

    thread = await eventually(waiting, within=15)
    said = thread.events[0]
    assert (said.text, said.channel, said.user) == ("deploy backend v1.2.3 to production", "slack", ALICE)
    assert (thread.origin.at("slack", "channel"), thread.origin.at("slack", "thread_ts")) == (CHANNEL, ts)
    await fake_slack.wait_for("chat.postMessage", thread_ts=ts, text="Approval needed")

    # A reply in that Slack thread is part of the conversation, as under a mention.
    await slack.reply("why production?", thread_ts=ts)
    await eventually(lambda: _has_text(app, thread_id, "why production?"))


async def _waiting_for_approval(app) -> bool:
    return [(await app.service.get(i)).status() for i in await app.store.recent(10)] == ["waiting_for_approval"]


async def _has_text(app, thread_id: str, text: str) -> bool:
    return any(getattr(e, "text", None) == text for e in (await app.service.get(thread_id)).events)


async def test_help_and_status_are_answered_privately_without_a_thread(app, slack, fake_slack):
    response, _ = await command(slack, fake_slack, "help")
    assert response.status_code == 200
    [help_text] = await fake_slack.wait_for("response")
    assert help_text["response_type"] == "ephemeral" and "/deploy backend v1.2.3 to production" in help_text["text"]
    assert await app.store.recent(10) == []

    await command(slack, fake_slack, "status")
    [_, nothing] = await fake_slack.wait_for("response", 2)
    assert "Nothing is running" in nothing["text"]

    await command(slack, fake_slack, "backend v1.2.3 to production")
    # The command is acked first and run after: wait for the thread to reach its approval.
    await eventually(lambda: _waiting_for_approval(app))
    await command(slack, fake_slack, "status")
    status = (await fake_slack.wait_for("response", 3))[-1]
    assert "deploy backend v1.2.3 to production" in status["text"] and "waiting for approval" in status["text"]
    assert fake_slack.matching("chat.postMessage", text="status") == []  # never posted in the channel
    # What was asked elsewhere (the API, email, another channel) is not this channel's business.
    await app.service.launch("deploy frontend v1.2.1 to production: private", app.service.unproven("mallory"))
    await command(slack, fake_slack, "status")
    status = (await fake_slack.wait_for("response", 4))[-1]
    assert "private" not in status["text"] and "deploy backend v1.2.3" in status["text"]


async def test_a_command_delivered_twice_starts_one_thread(app, slack, fake_slack):
    for _ in range(2):
        response, _ = await command(slack, fake_slack, "backend v1.2.3 to staging", trigger_id="same-trigger")
        assert response.status_code == 200
    await fake_slack.wait_for("chat.postMessage", channel=CHANNEL, text="/deploy backend")
    await eventually(lambda: app.store.recent(10))
    await asyncio.gather(*app.adapter("slack").background)  # both deliveries' work is over
    assert len(await app.store.recent(10)) == 1
    assert len(fake_slack.matching("chat.postMessage", text="/deploy backend")) == 1


async def test_a_channel_the_bot_is_not_in_is_told_privately(app, slack, fake_slack):
    fake_slack.fail("chat.postMessage", 200, {"ok": False, "error": "not_in_channel"})
    await command(slack, fake_slack, "backend v1.2.3 to staging")
    [told] = await fake_slack.wait_for("response")
    assert "invite it" in told["text"]
    assert await app.store.recent(10) == []


async def test_a_forged_command_is_refused(app, slack, fake_slack):
    body = urlencode(command_payload(fake_slack, "backend v1.2.3 to production", user=APPROVER))
    response = await slack.post(body, "application/x-www-form-urlencoded", secret="forged")
    assert response.status_code == 401
    assert fake_slack.called("chat.postMessage") == [] and json.dumps(fake_slack.calls).count("response") == 0
