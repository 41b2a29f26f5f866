"""A few replies of the corpus (mail_corpus/replies.toml) through the real email channel:
the bot's approval email caught by aiosmtpd, the reply built around it as its client lays it
out, posted to /email/inbound, with real Redis keeping what the bot sent. The recorded
decision is the corpus's: the channel reads each reply against the mail it answers."""

from __future__ import annotations

from email.message import EmailMessage

import pytest

from tests.adapters.channels.email import test_email as mail
from tests.adapters.channels.email.test_email import _field, post, start
from tests.adapters.channels.email.test_mail_replies import CASES, filled
from tests.helpers import ledger_lines, settle

pytestmark = [pytest.mark.redis, pytest.mark.network]

smtp_port, inbox, settings = mail.smtp_port, mail.inbox, mail.settings


def reply_to(approval: EmailMessage, name: str) -> bytes:
    """The corpus reply `name`, quoting the approval email the bot really sent."""
    case = CASES[name]
    msg = EmailMessage()
    msg["From"], msg["To"] = "Bob <bob@example.com>", str(approval["Reply-To"])
    msg["Subject"], msg["Message-ID"] = f"Re: {approval['Subject']}", f"<{name}.1@mail.example.com>"
    msg["In-Reply-To"] = msg["References"] = str(approval["Message-ID"])
    msg.set_content(filled(case, _field(approval, "body")), subtype="html" if case.html else "plain")
    return bytes(msg)


@pytest.mark.parametrize("name", [
    "gmail_ko_tight_approve",  # a reply line right above a Korean attribution
    "zimbra_zero_width_approve",  # zero-width characters around the reply
    "french_webmail_subject_question_approve",  # a quoted subject ending in "?"
    "polymail_six_lines_reject",  # an attribution over six lines
    "qq_zh_header_block_approve",  # a Chinese header block over an unquoted copy
])
async def test_a_real_reply_through_the_channel_records_the_corpus_decision(api, app, inbox, ledger, name):
    case = CASES[name]
    thread, _, approvals = await start(api, app, inbox)
    r = await post(api, reply_to(approvals["bob@example.com"], name))
    assert r.json()["status"] == "accepted", r.json()
    done = await settle(api, thread["id"])
    [decision] = [e for e in done["events"] if e["type"] == "human_response"]
    assert decision["approve"] is (case.decision == "approve")
    assert decision["user"] == "bob@example.com"
    if case.decision == "reject":
        assert decision["text"] == case.feedback
    assert len(ledger_lines(ledger)) == (1 if case.decision == "approve" else 0)


async def test_without_the_kept_text_a_reply_is_read_by_the_language_independent_rules(api, app, inbox, redis):
    thread, _, approvals = await start(api, app, inbox)
    kept = [k async for k in redis.scan_iter("deploybot:ref:email:sent:*")]
    ttls = [await redis.ttl(k) for k in kept]
    assert len(kept) >= 2 and all(0 < ttl <= 30 * 24 * 3600 for ttl in ttls)  # bob's, carol's, alice's
    await redis.delete(*kept)  # expired, say
    r = await post(api, reply_to(approvals["bob@example.com"], "gmail_de_top_reject"))
    assert r.json()["status"] == "accepted", r.json()
    done = await settle(api, thread["id"])
    [decision] = [e for e in done["events"] if e["type"] == "human_response"]
    assert decision["approve"] is False and decision["text"] == CASES["gmail_de_top_reject"].feedback
