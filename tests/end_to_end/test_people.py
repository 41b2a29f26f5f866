"""People across channels, end to end: a deploybot.toml names who is who in Slack and by email,
and the real app (signed Slack requests over HTTP to a Web API stand-in, raw mail posted to
/email/inbound, approval emails caught by a real SMTP server) decides by the person, whichever
channel they come by.

APPROVERS and APPROVER_EMAILS are unset: the file alone says who may approve production (the
sre group), so anyone it does not name has no say at all.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path

import pytest

from bot.adapters.channels.email.tokens import TokenError, check_token
from bot.adapters.channels.slack.blocks import APPROVE, REJECT
from tests.adapters.channels.email import test_email as mail
from tests.adapters.channels.email.test_email import _field, gmail_reply, post, raw_mail
from tests.adapters.channels.slack import test_slack as base
from tests.adapters.channels.slack.test_slack import CHANNEL, bot_thread, new_ts, paused, settled
from tests.deploybot_toml import Toml
from tests.helpers import ledger_lines, reply
from tests.people_kinds import KINDS

pytestmark = [pytest.mark.redis, pytest.mark.network]

# The stand-ins of the channel tests: Slack's Web API, a signed-request sender, an SMTP server.
fake_slack, slack = base.fake_slack, base.slack
smtp_port, inbox = mail.smtp_port, mail.inbox

ALICE, BOB, CAROL, DAVE, EVE = "UALICE", "UBOB", "UCAROL", "UDAVE", "UEVE"  # EVE: in no file
BOB_DM = "D0BOB"

PEOPLE = (
    Toml().person("alice", slack="UALICE", email="alice@example.com")
    .person("bob", slack="UBOB", email=["bob@example.com", "robert@example.org"])
    .person("carol", slack="UCAROL")  # Slack only: approves in Slack, gets no approval email
    .person("dave", slack="UDAVE", email="dave@example.com")  # known, but approves nothing
    .group("sre", "alice", "bob", "carol")
    .environment("production", protected=True, approvers=["group:sre"], approver_must_differ=True)
)
APPROVER_ADDRESSES = {"alice@example.com", "bob@example.com", "robert@example.org"}
# What a request alice asked for is mailed to: she is an approver, but she asked (approver_must_differ).
MAILED = APPROVER_ADDRESSES - {"alice@example.com"}


@pytest.fixture
def people_file(tmp_path: Path) -> Path:
    return PEOPLE.write(tmp_path)


@pytest.fixture
def settings(settings, fake_slack, smtp_port, inbox, people_file):
    return settings.model_copy(update={
        "deploybot_config": people_file,
        "slack_bot_token": "xoxb-test-token", "slack_signing_secret": base.SECRET,
        "slack_api_url": fake_slack.base_url,
        "smtp_host": "127.0.0.1", "smtp_port": smtp_port, "smtp_tls": "none",
        "email_from": "deploybot@example.com", "inbound_email_secret": mail.SECRET,
        "email_reply_secret": "reply-secret", "email_trusted_authserv_ids": mail.TRUSTED,
        "email_mailbox_authenticated_domains": mail.MAILBOXES,
        # Anyone at example.com may write to the bot, so a From of bob's reaches the thread.
        "email_allowed_senders": "@example.com",
    })


async def version(app, thread_id: str) -> int:
    return (await app.service.get(thread_id)).version


async def approval_emails(app, inbox) -> dict[str, object]:
    """Every approval email sent, by recipient, once all sends are done."""
    await inbox.wait_for(len(MAILED), body="Reply APPROVE to deploy")
    await app.adapter("email").drain()
    sent = [m for m in inbox.messages if "Reply APPROVE to deploy" in _field(m, "body")]
    by_address = {str(m["To"]): m for m in sent}
    assert len(by_address) == len(sent), "an address got two approval emails"
    return by_address


def approval_code(approval) -> str:
    return re.search(r"approval code: (\S+)", _field(approval, "body"))[1]


def test_the_file_alone_decides_who_approves(settings):
    assert settings.approvers is None and settings.approver_emails is None and not settings.open_mode
    policy = settings.policy(KINDS)
    assert policy.rules_for("production").approvers == {"alice", "bob", "carol"}


async def test_alice_asks_in_slack_her_own_email_approval_is_refused_and_bobs_click_deploys(
    app, slack, fake_slack, fake_llm, inbox, api, ledger
):
    root, message = await paused(app, slack, fake_slack, fake_llm)  # alice's mention
    thread = await settled(app, root)
    request = thread.pending_approval()
    assert request.requested_by == "alice"  # the person, not her Slack id
    assert thread.events[0].person == "alice" and thread.events[0].via == "slack"
    before = thread.version

    # alice is in the sre group, but she asked: she is not mailed "Reply APPROVE" (she may
    # not), and her click is refused.
    approvals = await approval_emails(app, inbox)
    assert set(approvals) == MAILED
    await slack.click(APPROVE, message, ALICE)
    [said] = await fake_slack.wait_for("chat.postEphemeral", user=ALICE)
    assert "asked for this deploy" in said["text"]
    assert await version(app, thread.id) == before and ledger_lines(ledger) == []

    fake_llm.script(reply(intent="done_for_now", message="backend v1.2.3 is live on production"))
    assert (await slack.click(APPROVE, message, BOB)).status_code == 200
    done = await settled(app, root)
    assert done.status() == "done" and len(ledger_lines(ledger)) == 1
    [decision] = [e for e in done.events if e.type == "human_response"]
    assert (decision.person, decision.via, decision.user, decision.approve) == ("bob", "slack", BOB, True)
    await fake_slack.wait_for("chat.update", ts=message["ts"], blocks=f"Approved by <@{BOB}>")


async def test_bob_approving_by_email_from_his_second_address_is_bob(
    app, slack, fake_slack, fake_llm, inbox, api, ledger
):
    root, message = await paused(app, slack, fake_slack, fake_llm)
    thread_id = (await settled(app, root)).id
    approvals = await approval_emails(app, inbox)
    robert = approvals["robert@example.org"]
    fake_llm.script(reply(intent="done_for_now", message="live"))
    reply_mail = gmail_reply(robert, "APPROVE", "Bob <robert@example.org>")
    r = await post(api, reply_mail)
    assert r.json() == {"status": "accepted", "detail": thread_id}
    done = await settled(app, root)
    assert done.status() == "done" and len(ledger_lines(ledger)) == 1
    [decision] = [e for e in done.events if e.type == "human_response"]
    message_id = re.search(rb"Message-ID: (<[^>]+>)", reply_mail)[1].decode()
    assert (decision.person, decision.via, decision.user) == ("bob", "email", "robert@example.org")
    assert decision.evidence == f"robert@example.org {message_id}"
    # Slack names the person who decided by email.
    await fake_slack.wait_for("chat.update", ts=message["ts"], blocks="Approved by bob")


async def test_approval_emails_go_only_to_the_approvers_directory_addresses(app, slack, fake_slack, fake_llm, inbox):
    await paused(app, slack, fake_slack, fake_llm)
    approvals = await approval_emails(app, inbox)
    # both of bob's; alice asked (approver_must_differ); carol approves in Slack only; dave
    # approves nothing.
    assert set(approvals) == MAILED
    assert not [m for m in inbox.messages if "dave" in str(m["To"])]
    # Each with its own code, bound to that address: good from it, from no other.
    now = datetime.now(UTC)
    for address, approval in approvals.items():
        code = approval_code(approval)
        assert code in str(approval["Reply-To"])
        assert check_token("reply-secret", code, address, now)
        for other in MAILED - {address}:
            with pytest.raises(TokenError):
                check_token("reply-secret", code, other, now)
    assert "alice asked to deploy" in _field(approvals["bob@example.com"], "body")


async def test_people_the_file_does_not_name_as_approvers_cannot_click(app, slack, fake_slack, fake_llm, ledger):
    root, message = await paused(app, slack, fake_slack, fake_llm)
    thread = await settled(app, root)
    for user in (EVE, DAVE):  # EVE is in no file; dave is, but not in the sre group
        for action in (APPROVE, REJECT):
            assert (await slack.click(action, message, user)).status_code == 200
    eve = await fake_slack.wait_for("chat.postEphemeral", 2, user=EVE)
    assert all(f"{EVE} is not an approver for production; the sre group may approve" in t["text"] for t in eve)
    dave = await fake_slack.wait_for("chat.postEphemeral", 2, user=DAVE)
    assert all("dave is not an approver for production" in t["text"] for t in dave)
    assert fake_slack.called("views.open") == []  # no feedback form for a refused Reject
    assert await version(app, thread.id) == thread.version and ledger_lines(ledger) == []

    # carol, Slack only, is in the group: her click decides.
    fake_llm.script(reply(intent="done_for_now", message="live"))
    await slack.click(APPROVE, message, CAROL)
    done = await settled(app, root)
    assert done.status() == "done" and len(ledger_lines(ledger)) == 1


async def test_a_forged_from_of_an_approver_cannot_decide(app, slack, fake_slack, fake_llm, inbox, api, ledger):
    root, _ = await paused(app, slack, fake_slack, fake_llm)
    thread = await settled(app, root)
    pending = thread.pending_approval().approval_id
    approvals = await approval_emails(app, inbox)
    bob = approvals["bob@example.com"]
    before = thread.version

    # From: bob, written by someone else, with no code: "approve" is refused ...
    r = await post(api, raw_mail("APPROVE", sender="Bob <bob@example.com>", subject=f"Re: {bob['Subject']}",
                                 in_reply_to=str(bob["Message-ID"]), proven=False))
    assert r.json()["status"] == "refused" and "approval code" in r.json()["detail"]
    # ... with the code sent to bob's other address it is not valid from this one (a code is
    # bound to an address, not to a person) ...
    robert = approvals["robert@example.org"]
    r = await post(api, raw_mail("APPROVE", sender="bob@example.com", to=str(robert["Reply-To"])))
    assert r.json()["status"] == "refused" and "not valid for this sender" in r.json()["detail"]
    # ... and a stranger using bob's code from their own address is only logged.
    r = await post(api, gmail_reply(bob, "APPROVE", "Mallory <mallory@evil.example>"))
    assert r.json()["status"] == "refused"
    assert await version(app, thread.id) == before

    # Free text under a From of bob's is recorded as an unverified sender, who is nobody:
    # not bob, and not a rejection.
    r = await post(api, raw_mail("hold on, v1.2.3 breaks checkout", sender="bob@example.com",
                                 subject=f"Re: {bob['Subject']}", in_reply_to=str(bob["Message-ID"]), proven=False))
    assert r.json()["status"] == "accepted"
    now = await settled(app, root)
    [said] = [e for e in now.events if e.type == "human_response"]
    assert (said.person, said.user, said.approve) == (None, "unverified sender <bob@example.com>", None)
    assert now.status() == "waiting_for_approval" and now.pending_approval().approval_id == pending
    assert said.evidence.startswith("bob@example.com <")  # the address and Message-ID it came with
    await app.adapter("email").drain()
    assert not [m for m in inbox.messages if "mallory" in str(m["To"])]
    assert ledger_lines(ledger) == []


async def test_login_sends_a_known_person_a_one_time_link_privately(app, slack, fake_slack, fake_llm):
    response, ts = await slack.mention("login", user=ALICE)
    assert response.status_code == 200
    [said] = await fake_slack.wait_for("chat.postEphemeral", user=ALICE, channel=CHANNEL)
    assert "as *alice*" in said["text"] and "/auth/link?code=" in said["text"]
    code = re.search(r"/auth/link\?code=([A-Za-z0-9_-]+)", said["text"])[1]
    assert await app.credentials.consume_link(code) == "alice"
    assert await app.credentials.consume_link(code) is None  # once

    # In a DM it is a plain reply there (only bob and the bot see a DM).
    dm_ts = new_ts()
    await slack.event({"type": "message", "channel_type": "im", "user": BOB, "text": "login",
                       "ts": dm_ts, "channel": BOB_DM}, event_id="EvLOGIN")
    [answer] = await fake_slack.wait_for("chat.postMessage", channel=BOB_DM, text="as *bob*")
    code = re.search(r"/auth/link\?code=([A-Za-z0-9_-]+)", answer["text"])[1]
    # Slack delivering it again sends no second link.
    await slack.event({"type": "message", "channel_type": "im", "user": BOB, "text": "login",
                       "ts": dm_ts, "channel": BOB_DM}, event_id="EvLOGIN")
    assert len(fake_slack.matching("chat.postMessage", channel=BOB_DM)) == 1
    assert await app.credentials.consume_link(code) == "bob"

    # No thread was started, and the model never heard of it.
    await app.worker.idle()
    assert await bot_thread(app, ts) is None and await bot_thread(app, dm_ts) is None
    assert await app.store.recent(10) == [] and fake_llm.prompts == []


async def test_login_tells_someone_unknown_they_are_not_in_the_file(app, slack, fake_slack, fake_llm):
    response, ts = await slack.mention("login", user=EVE)
    assert response.status_code == 200
    [said] = await fake_slack.wait_for("chat.postEphemeral", user=EVE)
    assert "not in deploybot.toml" in said["text"] and EVE in said["text"] and "code=" not in said["text"]
    await app.worker.idle()
    assert await bot_thread(app, ts) is None and await app.store.recent(10) == [] and fake_llm.prompts == []
