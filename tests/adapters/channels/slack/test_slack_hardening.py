"""Slack hardening, end to end like test_slack.py (signed requests over real HTTP, the Web API
stand-in recording what the bot sends): foreign text is escaped, every text object fits
Slack's limits, bad payloads never raise, and only people's messages start or feed threads."""

from __future__ import annotations

import json
import logging
import subprocess
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from bot.adapters.channels.slack import NOT_OUR_BUTTON, STALE_FORM, SlackNotifier, blocks
from bot.adapters.channels.slack.blocks import APPROVE, REJECT, REJECT_VIEW
from bot.core.events import ApprovalRequested
from bot.core.thread import Origin, Thread
from bot.testing.fake_slack import BOT_USER, FakeSlack
from tests.adapters.channels.slack import test_slack as base
from tests.adapters.channels.slack.test_slack import (
    ALICE,
    APPROVER,
    CHANNEL,
    approval_message,
    bot_thread,
    new_ts,
    paused,
    settled,
)
from tests.adapters.channels.slack.test_slack_text import whole_entities
from tests.helpers import eventually, reply

pytestmark = [pytest.mark.redis, pytest.mark.processes, pytest.mark.network]

# The fixtures of test_slack.py: the stand-in, settings pointing at it, a signed-request sender.
fake_slack, settings, slack = base.fake_slack, base.settings, base.slack

# What people (or a model) could put in text: a channel-wide ping, a ping of someone, a link
# dressed as an instruction. Shown as text, each pings nobody.
HOSTILE = "<!channel> <!here> <@UVICTIM> <http://evil.example|approve here> & more"
INERT = ("&lt;!channel&gt; &lt;!here&gt; &lt;@UVICTIM&gt; "
         "&lt;http://evil.example|approve here&gt; &amp; more")
LIVE = ("<!channel>", "<!here>", "<@UVICTIM>", "<http://evil")


def live_markup(text: str) -> list[str]:
    return [m for m in LIVE if m in text]


def as_blocks(call: dict[str, Any]) -> list[dict[str, Any]]:
    return call["blocks"] if isinstance(call["blocks"], list) else json.loads(call["blocks"])


def text_objects(value: Any, key: str = "") -> list[tuple[str, str, str]]:
    """(where, type, text) of every text object in a Block Kit structure."""
    found = []
    if isinstance(value, dict):
        if value.get("type") in ("mrkdwn", "plain_text") and isinstance(value.get("text"), str):
            found.append((key, value["type"], value["text"]))
        for k, v in value.items():
            found += text_objects(v, k if isinstance(v, dict) else key or k)
    elif isinstance(value, list):
        for v in value:
            found += text_objects(v, key)
    return found


def in_thread_posts(fake_slack: FakeSlack, root: str) -> list[str]:
    return [c["text"] for c in fake_slack.called("chat.postMessage") if c.get("thread_ts") == root]


def marker(thread_id: str) -> str:
    return blocks.truncation_marker(blocks.in_thread(thread_id))


# --- 1. escaping: foreign text shows as text, the bot's own mentions stay mentions ---------


async def test_model_messages_are_escaped(app, slack, fake_slack, fake_llm):
    fake_llm.script(reply(intent="done_for_now", message=f"all done {HOSTILE}"))
    _, root = await slack.mention("hello")
    await settled(app, root)
    [said] = await fake_slack.wait_for("chat.postMessage", thread_ts=root, text="all done")
    assert INERT in said["text"] and live_markup(said["text"]) == []


async def test_the_approval_message_escapes_the_model_reason_and_names_the_requester(
    app, slack, fake_slack, fake_llm
):
    fake_llm.script(reply(intent="deploy", service="backend", tag="v1.2.3", environment="production", reason=HOSTILE))
    _, root = await slack.mention("deploy backend to production")
    assert (await settled(app, root)).status() == "waiting_for_approval"
    message = await approval_message(fake_slack, root)
    summary = message["blocks"][0]["text"]["text"]
    assert f"*Why:* {INERT}" in summary and live_markup(summary) == []
    assert f"*Asked by:* <@{ALICE}>" in summary  # the bot's own mention stays a mention


async def test_the_fallback_text_and_summary_escape_every_field(app, fake_slack):
    # Tag, service and environment are checked by the policy before an approval is asked
    # for; the approval message escapes them anyway, in its blocks and its fallback `text`.
    notifier = next(n for n in app.service.notifier.notifiers if isinstance(n, SlackNotifier))
    root = new_ts()
    thread = Thread("t1", (), Origin(channel="slack", slack_channel=CHANNEL, slack_thread_ts=root))
    request = ApprovalRequested(
        step_id="s1", thread_id="t1", args_hash="h", service="<!channel>", tag="<@UVICTIM>",
        commit="<!here>&abcdef", environment="<http://evil.example|prod>", requested_by="<!channel>",
        expires_at=datetime.now(UTC) + timedelta(hours=1),
    )
    await notifier.publish(thread, [request])
    [posted] = await fake_slack.wait_for("chat.postMessage", thread_ts=root)
    assert posted["text"].startswith("Approval needed: deploy &lt;!channel&gt; &lt;@UVICTIM&gt;")
    assert live_markup(posted["text"]) == [] and live_markup(json.dumps(as_blocks(posted))) == []


async def test_rejection_feedback_from_the_modal_is_escaped(app, slack, fake_slack, fake_llm):
    root, message = await paused(app, slack, fake_slack, fake_llm)
    await slack.click(REJECT, message, APPROVER)
    view = (await fake_slack.wait_for("views.open"))[-1]["view"]
    view = json.loads(view) if isinstance(view, str) else view
    fake_llm.script(reply(intent="request_more_information", message="Which tag then?"))
    assert (await slack.submit_feedback(view, APPROVER, HOSTILE)).status_code == 200
    [updated] = await fake_slack.wait_for("chat.update", ts=message["ts"], blocks="Rejected by")
    context = as_blocks(updated)[1]["elements"][0]["text"]
    assert context == f":x: Rejected by <@{APPROVER}>: {INERT}"  # a real mention, inert feedback


async def test_an_approvers_free_text_reply_is_escaped_in_the_updated_message(app, slack, fake_slack, fake_llm):
    root, message = await paused(app, slack, fake_slack, fake_llm)
    fake_llm.script(reply(intent="request_more_information", message="Which tag then?"))
    await slack.reply(f"not this one {HOSTILE}", root, user=APPROVER)
    [updated] = await fake_slack.wait_for("chat.update", ts=message["ts"], blocks="Rejected by")
    assert INERT in json.dumps(as_blocks(updated)) and live_markup(json.dumps(as_blocks(updated))) == []


async def test_lock_reasons_are_escaped_and_what_people_typed_is_stored_as_typed(app, slack, fake_slack):
    # Slack delivers a typed "R&D" as "R&amp;D", and an @channel as "<!channel>". (Whoever
    # may approve production may lock it.)
    _, root = await slack.mention("lock production: <!channel> R&amp;D <@UVICTIM>", user=APPROVER)
    thread = await settled(app, root)
    lock = next(e for e in thread.events if e.type == "lock_environment")
    assert lock.reason == "<!channel> R&D <@UVICTIM>"  # stored as typed, not as Slack escaped it
    [said] = await fake_slack.wait_for("chat.postMessage", thread_ts=root, text="Locked production")
    assert "&lt;!channel&gt; R&amp;D &lt;@UVICTIM&gt;" in said["text"]  # escaped once, not twice
    assert live_markup(said["text"]) == []


async def test_cancel_reasons_are_escaped_but_the_canceller_is_named(app, api, slack, fake_slack, fake_llm):
    fake_llm.script(reply(intent="request_more_information", message="Which environment?"))
    _, root = await slack.mention("deploy backend v1.2.3")
    thread = await settled(app, root)
    # alice asked, so she may cancel it (the shared token, which did not, may not)
    refused = await api.post(f"/threads/{thread.id}/cancel", json={"user": ALICE, "reason": HOSTILE})
    assert refused.status_code == 403 and "may not cancel this thread" in refused.json()["detail"]
    await app.service.cancel(thread.id, app.service.directory.by("slack", ALICE), HOSTILE)
    [said] = await fake_slack.wait_for("chat.postMessage", thread_ts=root, text="Cancelled by")
    assert said["text"] == f":no_entry: Cancelled by <@{ALICE}>: {INERT}"


@pytest.fixture
def hostile_tags(git_repo: Path) -> list[str]:
    tags = ["<!channel>", "a&b", "<@UVICTIM>", "<!here|x>"]  # valid git tag names, all of them
    for tag in tags:
        subprocess.run(["git", "-C", str(git_repo), "tag", tag], check=True, capture_output=True)
    return tags


async def test_tag_names_in_list_tags_are_escaped(app, slack, fake_slack, hostile_tags):
    _, root = await slack.mention("list tags")
    await settled(app, root)
    [said] = await fake_slack.wait_for("chat.postMessage", thread_ts=root, text="Tags, newest first")
    for escaped in ("&lt;!channel&gt;", "a&amp;b", "&lt;@UVICTIM&gt;", "&lt;!here|x&gt;"):
        assert escaped in said["text"]
    assert live_markup(said["text"]) == []



# Markup typed in quoted text shows as typed: each marker is the fallback text of a date Slack
# cannot read (shown as it is, never formatted), a quote's ">" is no longer a line's first character.
EMPHASIS = "*urgent* _now_ ~old~ `rm -rf`\n> quoted"
VERBATIM = "<!date^00000000^{_}|%s>"
AS_TYPED = " ".join(VERBATIM % m + word + VERBATIM % m for m, word in (
    ("*", "urgent"), ("_", "now"), ("~", "old"), ("`", "rm -rf"))) + "\n\u00ad&gt; quoted"
# Format characters: an override that reverses what follows, isolates, zero-width ones, a BOM.
HIDDEN = "\u202e\u2066\u2069\u200b\u200d\u2060\ufeff"


def hidden_in(value: Any) -> list[str]:
    said = json.dumps(value, ensure_ascii=False)
    return [c for c in HIDDEN if c in said]


async def test_emphasis_in_a_reason_feedback_and_a_model_message_shows_as_typed(app, slack, fake_slack, fake_llm):
    fake_llm.script(reply(intent="deploy", service="backend", tag="v1.2.3", environment="production",
                          reason=EMPHASIS))
    _, root = await slack.mention("deploy backend to production")
    assert (await settled(app, root)).status() == "waiting_for_approval"
    message = await approval_message(fake_slack, root)
    assert message["blocks"][0]["text"]["text"].endswith(f"*Why:* {AS_TYPED}")

    await slack.click(REJECT, message, APPROVER)
    view = (await fake_slack.wait_for("views.open"))[-1]["view"]
    view = json.loads(view) if isinstance(view, str) else view
    fake_llm.script(reply(intent="request_more_information", message=f"Which tag? {EMPHASIS}"))
    assert (await slack.submit_feedback(view, APPROVER, EMPHASIS)).status_code == 200
    [updated] = await fake_slack.wait_for("chat.update", ts=message["ts"], blocks="Rejected by")
    assert as_blocks(updated)[1]["elements"][0]["text"] == f":x: Rejected by <@{APPROVER}>: {AS_TYPED}"
    [asked] = await fake_slack.wait_for("chat.postMessage", thread_ts=root, text="Which tag?")
    assert asked["text"].endswith(f"Which tag? {AS_TYPED}")


async def test_a_cancel_reason_shows_as_typed_and_the_canceller_stays_a_mention(app, api, slack, fake_slack, fake_llm):
    fake_llm.script(reply(intent="request_more_information", message="Which environment?"))
    _, root = await slack.mention("deploy backend v1.2.3")
    thread = await settled(app, root)
    await app.service.cancel(thread.id, app.service.directory.by("slack", ALICE), EMPHASIS)  # she asked
    [said] = await fake_slack.wait_for("chat.postMessage", thread_ts=root, text="Cancelled by")
    assert said["text"] == f":no_entry: Cancelled by <@{ALICE}>: {AS_TYPED}"


async def test_format_characters_reach_slack_from_nobody(app, api, slack, fake_slack, fake_llm):
    fake_llm.script(
        reply(intent="deploy", service="backend", tag="v1.2.3", environment="production", reason=f"ship{HIDDEN} it"),
    )
    _, root = await slack.mention(f"deploy{HIDDEN} backend to production")
    assert (await settled(app, root)).status() == "waiting_for_approval"
    message = await approval_message(fake_slack, root)
    await slack.click(REJECT, message, APPROVER)
    view = (await fake_slack.wait_for("views.open"))[-1]["view"]
    view = json.loads(view) if isinstance(view, str) else view
    fake_llm.script(reply(intent="request_more_information", message=f"Which{HIDDEN} tag?"))
    await slack.submit_feedback(view, APPROVER, f"not{HIDDEN} now")
    thread = await settled(app, root)
    await app.service.cancel(thread.id, app.service.directory.by("slack", ALICE), f"gone{HIDDEN} away")
    await fake_slack.wait_for("chat.postMessage", thread_ts=root, text="Cancelled by")
    await fake_slack.wait_for("chat.update", ts=message["ts"], blocks="Rejected by")
    sent = [c for m in ("chat.postMessage", "chat.update", "chat.postEphemeral") for c in fake_slack.called(m)]
    assert "ship it" in json.dumps(sent) and "not now" in json.dumps(sent) and "gone away" in json.dumps(sent)
    assert hidden_in(sent) == []
    assert HIDDEN in (await app.service.get(thread.id)).events[0].text  # stored as typed: only what is shown loses them


# --- 2. limits: cut to Slack's, marked, the full text kept in the thread ----------------------


async def test_huge_rejection_feedback_is_cut_to_the_context_limit_and_kept_whole(app, slack, fake_slack, fake_llm):
    root, message = await paused(app, slack, fake_slack, fake_llm)
    await slack.click(REJECT, message, APPROVER)
    view = (await fake_slack.wait_for("views.open"))[-1]["view"]
    view = json.loads(view) if isinstance(view, str) else view
    feedback = "no: " + "<&>" * 40_000  # escapes to 13 characters every 3: cuts fall in entities
    fake_llm.script(reply(intent="request_more_information", message="Which tag then?"))
    assert (await slack.submit_feedback(view, APPROVER, feedback)).status_code == 200
    thread = await settled(app, root)
    [updated] = await fake_slack.wait_for("chat.update", ts=message["ts"], blocks="Rejected by")
    context = as_blocks(updated)[1]["elements"][0]["text"]
    assert len(context) <= blocks.SECTION_TEXT and context.endswith(marker(thread.id))
    kept = context.removesuffix(marker(thread.id))
    assert kept.startswith(f":x: Rejected by <@{APPROVER}>: no: &lt;&amp;&gt;") and whole_entities(kept)
    for where, _, text in text_objects(as_blocks(updated)):
        assert len(text) <= blocks.SECTION_TEXT, where
    decision = next(e for e in thread.events if e.type == "human_response")
    assert decision.text == feedback  # the full text is in the thread's events


async def test_a_huge_model_message_is_cut_to_the_message_limit(app, slack, fake_slack, fake_llm):
    message = "start " + "a<b " * 20_000  # 80,006 characters; escaped, far more
    fake_llm.script(reply(intent="done_for_now", message=message))
    _, root = await slack.mention("hello")
    thread = await settled(app, root)
    [said] = await fake_slack.wait_for("chat.postMessage", thread_ts=root, text="start a")
    assert len(said["text"]) <= blocks.MESSAGE_TEXT and said["text"].endswith(marker(thread.id))
    assert whole_entities(said["text"].removesuffix(marker(thread.id)))
    assert thread.events[-1].message == message


async def test_a_huge_reason_is_cut_but_the_approval_still_shows_when_it_expires(app, slack, fake_slack, fake_llm):
    reason = "because " + "&" * 10_000
    fake_llm.script(reply(intent="deploy", service="backend", tag="v1.2.3", environment="production", reason=reason))
    _, root = await slack.mention("deploy backend to production")
    thread = await settled(app, root)
    message = await approval_message(fake_slack, root)
    summary = message["blocks"][0]["text"]["text"]
    assert len(summary) <= blocks.SECTION_TEXT and summary.endswith(marker(thread.id))
    assert "*Expires:*" in summary and whole_entities(summary.removesuffix(marker(thread.id)))
    for where, kind, text in text_objects(message["blocks"]):
        assert len(text) <= (blocks.BUTTON_TEXT if where == "elements" and kind == "plain_text"
                             else blocks.SECTION_TEXT), where
    assert thread.pending_approval().reason == reason


# --- 3. robustness: bad payloads are a log line and a 200 (or a form error), never a 500 ------


def click_payload(action_id: str, value: Any, user: str | None = APPROVER, **drop: bool) -> dict[str, Any]:
    payload: dict[str, Any] = {
        "type": "block_actions", "user": {"id": user}, "trigger_id": "trigger-1",
        "channel": {"id": CHANNEL},
        "container": {"type": "message", "message_ts": "1700000000.000001", "channel_id": CHANNEL},
        "message": {"ts": "1700000000.000001", "thread_ts": "1700000000.000000"},
        "actions": [{"type": "button", "action_id": action_id, "value": value, "block_id": "b",
                     "action_ts": new_ts()}],
    }
    for key in drop:
        payload.pop(key)
    return payload


async def test_clicks_with_bad_button_values_are_told_and_logged_not_500(app, slack, fake_slack, caplog):
    caplog.set_level(logging.WARNING)
    for action_id in (APPROVE, REJECT):
        for value in ("garbage", ":", "a:b:c d", 42, None):
            response = await slack.interaction(click_payload(action_id, value))
            assert response.status_code == 200, (action_id, value)
    told = await fake_slack.wait_for("chat.postEphemeral", 10, user=APPROVER)
    assert all(t["text"] == blocks.escape(NOT_OUR_BUTTON) for t in told)
    assert "button deploybot did not make" in caplog.text
    assert fake_slack.called("views.open") == []


async def test_clicks_without_a_user_or_channel_are_logged_not_500(app, slack, fake_slack, fake_llm, caplog):
    root, message = await paused(app, slack, fake_slack, fake_llm)
    version = (await settled(app, root)).version
    value = next(b for b in message["blocks"] if b["type"] == "actions")["elements"][0]["value"]
    caplog.set_level(logging.WARNING)
    for payload in (click_payload(APPROVE, value, user=None), click_payload(APPROVE, value, channel=True),
                    click_payload(REJECT, value, user=None), click_payload(REJECT, value, channel=True)):
        assert (await slack.interaction(payload)).status_code == 200
    assert "without a user or channel" in caplog.text
    assert (await settled(app, root)).version == version and fake_slack.called("views.open") == []


async def test_a_reject_click_whose_form_slack_will_not_open_is_told(app, slack, fake_slack, fake_llm, caplog):
    root, message = await paused(app, slack, fake_slack, fake_llm)
    caplog.set_level(logging.WARNING)
    fake_slack.fail("views.open", 200, {"ok": False, "error": "expired_trigger_id"})
    assert (await slack.click(REJECT, message, APPROVER)).status_code == 200
    told = await fake_slack.wait_for("chat.postEphemeral", user=APPROVER)
    assert "click Reject again" in told[-1]["text"] and "expired_trigger_id" in caplog.text


def feedback_payload(view: dict[str, Any]) -> dict[str, Any]:
    return {"type": "view_submission", "user": {"id": APPROVER},
            "view": {"id": "V1", "type": "modal", "callback_id": REJECT_VIEW, **view}}


async def test_reject_forms_with_bad_metadata_or_no_state_are_form_errors_not_500(app, slack, caplog):
    caplog.set_level(logging.WARNING)
    state = {"values": {"feedback": {"feedback": {"type": "plain_text_input", "value": "use v1.2.2"}}}}
    for view in (
        {"private_metadata": "nonsense", "state": state},
        {"private_metadata": "a:b", "state": state},
        {"private_metadata": 7, "state": state},
        {"state": state},
        {"private_metadata": "t1:a1:C1:1700000000.000001"},
        {"private_metadata": "t1:a1:C1:1700000000.000001", "state": {"values": {}}},
        {"private_metadata": "t1:a1:C1:1700000000.000001", "state": "broken"},
    ):
        response = await slack.interaction(feedback_payload(view))
        assert response.status_code == 200, view
        assert response.json() == {"response_action": "errors", "errors": {"feedback": STALE_FORM}}, view
    assert "unreadable metadata" in caplog.text and "without its feedback field" in caplog.text


async def test_mentions_without_a_user_or_ts_are_logged_and_start_nothing(app, slack, fake_llm, caplog):
    caplog.set_level(logging.WARNING)
    ts = new_ts()
    for missing in ("user", "ts", "channel"):
        event = {"type": "app_mention", "user": ALICE, "text": f"<@{BOT_USER}> hi", "ts": ts,
                 "channel": CHANNEL}
        event.pop(missing)
        assert (await slack.event(event)).status_code == 200, missing
    event = {"type": "app_mention", "user": ALICE, "text": 42, "ts": ts, "channel": CHANNEL}
    assert (await slack.event(event)).status_code == 200
    assert "ignored a 'app_mention' event without" in caplog.text
    await app.worker.idle()
    assert await bot_thread(app, ts) is None and fake_llm.prompts == []


# --- 4. who is heard: bots never, people's broadcasts and file shares always ------------------


async def test_mentions_from_bots_start_no_thread(app, slack, fake_llm):
    roots = []
    for extra in ({"bot_id": "BOTHER"}, {"subtype": "bot_message"}, {"user": BOT_USER}):
        ts = new_ts()
        event = {"type": "app_mention", "user": "UOTHERBOT", "text": f"<@{BOT_USER}> deploy backend",
                 "ts": ts, "channel": CHANNEL, **extra}
        assert (await slack.event(event)).status_code == 200
        roots.append(ts)
    await app.worker.idle()
    assert [await bot_thread(app, ts) for ts in roots] == [None, None, None]
    assert fake_llm.prompts == []


async def test_edits_and_deletions_in_a_bot_thread_are_ignored(app, slack, fake_llm):
    fake_llm.script(reply(intent="request_more_information", message="Which environment?"))
    _, root = await slack.mention("deploy backend v1.2.3")
    before = (await settled(app, root)).version
    await slack.reply("edited", root, subtype="message_changed")
    await slack.reply("", root, subtype="message_deleted")
    await slack.reply("joined", root, subtype="channel_join")
    await app.worker.idle()
    assert (await settled(app, root)).version == before and len(fake_llm.prompts) == 1


async def test_a_broadcast_reply_is_a_reply(app, slack, fake_slack, fake_llm):
    fake_llm.script(reply(intent="request_more_information", message="Which environment?"))
    _, root = await slack.mention("deploy backend v1.2.3")
    await settled(app, root)
    fake_llm.script(reply(intent="done_for_now", message="noted"))
    assert (await slack.reply("staging please", root, subtype="thread_broadcast")).status_code == 200
    thread = await settled(app, root)
    answer = next(e for e in thread.events if e.type == "human_response")
    assert answer.text == "staging please" and answer.user == ALICE
    assert "staging please" in fake_llm.prompts[-1]


async def test_a_me_message_in_a_bot_thread_is_a_reply(app, slack, fake_llm):
    """`/me staging please` is a person talking (subtype me_message), not a bot or an edit."""
    fake_llm.script(reply(intent="request_more_information", message="Which environment?"))
    _, root = await slack.mention("deploy backend v1.2.3")
    await settled(app, root)
    fake_llm.script(reply(intent="done_for_now", message="noted"))
    assert (await slack.reply("staging please", root, subtype="me_message")).status_code == 200
    thread = await settled(app, root)
    answer = next(e for e in thread.events if e.type == "human_response")
    assert answer.text == "staging please" and answer.user == ALICE
    assert "staging please" in fake_llm.prompts[-1]


async def test_a_file_share_reply_is_a_reply_whose_files_are_noted_as_ignored(app, slack, fake_slack, fake_llm):
    fake_llm.script(reply(intent="request_more_information", message="Which environment?"))
    _, root = await slack.mention("deploy backend v1.2.3")
    await settled(app, root)
    files = [{"id": "F1", "name": "notes.txt"}]
    fake_llm.script(reply(intent="request_more_information", message="And which tag?"),
                    reply(intent="done_for_now", message="ok"))
    await slack.reply("staging, see the file", root, subtype="file_share", files=files)
    await eventually(lambda: len(fake_llm.prompts) == 2, message="the file share reply was not answered")
    await settled(app, root)
    await slack.reply("", root, subtype="file_share", files=files)  # files alone
    thread = await settled(app, root)
    answers = [e.text for e in thread.events if e.type == "human_response"]
    assert answers == [f"staging, see the file\n\n{blocks.FILES_IGNORED}", blocks.FILES_IGNORED]
    assert blocks.FILES_IGNORED in fake_llm.prompts[1]
