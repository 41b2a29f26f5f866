"""Approvals over time in Slack, end to end: signed requests to the running app, a local
server playing Slack's Web API, real Redis. Time moves by the runner's clock (a fired timer
only wakes the thread; the run decides what is due): reminders in the approval's Slack
thread, the approval message updated in place as approvals come in and when it lapses, a
late click told so, and an escalation asking its people by direct message."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from bot.adapters.channels.slack import SlackNotifier
from bot.adapters.channels.slack.blocks import APPROVE
from tests.adapters.channels.slack import test_slack as base
from tests.adapters.channels.slack.test_slack import new_ts, paused, settled
from tests.deploybot_toml import Toml
from tests.helpers import eventually, ledger_lines, reply

pytestmark = [pytest.mark.redis, pytest.mark.network]

fake_slack, slack = base.fake_slack, base.slack
ALICE, BOB, CAROL, ERIN = "UALICE", "UBOB", "UCAROL", "UERIN"

# erin is the lead on call: asked too when nobody decides in half an hour
PEOPLE = (
    Toml().person("alice", slack="UALICE", email="alice@example.com").person("bob", slack="UBOB")
    .person("carol", slack="UCAROL").person("erin", slack="UERIN")
    .environment("production", protected=True, approvers=["bob", "carol"], remind_after=600, escalate_after=1800,
                 escalate_to=["erin"])
)


@pytest.fixture
def required() -> int:
    return 1


@pytest.fixture
def settings(settings, fake_slack, tmp_path: Path, required: int):
    path = PEOPLE.environment("production", required_approvals=required).write(tmp_path)
    return settings.model_copy(update={
        "deploybot_config": path,
        "slack_bot_token": "xoxb-test-token", "slack_signing_secret": base.SECRET,
        "slack_api_url": fake_slack.base_url,
    })


@pytest.fixture
def app(app):
    # The Slack notifier names who may decide and finds the Slack ids of the people an
    # approval is escalated to through the policy (bot/wiring/app.py passes it when it builds it).
    for notifier in app.runner.notifier.notifiers:
        if isinstance(notifier, SlackNotifier) and notifier.policy is None:
            notifier.policy = app.service.policy
    return app


def blocks_of(call: dict[str, Any]) -> list[dict[str, Any]]:
    found = call["blocks"]
    return found if isinstance(found, list) else json.loads(found)


async def at(app, thread_id: str, when) -> None:
    """Run the thread as a worker would when its timer fires, at `when`."""
    app.runner.clock = lambda: when
    await app.runner.run(thread_id)
    await app.worker.idle()


async def click_in_dm(slack, dm: dict[str, Any], ts: str, user: str, action_id: str = APPROVE):
    """A click on a button of the direct message `dm` (channel: the DM's, as Slack sends it)."""
    button = next(e for b in blocks_of(dm) if b["type"] == "actions" for e in b["elements"]
                  if e["action_id"] == action_id)
    return await slack.interaction({
        "type": "block_actions", "user": {"id": user}, "trigger_id": f"trigger-{new_ts()}",
        "channel": {"id": dm["channel"]},
        "container": {"type": "message", "message_ts": ts, "channel_id": dm["channel"]},
        "message": {"ts": ts},
        "actions": [{"type": "button", "action_id": action_id, "value": button["value"],
                     "block_id": "b", "action_ts": new_ts()}],
    })


async def test_a_pending_approval_is_reminded_in_its_slack_thread_once_per_interval(
    app, slack, fake_slack, fake_llm, ledger
):
    root, _ = await paused(app, slack, fake_slack, fake_llm)
    thread = await settled(app, root)
    request = thread.pending_approval()

    await at(app, thread.id, request.at + timedelta(seconds=601))
    [posted] = await fake_slack.wait_for("chat.postMessage", thread_ts=root, text="Reminder")
    assert f"<@{BOB}> or <@{CAROL}>" in posted["text"]  # who may decide, pinged
    assert f"{request.expires_at:%Y-%m-%d %H:%M} UTC" in posted["text"]
    assert "backend v1.2.3 to production" in posted["text"]

    await at(app, thread.id, request.at + timedelta(seconds=700))  # not due again yet
    await at(app, thread.id, request.at + timedelta(seconds=1201))
    await fake_slack.wait_for("chat.postMessage", 2, thread_ts=root, text="Reminder")
    thread = await app.service.get(thread.id)
    assert [e.count for e in thread.events if e.type == "approval_reminded"] == [1, 2]
    assert thread.status() == "waiting_for_approval" and ledger_lines(ledger) == []


async def test_an_expired_approval_is_updated_in_place_and_a_late_click_is_refused(
    app, slack, fake_slack, fake_llm, ledger
):
    root, message = await paused(app, slack, fake_slack, fake_llm)
    thread = await settled(app, root)
    request = thread.pending_approval()

    await at(app, thread.id, request.expires_at + timedelta(seconds=1))
    [updated] = await fake_slack.wait_for("chat.update", ts=message["ts"])
    shown = json.dumps(blocks_of(updated))
    assert f"Expired at {request.expires_at:%Y-%m-%d %H:%M} UTC, not deployed" in shown
    assert '"actions"' not in shown and APPROVE not in shown  # no buttons
    await fake_slack.wait_for("chat.postMessage", thread_ts=root, text="nothing was deployed")  # the requester
    thread = await app.service.get(thread.id)
    assert thread.status() != "waiting_for_approval"
    before = thread.version

    assert (await slack.click(APPROVE, message, BOB)).status_code == 200
    [told] = await fake_slack.wait_for("chat.postEphemeral", user=BOB)
    assert f"this approval expired at {request.expires_at:%Y-%m-%d %H:%M} UTC; nothing was deployed" in told["text"]
    thread = await app.service.get(thread.id)
    assert thread.version == before and thread.status() != "waiting_for_approval"
    assert ledger_lines(ledger) == []


async def test_escalation_asks_by_direct_message_and_that_approval_counts(app, slack, fake_slack, fake_llm, ledger):
    root, message = await paused(app, slack, fake_slack, fake_llm)
    thread = await settled(app, root)
    request = thread.pending_approval()

    await at(app, thread.id, request.at + timedelta(seconds=1801))
    said = await fake_slack.wait_for("chat.postMessage", thread_ts=root, text="asked")
    assert f"<@{ERIN}>" in said[-1]["text"]  # the thread hears who was asked too
    [dm] = await fake_slack.wait_for("chat.postMessage", channel=ERIN)
    shown = json.dumps(blocks_of(dm))
    assert "you are asked too" in shown and APPROVE in shown and "backend" in shown
    dm_ts = fake_slack.answer(dm)["ts"]

    fake_llm.script(reply(intent="done_for_now", message="backend v1.2.3 is live"))
    assert (await click_in_dm(slack, dm, dm_ts, ERIN)).status_code == 200
    done = await settled(app, root)
    assert done.status() == "done" and len(ledger_lines(ledger)) == 1
    [decision] = [e for e in done.events if e.type == "human_response"]
    assert decision.person == "erin" and decision.approve is True
    for channel, ts in ((base.CHANNEL, message["ts"]), (ERIN, dm_ts)):  # both updated in place
        [updated] = await fake_slack.wait_for("chat.update", channel=channel, ts=ts)
        assert f"Approved by <@{ERIN}>" in json.dumps(blocks_of(updated))
        assert '"actions"' not in json.dumps(blocks_of(updated))


@pytest.mark.parametrize("required", [2])
async def test_two_approvals_show_their_progress_in_place_and_keep_the_buttons(
    app, slack, fake_slack, fake_llm, ledger
):
    root, message = await paused(app, slack, fake_slack, fake_llm)
    assert "0 of 2 approvals" in json.dumps(message["blocks"])

    assert (await slack.click(APPROVE, message, BOB)).status_code == 200
    [progress] = await fake_slack.wait_for("chat.update", ts=message["ts"])
    shown = json.dumps(blocks_of(progress))
    assert f"1 of 2: approved by <@{BOB}>" in shown and APPROVE in shown  # still open: buttons kept
    thread = await settled(app, root)
    assert thread.status() == "waiting_for_approval" and ledger_lines(ledger) == []

    assert (await slack.click(APPROVE, message, BOB)).status_code == 200  # not twice by one person
    [told] = await fake_slack.wait_for("chat.postEphemeral", user=BOB)
    assert "you have approved already" in told["text"]

    fake_llm.script(reply(intent="done_for_now", message="backend v1.2.3 is live"))
    assert (await slack.click(APPROVE, message, CAROL)).status_code == 200
    done = await settled(app, root)
    assert done.status() == "done" and len(ledger_lines(ledger)) == 1
    final = (await fake_slack.wait_for("chat.update", 2, ts=message["ts"]))[-1]
    shown = json.dumps(blocks_of(final))
    assert f"Approved by <@{BOB}>, <@{CAROL}>" in shown and '"actions"' not in shown


@pytest.mark.parametrize("required", [2])
async def test_a_reminder_of_one_of_two_names_only_who_may_still_decide(app, slack, fake_slack, fake_llm):
    root, message = await paused(app, slack, fake_slack, fake_llm)
    await slack.click(APPROVE, message, BOB)
    thread = await eventually(lambda: _approved_once(app, root))
    request = thread.pending_approval()
    await at(app, thread.id, request.at + timedelta(seconds=601))
    [posted] = await fake_slack.wait_for("chat.postMessage", thread_ts=root, text="Reminder")
    assert f"<@{CAROL}>" in posted["text"] and f"<@{BOB}>" not in posted["text"]


async def _approved_once(app, root: str):
    thread = await settled(app, root)
    return thread if any(e.type == "human_response" for e in thread.events) else None
