"""Approvals over time by email, end to end: raw mail posted to /email/inbound, a real SMTP
server (aiosmtpd) catching what the bot sends, real Redis. Time moves by the runner's clock:
reminders in each approver's approval email thread (and to the requester), an escalation that
mails its person an approval email of their own whose reply counts, progress lines while a
request needs more approvals, and a late reply told the request expired."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from bot.runtime.clock import utcnow
from tests.adapters.channels.email import test_email as mail
from tests.adapters.channels.email.test_email import _field, gmail_reply, post, raw_mail
from tests.deploybot_toml import Toml
from tests.helpers import eventually, ledger_lines, settle

pytestmark = [pytest.mark.redis, pytest.mark.network]

smtp_port, inbox = mail.smtp_port, mail.inbox

# erin is the lead on call: asked too when nobody decides in half an hour
PEOPLE = (
    Toml().person("alice", email="alice@example.com").person("bob", email="bob@example.com")
    .person("carol", email="carol@example.com").person("erin", email="erin@example.com")
    .environment("production", protected=True, approvers=["bob", "carol"], remind_after=600, escalate_after=1800,
                 escalate_to=["erin"])
)


@pytest.fixture
def required() -> int:
    return 1


@pytest.fixture
def ttl() -> int:
    return 3600


@pytest.fixture
def settings(settings, smtp_port, inbox, tmp_path: Path, required: int, ttl: int):
    path = PEOPLE.environment("production", required_approvals=required).write(tmp_path)
    return settings.model_copy(update={
        "deploybot_config": path, "approval_ttl": ttl,
        "smtp_host": "127.0.0.1", "smtp_port": smtp_port, "smtp_tls": "none",
        "email_from": "deploybot@example.com", "inbound_email_secret": mail.SECRET,
        "email_reply_secret": "reply-secret", "email_allowed_senders": "alice@example.com",
        "email_trusted_authserv_ids": mail.TRUSTED, "email_mailbox_authenticated_domains": mail.MAILBOXES,
    })


async def start(api, app, inbox):
    r = await post(api, raw_mail("deploy backend v1.2.3 to production"))
    assert r.json()["status"] == "accepted", r.text
    thread = await app.service.get((await settle(api, r.json()["detail"]))["id"])
    assert thread.status() == "waiting_for_approval"
    approvals = {str(m["To"]): m for m in await inbox.wait_for(2, body="Reply APPROVE to deploy")}
    assert set(approvals) == {"bob@example.com", "carol@example.com"}
    return thread, approvals


async def at(app, thread_id: str, when) -> None:
    """Run the thread as a worker would when its timer fires, at `when`."""
    app.runner.clock = lambda: when
    await app.runner.run(thread_id)
    await app.adapter("email").drain()


def same_id(a, b) -> bool:
    """Two Message-ID headers name the same message (a long one may be folded)."""
    return str(a).strip() == str(b).strip() != ""


def sent_to(inbox, address: str, text: str) -> list:
    return [m for m in inbox.messages if str(m["To"]) == address and text in _field(m, "body")]


async def test_reminders_and_escalation_by_email_and_the_escalated_reply_counts(api, app, inbox, ledger):
    thread, approvals = await start(api, app, inbox)
    request = thread.pending_approval()

    await at(app, thread.id, request.at + timedelta(seconds=601))
    reminders = {str(m["To"]): m for m in await inbox.wait_for(3, body="Reminder: deploying backend v1.2.3")}
    assert set(reminders) == {"bob@example.com", "carol@example.com", "alice@example.com"}
    for address in ("bob@example.com", "carol@example.com"):  # in each approval email thread
        reminder = reminders[address]
        assert same_id(reminder["In-Reply-To"], approvals[address]["Message-ID"])
        assert str(reminder["Subject"]).startswith("Re: ")
        body = _field(reminder, "body")
        assert "bob or carol" in body and f"{request.expires_at:%Y-%m-%d %H:%M} UTC" in body
        assert str(reminder["Reply-To"]).startswith("deploybot+") and "approval code: " in body

    await at(app, thread.id, request.at + timedelta(seconds=1801))
    [asked] = await inbox.wait_for(to="erin@example.com", body="Reply APPROVE to deploy")
    assert "you are asked too" in _field(asked, "body") and "approval code: " in _field(asked, "body")
    assert str(asked["Reply-To"]).startswith("deploybot+")
    await inbox.wait_for(to="alice@example.com", body="so I have asked erin too")  # the requester hears
    assert len(sent_to(inbox, "bob@example.com", "Reply APPROVE to deploy")) == 1  # approvers are not asked twice

    r = await post(api, gmail_reply(asked, "APPROVE", "Erin <erin@example.com>"))
    assert r.json()["status"] == "accepted", r.json()
    done = await settle(api, thread.id)
    assert done["status"] == "done" and len(ledger_lines(ledger)) == 1
    [decision] = [e for e in done["events"] if e["type"] == "human_response"]
    assert decision["person"] == "erin" and decision["approve"] is True


async def test_after_expiry_a_late_reply_is_told_and_nothing_is_recorded(api, app, inbox, ledger):
    thread, approvals = await start(api, app, inbox)
    request = thread.pending_approval()

    await at(app, thread.id, request.expires_at + timedelta(seconds=1))
    await inbox.wait_for(to="alice@example.com", body="expired at")  # the requester (bot.core.notices)
    [closed] = await inbox.wait_for(to="bob@example.com", body="need not decide")
    assert same_id(closed["In-Reply-To"], approvals["bob@example.com"]["Message-ID"])
    thread = await app.service.get(thread.id)
    assert thread.status() != "waiting_for_approval"

    r = await post(api, gmail_reply(approvals["bob@example.com"], "APPROVE", "bob@example.com"))
    assert r.json()["status"] == "refused"
    expected = f"this approval expired at {request.expires_at:%Y-%m-%d %H:%M} UTC; nothing was deployed"
    assert expected in r.json()["detail"]
    [told] = await inbox.wait_for(to="bob@example.com", body="I did not act on your message")
    assert expected in _field(told, "body")
    assert (await app.service.get(thread.id)).version == thread.version and ledger_lines(ledger) == []


@pytest.mark.parametrize("ttl", [2])
async def test_a_reply_whose_approval_code_lapsed_is_told_the_request_expired(api, app, inbox, ledger):
    thread, approvals = await start(api, app, inbox)
    request = thread.pending_approval()
    await eventually(lambda: utcnow() > request.expires_at + timedelta(seconds=1), within=10, every=0.1)
    await at(app, thread.id, utcnow())
    assert (await app.service.get(thread.id)).expiry(request.approval_id) is not None

    r = await post(api, gmail_reply(approvals["carol@example.com"], "APPROVE", "carol@example.com"))
    assert r.json()["status"] == "refused" and "nothing was deployed" in r.json()["detail"]
    [told] = await inbox.wait_for(to="carol@example.com", body="I did not act on your message")
    assert "expired at" in _field(told, "body") and ledger_lines(ledger) == []


@pytest.mark.parametrize("required", [2])
async def test_two_approvals_by_email_send_progress_lines(api, app, inbox, ledger):
    thread, approvals = await start(api, app, inbox)

    r = await post(api, gmail_reply(approvals["bob@example.com"], "APPROVE", "bob@example.com"))
    assert r.json()["status"] == "accepted", r.json()
    await inbox.wait_for(to="alice@example.com", body="Approved by bob. 1 of 2: approved by bob; it needs 1 more")
    [progress] = await inbox.wait_for(to="carol@example.com", body="1 of 2: approved by bob")
    assert same_id(progress["In-Reply-To"], approvals["carol@example.com"]["Message-ID"])
    await app.adapter("email").drain()
    assert not sent_to(inbox, "bob@example.com", "1 of 2")  # who approved is not asked again
    assert (await settle(api, thread.id))["status"] == "waiting_for_approval" and ledger_lines(ledger) == []

    # A reply to the progress mail decides like one to the approval email.
    r = await post(api, gmail_reply(progress, "approve", "carol@example.com"))
    assert r.json()["status"] == "accepted", r.json()
    done = await settle(api, thread.id)
    assert done["status"] == "done" and len(ledger_lines(ledger)) == 1
    await inbox.wait_for(to="alice@example.com", body="Approved by carol. 2 of 2: approved by bob, carol.")
