"""Slack end to end: signed Events API and interactivity requests over real HTTP to the
running app; a local server plays Slack's Web API and records what the bot sends."""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
import time
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote, urlencode

import httpx
import pytest
from slack_sdk.signature import SignatureVerifier

from bot.adapters.channels.slack.blocks import APPROVE, REJECT, REJECT_VIEW
from bot.adapters.channels.slack.names import slack_conversation
from bot.runtime.service import NotFound
from bot.testing.fake_slack import BOT_USER, FakeSlack
from tests.helpers import eventually, ledger_lines, reply

pytestmark = [pytest.mark.redis, pytest.mark.network]

SECRET = "slack-signing-secret-for-tests"
CHANNEL = "C0DEPLOY"
APPROVER, OTHER_APPROVER, ALICE = "UAPPROVER", "UAPPROVER2", "UALICE"
_ts = itertools.count(1)


@pytest.fixture
def fake_slack() -> Iterator[FakeSlack]:
    slack = FakeSlack().start()
    yield slack
    slack.stop()


@pytest.fixture
def settings(settings, fake_slack):
    return settings.model_copy(update={
        "slack_bot_token": "xoxb-test-token",
        "slack_signing_secret": SECRET,
        "slack_api_url": fake_slack.base_url,
        "approvers": f"production:{APPROVER},{OTHER_APPROVER};staging:*",
    })


def new_ts() -> str:
    return f"1700001000.{next(_ts):06d}"


class Slack:
    """Sends requests the way Slack does: signed, JSON events or form-encoded payloads."""

    def __init__(self, api: httpx.AsyncClient) -> None:
        self.api = api

    async def post(self, body: str, content_type: str, secret: str = SECRET, age: int = 0, **headers: str):
        timestamp = str(int(time.time()) - age)
        signature = SignatureVerifier(secret).generate_signature(timestamp=timestamp, body=body)
        return await self.api.post("/slack/events", content=body, headers={
            "Content-Type": content_type,
            "X-Slack-Request-Timestamp": timestamp,
            "X-Slack-Signature": signature,
            **headers,
        })

    async def event(self, event: dict[str, Any], event_id: str | None = None, **kw: Any) -> httpx.Response:
        body = json.dumps({
            "type": "event_callback", "team_id": "T1", "api_app_id": "A1",
            "event_id": event_id or f"Ev{new_ts()}", "event_time": int(time.time()), "event": event,
        })
        return await self.post(body, "application/json", **kw)

    async def mention(self, text: str, user: str = ALICE, thread_ts: str | None = None, **kw: Any):
        ts = new_ts()
        event = {"type": "app_mention", "user": user, "text": f"<@{BOT_USER}> {text}", "ts": ts,
                 "channel": CHANNEL, "event_ts": ts}
        if thread_ts:
            event["thread_ts"] = thread_ts
        response = await self.event(event, **kw)
        return response, ts

    async def reply(self, text: str, thread_ts: str, user: str = ALICE, **extra: Any) -> httpx.Response:
        ts = new_ts()
        return await self.event({"type": "message", "channel_type": "channel", "user": user, "text": text,
                                 "ts": ts, "thread_ts": thread_ts, "channel": CHANNEL, **extra})

    async def interaction(self, payload: dict[str, Any], **kw: Any) -> httpx.Response:
        body = urlencode({"payload": json.dumps({"team": {"id": "T1"}, "api_app_id": "A1", **payload})})
        return await self.post(body, "application/x-www-form-urlencoded", **kw)

    async def click(self, action_id: str, message: dict[str, Any], user: str) -> httpx.Response:
        button = next(e for b in message["blocks"] if b["type"] == "actions" for e in b["elements"]
                      if e["action_id"] == action_id)
        return await self.interaction({
            "type": "block_actions", "user": {"id": user}, "trigger_id": f"trigger-{new_ts()}",
            "channel": {"id": CHANNEL},
            "container": {"type": "message", "message_ts": message["ts"], "channel_id": CHANNEL},
            "message": {"ts": message["ts"], "thread_ts": message["thread_ts"]},
            "actions": [{"type": "button", "action_id": action_id, "value": button["value"],
                         "block_id": "b", "action_ts": new_ts()}],
        })

    async def submit_feedback(self, view: dict[str, Any], user: str, feedback: str) -> httpx.Response:
        return await self.interaction({
            "type": "view_submission", "user": {"id": user},
            "view": {"id": "V1", "type": "modal", "callback_id": view["callback_id"],
                     "private_metadata": view["private_metadata"],
                     "state": {"values": {"feedback": {"feedback": {"type": "plain_text_input", "value": feedback}}}}},
        })


@pytest.fixture
def slack(api) -> Slack:
    return Slack(api)


async def bot_thread(app, slack_ts: str) -> str | None:
    value = await app.store.redis.get(app.store.keys.conversation(slack_conversation(CHANNEL, slack_ts)))
    return value.decode() if value else None


async def settled(app, slack_ts: str, within: float = 15):
    async def thread_at_rest():
        thread_id = await bot_thread(app, slack_ts)
        if thread_id:
            await app.worker.idle()
            try:
                thread = await app.service.get(thread_id)
            except NotFound:  # the conversation is bound a moment before its thread is stored
                return None
            if thread.status() != "running":
                return thread
        return None

    return await eventually(thread_at_rest, within, message=f"the thread of Slack thread {slack_ts} did not settle")


async def approval_message(fake_slack: FakeSlack, root: str) -> dict[str, Any]:
    posted = (await fake_slack.wait_for("chat.postMessage", thread_ts=root, text="Approval needed"))[-1]
    blocks = posted["blocks"] if isinstance(posted["blocks"], list) else json.loads(posted["blocks"])
    return {"blocks": blocks, "thread_ts": root, "ts": fake_slack.answer(posted)["ts"]}


async def paused(app, slack: Slack, fake_slack: FakeSlack, fake_llm) -> tuple[str, dict[str, Any]]:
    fake_llm.script(reply(intent="list_git_tags"), reply(
        intent="deploy", service="backend", tag="v1.2.3", environment="production", reason="newest tag"))
    response, root = await slack.mention("deploy the latest backend to production")
    assert response.status_code == 200
    thread = await settled(app, root)
    assert thread.status() == "waiting_for_approval"
    return root, await approval_message(fake_slack, root)


async def test_mention_to_approved_deploy_with_the_message_updated_in_place(app, slack, fake_slack, fake_llm, ledger):
    root, message = await paused(app, slack, fake_slack, fake_llm)
    text = message["blocks"][0]["text"]["text"]
    for expected in ("backend", "`v1.2.3`", "production", f"<@{ALICE}>", "newest tag", "Expires"):
        assert expected in text
    assert ledger_lines(ledger) == []

    fake_llm.script(reply(intent="done_for_now", message="backend v1.2.3 is live on production"))
    assert (await slack.click(APPROVE, message, APPROVER)).status_code == 200
    thread = await settled(app, root)

    assert thread.status() == "done" and len(ledger_lines(ledger)) == 1
    updated = (await fake_slack.wait_for("chat.update", ts=message["ts"]))[-1]
    assert f"Approved by <@{APPROVER}>" in json.dumps(updated["blocks"])
    assert "actions" not in json.dumps(updated["blocks"])  # the buttons are gone
    await fake_slack.wait_for("chat.postMessage", thread_ts=root,
                              text="Deploying backend v1.2.3 to production")
    await fake_slack.wait_for("chat.postMessage", thread_ts=root, text="Deployed backend v1.2.3")
    await fake_slack.wait_for("chat.postMessage", thread_ts=root, text="is live on production")


async def test_reject_asks_for_feedback_in_a_modal_and_the_model_replans(app, slack, fake_slack, fake_llm, ledger):
    root, message = await paused(app, slack, fake_slack, fake_llm)
    assert (await slack.click(REJECT, message, APPROVER)).status_code == 200
    view = (await fake_slack.wait_for("views.open"))[-1]["view"]
    view = json.loads(view) if isinstance(view, str) else view
    assert view["callback_id"] == REJECT_VIEW

    empty = await slack.submit_feedback(view, APPROVER, "   ")
    assert empty.json()["response_action"] == "errors"  # feedback is required

    fake_llm.script(reply(intent="deploy", service="backend", tag="v1.2.2", environment="production"))
    assert (await slack.submit_feedback(view, APPROVER, "v1.2.3 breaks logins, use v1.2.2")).status_code == 200
    thread = await settled(app, root)
    assert thread.pending_approval().tag == "v1.2.2"
    assert "breaks logins" in fake_llm.prompts[-1]
    updated = (await fake_slack.wait_for("chat.update", ts=message["ts"]))[-1]
    assert f"Rejected by <@{APPROVER}>: v1.2.3 breaks logins" in json.dumps(updated["blocks"])
    assert ledger_lines(ledger) == []


async def test_non_approvers_are_told_and_nothing_is_appended(app, slack, fake_slack, fake_llm, ledger):
    root, message = await paused(app, slack, fake_slack, fake_llm)
    before = (await settled(app, root)).version
    for action in (APPROVE, REJECT):
        assert (await slack.click(action, message, ALICE)).status_code == 200
    told = await fake_slack.wait_for("chat.postEphemeral", 2, user=ALICE)
    assert all("You can't decide on this deploy" in t["text"] and "not an approver" in t["text"] for t in told)
    assert fake_slack.called("views.open") == []
    assert (await settled(app, root)).version == before and ledger_lines(ledger) == []


async def test_a_second_click_is_told_who_decided(app, slack, fake_slack, fake_llm, ledger):
    root, message = await paused(app, slack, fake_slack, fake_llm)
    fake_llm.script(reply(intent="done_for_now", message="done"))
    first, second = await asyncio.gather(
        slack.click(APPROVE, message, APPROVER), slack.click(APPROVE, message, OTHER_APPROVER)
    )
    assert first.status_code == second.status_code == 200
    thread = await settled(app, root)
    decisions = [e for e in thread.events if e.type == "human_response"]
    assert len(decisions) == 1 and len(ledger_lines(ledger)) == 1
    loser = OTHER_APPROVER if decisions[0].user == APPROVER else APPROVER
    told = (await fake_slack.wait_for("chat.postEphemeral", user=loser))[-1]
    assert f"already approved by {decisions[0].user} at" in told["text"]

    await slack.click(REJECT, message, loser)  # a late Reject is refused too, without a modal
    await fake_slack.wait_for("chat.postEphemeral", 2, user=loser)
    assert fake_slack.called("views.open") == []


async def test_redelivered_events_are_ignored(app, slack, fake_slack, fake_llm):
    fake_llm.script(reply(intent="done_for_now", message="hello"))
    ts = new_ts()
    event = {"type": "app_mention", "user": ALICE, "text": f"<@{BOT_USER}> hi", "ts": ts, "channel": CHANNEL}
    for retry in ("", "1", "2"):
        headers = {"X-Slack-Retry-Num": retry, "X-Slack-Retry-Reason": "http_timeout"} if retry else {}
        assert (await slack.event(event, event_id="EvSAME", **headers)).status_code == 200
    thread = await settled(app, ts)
    assert [e.type for e in thread.events] == ["user_message", "done_for_now"]
    assert len(fake_llm.prompts) == 1


async def test_forged_or_stale_requests_are_refused(app, slack, fake_llm):
    response, ts = await slack.mention("deploy backend v1.2.3 to staging", secret="not-the-secret")
    assert response.status_code == 401
    response, ts2 = await slack.mention("deploy backend v1.2.3 to staging", age=6 * 60)
    assert response.status_code == 401
    unsigned = await slack.api.post("/slack/events", json={"type": "event_callback", "event": {}})
    assert unsigned.status_code == 401
    assert await bot_thread(app, ts) is None
    assert await bot_thread(app, ts2) is None
    assert fake_llm.prompts == []


async def test_malformed_payloads_are_400_and_logged(slack, caplog):
    caplog.set_level(logging.WARNING)
    for body, content_type in [("{not json", "application/json"), ("[1, 2]", "application/json"),
                               ("payload=%7Bbroken", "application/x-www-form-urlencoded"),
                               ("nothing=here", "application/x-www-form-urlencoded")] + [
        # Signed clicks Bolt could not match to a listener (it raised inside Bolt: a 500).
        ("payload=" + quote(json.dumps({"type": "block_actions", **actions})), "application/x-www-form-urlencoded")
        for actions in ({}, {"actions": []}, {"actions": [{}]}, {"actions": "x"}, {"actions": [{"action_id": 1}]})
    ] + [
        ("payload=" + quote(json.dumps({"type": kind, "view": "x"})), "application/x-www-form-urlencoded")
        for kind in ("view_submission", "view_closed")
    ]:
        assert (await slack.post(body, content_type)).status_code == 400, body
    assert "malformed payload" in caplog.text


async def test_thread_replies_resume_a_waiting_thread(app, slack, fake_slack, fake_llm, ledger):
    fake_llm.script(reply(intent="request_more_information", message="Which environment?"))
    _, root = await slack.mention("deploy backend v1.2.3")
    assert (await settled(app, root)).status() == "waiting_for_human"
    await fake_slack.wait_for("chat.postMessage", thread_ts=root, text="Which environment?")

    fake_llm.script(reply(intent="deploy", service="backend", tag="v1.2.3", environment="staging"),
                    reply(intent="done_for_now", message="on staging"))
    assert (await slack.reply("staging please", root)).status_code == 200  # no mention needed
    thread = await settled(app, root)
    assert thread.status() == "done" and ledger_lines(ledger)[0].endswith("backend v1.2.3 staging")
    assert "staging please" in fake_llm.prompts[1]


async def test_a_plain_reply_while_approval_is_pending_is_feedback_never_approval(
    app, slack, fake_slack, fake_llm, ledger
):
    root, message = await paused(app, slack, fake_slack, fake_llm)
    version = (await settled(app, root)).version
    await slack.reply("approve", root, user=APPROVER)
    told = (await fake_slack.wait_for("chat.postEphemeral", user=APPROVER))[-1]
    assert "cannot approve" in told["text"] and (await settled(app, root)).version == version
    fake_llm.script(reply(intent="request_more_information", message="Which tag instead?"))
    await slack.reply("not this one, it breaks logins", root, user=APPROVER)
    thread = await settled(app, root)
    decision = next(e for e in thread.events if e.type == "human_response")
    assert decision.approve is False and decision.text == "not this one, it breaks logins"
    assert thread.status() == "waiting_for_human" and ledger_lines(ledger) == []
    await fake_slack.wait_for("chat.update", ts=message["ts"], blocks="Rejected by")


async def test_the_bot_ignores_itself_other_bots_and_channel_chatter(app, slack, fake_llm):
    fake_llm.script(reply(intent="request_more_information", message="Which environment?"))
    _, root = await slack.mention("deploy backend v1.2.3")
    before = (await settled(app, root)).version
    await slack.reply("I am the bot talking", root, user=BOT_USER)
    await slack.reply("beep boop", root, user="UOTHERBOT", bot_id="BOTHER")
    await slack.reply("edited", root, subtype="message_changed")
    top_level = await slack.event({"type": "message", "channel_type": "channel", "user": ALICE,
                                   "text": "lunch?", "ts": new_ts(), "channel": CHANNEL})
    assert top_level.status_code == 200
    await app.worker.idle()
    assert (await settled(app, root)).version == before
    assert len(fake_llm.prompts) == 1


async def test_a_direct_message_starts_a_thread(app, slack, fake_slack):
    ts = new_ts()
    await slack.event({"type": "message", "channel_type": "im", "user": ALICE, "text": "list tags",
                       "ts": ts, "channel": CHANNEL})
    thread = await settled(app, ts)
    assert thread.status() == "done" and thread.origin.at("slack", "thread_ts") == ts
    await fake_slack.wait_for("chat.postMessage", thread_ts=ts, text="Tags, newest first: v1.2.3")


async def test_slack_api_errors_are_retried_or_logged_and_events_kept(app, slack, fake_slack, fake_llm, caplog):
    fake_slack.fail("chat.postMessage", 429, {"ok": False, "error": "ratelimited"}, {"Retry-After": "1"})
    fake_llm.script(reply(intent="done_for_now", message="first answer"))
    _, root = await slack.mention("hello")
    await settled(app, root)
    # Delivered after the wait Slack asked for.
    await fake_slack.wait_for("chat.postMessage", thread_ts=root, text="first answer")

    caplog.set_level(logging.ERROR)
    fake_slack.fail("chat.postMessage", 200, {"ok": False, "error": "channel_not_found"})
    fake_llm.script(reply(intent="done_for_now", message="second answer"))
    _, root2 = await slack.mention("hello again")
    thread = await settled(app, root2)
    assert thread.status() == "done" and thread.events[-1].message == "second answer"
    assert "channel_not_found" in caplog.text


async def test_the_message_is_stored_before_the_ack_and_the_loop_runs_after_it(app, slack, fake_llm):
    fake_llm.delay = 1.0  # a slow model: the answer to Slack must not wait for it
    fake_llm.script(reply(intent="done_for_now", message="hi"))
    response, ts = await slack.mention("hello there")
    assert response.status_code == 200
    thread = await app.service.get(await bot_thread(app, ts))
    assert [e.type for e in thread.events] == ["user_message"] and thread.status() == "running"
    assert thread.events[0].text == "hello there"  # the mention itself is not part of the request
    assert (await settled(app, ts)).status() == "done"
