"""Email hardening: what a stranger, an oversize header, a spoofed From, a code for another
approval, a header that would break a mail and a huge text do. Real Redis, real SMTP
(aiosmtpd), the real web app."""

from __future__ import annotations

import asyncio
import logging
import re
import threading
from collections.abc import Iterator
from email.message import EmailMessage
from typing import Any

import pytest
from aiosmtpd.controller import Controller

from bot.adapters.channels.email import parse as email_parse
from bot.adapters.channels.email import render as email_render
from bot.adapters.channels.email.endpoint import MAX_MESSAGE_ID, MAX_SENT_LOOKUPS
from bot.adapters.channels.email.parse import MAX_PARTS, MAX_REFERENCES
from bot.testing.cluster import free_port
from tests.adapters.channels.email.test_email import (
    MAILBOXES,
    SECRET,
    TRUSTED,
    Inbox,
    _field,
    gmail_reply,
    post,
    raw_mail,
    start,
)
from tests.helpers import eventually, ledger_lines, reply, settle

pytestmark = [pytest.mark.redis, pytest.mark.network]

# Periodic chores' turn keys come and go on their own, and so does the workers' handoff stream
# (the thread's own run, handed over before the mails came, is trimmed whenever a worker gets
# to it: on a loaded machine after them). What the mails could make happen is what `spy` counts.
TURN = re.compile(rb":turn:|^deploybot:work$")


@pytest.fixture
def smtp_port() -> int:
    return free_port()


@pytest.fixture
def inbox(smtp_port) -> Iterator[Inbox]:
    """What the bot sends, as test_email's fixture (kept apart: ruff sees an imported fixture
    as redefined by every test that takes it)."""
    box = Inbox()
    controller = Controller(box, hostname="127.0.0.1", port=smtp_port)
    controller.start()
    yield box
    controller.stop()


@pytest.fixture
def approvers() -> str:
    """APPROVERS (chat): "*" lets anyone decide; a test parametrizes it to name people."""
    return "*"


@pytest.fixture
def settings(settings, smtp_port, inbox, approvers):
    return settings.model_copy(update={
        "smtp_host": "127.0.0.1", "smtp_port": smtp_port, "smtp_tls": "none",
        "email_from": "deploybot@example.com", "inbound_email_secret": SECRET,
        "email_reply_secret": "reply-secret", "email_trusted_authserv_ids": TRUSTED,
        "email_mailbox_authenticated_domains": MAILBOXES,
        # bob approves and may also write to the bot: a From of his proves nothing by itself
        "email_allowed_senders": "alice@example.com,@corp.example,bob@example.com",
        "approver_emails": "production:bob@example.com,carol@example.com",
        "approvers": approvers,
    })


class CountingInbox:
    """The channel's Inbox, with every call it makes counted."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.calls: list[tuple[str, tuple[Any, ...]]] = []

    def __getattr__(self, name: str) -> Any:
        method = getattr(self.inner, name)

        async def call(*args: Any) -> Any:
            self.calls.append((name, args))
            return await method(*args)

        return call


def spy(app) -> CountingInbox:
    counting = CountingInbox(app.adapter("email").inbox)
    app.adapter("email").inbox = counting
    return counting


async def keys(redis) -> dict[bytes, int]:
    """Every key (but chores' turn keys) -> a stream's length, or the key's type. An empty
    stream is left out: a worker creates the handoff stream on its first read, whenever that
    happens to be, and it holds nothing."""
    found = {}
    for key in await redis.keys("*"):
        if TURN.search(key):
            continue
        kind = (await redis.type(key)).decode()
        found[key] = await redis.xlen(key) if kind == "stream" else kind
    return {key: value for key, value in found.items() if value != 0}


def mime(body: str = "hello", **headers: str) -> bytes:
    """Raw RFC 822 written by hand, for headers EmailMessage would refuse or refold."""
    fields = {"From": "eve@elsewhere.example", "To": "deploybot@example.com", "Subject": "hi",
              "Message-ID": "<m1@mail.example.com>", "Content-Type": "text/plain; charset=utf-8"}
    fields.update({k.replace("_", "-"): v for k, v in headers.items()})
    # As the receiving server hands it over: its verdict that the From's domain sent it.
    domain = fields["From"].rpartition("@")[2].rstrip(">")
    fields = {"Authentication-Results": f"{TRUSTED}; dmarc=pass header.from={domain}", **fields}
    head = "".join(f"{k}: {v}\r\n" for k, v in fields.items())
    return f"{head}\r\n{body}\r\n".encode()


def code(approval: EmailMessage) -> str:
    return re.search(r"approval code: (\S+)", _field(approval, "body"))[1]


async def approvals_of(inbox, root: str) -> dict[str, EmailMessage]:
    found = await inbox.wait_for(2, body="Reply APPROVE to deploy", in_reply_to=root)
    return {str(m["To"]): m for m in found}


async def launch(api, inbox, text: str, message_id: str) -> tuple[dict, dict[str, EmailMessage]]:
    r = await post(api, raw_mail(text, message_id=message_id))
    assert r.json()["status"] == "accepted", r.text
    thread = await settle(api, r.json()["detail"])
    return thread, await approvals_of(inbox, message_id)


# --- 1, 2: strangers leave nothing behind; every header that becomes a key is bounded -------


async def test_a_strangers_mail_leaves_nothing_in_redis_and_is_not_looked_up(api, app, inbox, redis, caplog):
    caplog.set_level(logging.WARNING)
    counting = spy(app)
    before = await keys(redis)
    huge_id = "<" + "a" * 900_000 + "@elsewhere.example>"
    many_refs = " ".join(f"<r{i}.{'b' * 100}@elsewhere.example>" for i in range(5000))
    strangers = [
        mime("deploy backend v1.2.3 to staging", Message_ID=huge_id),
        mime("deploy backend v1.2.3 to staging", In_Reply_To="<r0@x>", References=many_refs),
        # a code for someone else: refused on the HMAC alone, nothing read or written
        mime("APPROVE", To=f"deploybot+{'a' * 16}.{9_999_999_999}.{'b' * 16}@example.com"),
    ]
    answers = [(await post(api, raw)).json()["status"] for raw in strangers]
    assert answers == ["ignored", "ignored", "refused"]
    await app.adapter("email").drain()

    assert counting.calls == []  # no dedupe mark, no reference looked up, no link
    assert await keys(redis) == before
    assert inbox.messages == []  # a stranger is only logged
    assert "eve@elsewhere.example" in caplog.text and "a" * 1000 not in caplog.text
    assert (await api.get("/threads")).json()["threads"] == []


async def test_an_oversize_message_id_or_references_from_a_known_sender_is_bounded(api, app, inbox, redis):
    counting = spy(app)
    before = await keys(redis)
    huge_id = "<" + "a" * 900_000 + "@mail.example.com>"
    r = await post(api, mime("deploy backend v1.2.3 to staging", From="alice@example.com", Message_ID=huge_id))
    assert r.json()["status"] == "refused" and f"longer than {MAX_MESSAGE_ID}" in r.json()["detail"]
    told = (await inbox.wait_for(to="alice@example.com", body="I did not act on your message"))[0]
    assert told["In-Reply-To"] is None  # not echoed into a header
    await app.adapter("email").drain()
    assert counting.calls == [] and await keys(redis) == before

    # 2,000 references, half of them huge: at most MAX_REFERENCES lookups, nothing huge stored.
    refs = [f"<r{i}.{'b' * (400 if i % 2 else 50)}@mail.example.com>" for i in range(2000)]
    r = await post(api, mime("list tags", From="alice@example.com", Message_ID="<ok@mail.example.com>",
                             In_Reply_To=refs[0], References=" ".join(reversed(refs))))
    assert r.json()["status"] == "accepted"
    await settle(api, r.json()["detail"])
    lookups = [args[0] for name, args in counting.calls if name == "lookup"]
    sent = [name for name in lookups if name.startswith("email:sent:")]  # the mail it answers, for its text
    assert 0 < len(lookups) - len(sent) <= MAX_REFERENCES and len(sent) <= MAX_SENT_LOOKUPS + 1
    assert all(len(name) <= MAX_MESSAGE_ID + 20 for name in lookups)
    assert max(len(k) for k in await keys(redis)) < 400


async def test_the_mime_parse_runs_off_the_event_loop(api, app, inbox, monkeypatch):
    entered, release, outcome = threading.Event(), threading.Event(), {}
    real = email_parse.read

    def slow_parse(raw: bytes) -> email_parse.Inbound:
        entered.set()
        outcome["released"] = release.wait(10)  # False: nobody could release it (the loop was blocked)
        return real(raw)

    monkeypatch.setattr(email_parse, "read", slow_parse)
    posting = asyncio.create_task(post(api, raw_mail("list tags")))
    await eventually(entered.is_set, within=10)
    # While the parse runs, the loop serves everything else (here: the health check).
    assert (await api.get("/healthz")).status_code == 200
    release.set()
    assert (await posting).json()["status"] == "accepted"
    assert outcome["released"] is True


async def test_a_message_of_thousands_of_mime_parts_is_refused_and_leaves_nothing(api, app, inbox, redis, monkeypatch):
    parsed = []
    real = email_parse.read
    monkeypatch.setattr(email_parse, "read", lambda raw: parsed.append(1) or real(raw))
    before = await keys(redis)
    parts = "".join(f"--b\r\nContent-Type: text/plain\r\n\r\nx{i}\r\n" for i in range(5000))
    raw = mime(f"{parts}--b--", MIME_Version="1.0", Content_Type="multipart/mixed; boundary=b")
    r = await post(api, raw)
    assert r.status_code == 400 and f"more than {MAX_PARTS} MIME parts" in r.json()["detail"]
    assert parsed == [1] and await keys(redis) == before
    ok = "".join("--b\r\nContent-Type: text/plain\r\n\r\nlist tags\r\n" for _ in range(3))
    r = await post(api, mime(f"{ok}--b--", From="alice@example.com", MIME_Version="1.0",
                             Content_Type="multipart/mixed; boundary=b"))
    assert r.json()["status"] == "accepted" and parsed == [1, 1]


# --- 3: the reply token from the address wins; a code for another approval is refused -------


async def test_a_code_for_another_approval_is_refused(api, app, inbox, ledger):
    x_thread, x_approvals = await launch(api, inbox, "deploy backend v1.2.3 to production", "<x-root@mail.example.com>")
    y_thread, y_approvals = await launch(api, inbox, "deploy backend v1.2.2 to production", "<y-root@mail.example.com>")
    x_mail, y_mail = x_approvals["bob@example.com"], y_approvals["bob@example.com"]

    # In Y's email thread (In-Reply-To: Y's approval email), no token in the address, X's code
    # in the body: the code is for another deploy than the email replied to.
    r = await post(api, raw_mail(f"APPROVE\n\napproval code: {code(x_mail)}", sender="bob@example.com",
                                 subject=f"Re: {y_mail['Subject']}", in_reply_to=str(y_mail["Message-ID"])))
    assert r.json()["status"] == "refused" and "another deploy" in r.json()["detail"]

    # Sent to Y's reply address, X's code pasted into the new text: ambiguous, refused.
    r = await post(api, raw_mail(f"APPROVE\napproval code: {code(x_mail)}", sender="bob@example.com",
                                 to=str(y_mail["Reply-To"]), in_reply_to=str(y_mail["Message-ID"])))
    assert r.json()["status"] == "refused" and "another deploy" in r.json()["detail"]

    for thread in (x_thread, y_thread):
        now = await settle(api, thread["id"])
        assert now["status"] == "waiting_for_approval" and "human_response" not in [e["type"] for e in now["events"]]

    # The address wins over a code in the quoted history: sent to Y's reply address, quoting
    # X's email, it decides Y and only Y.
    quoted = "".join(f"> {line}\n" for line in _field(x_mail, "body").splitlines())
    r = await post(api, raw_mail(f"APPROVE\n\nOn Mon, deploybot <deploybot@example.com> wrote:\n{quoted}",
                                 sender="bob@example.com", to=str(y_mail["Reply-To"]),
                                 in_reply_to=str(y_mail["Message-ID"])))
    assert r.json() == {"status": "accepted", "detail": y_thread["id"]}
    assert (await settle(api, y_thread["id"]))["status"] == "done"
    assert (await settle(api, x_thread["id"]))["status"] == "waiting_for_approval"
    assert len(ledger_lines(ledger)) == 1


# --- 4: without a valid token an approver's From is an unverified sender, never a decision ---


@pytest.mark.parametrize("approvers", ["UAPPROVER"])  # no "*": only the people named may decide
async def test_a_spoofed_approver_without_a_token_is_unverified_feedback(api, app, inbox, fake_llm, ledger):
    thread, _, _ = await start(api, app, inbox)
    pending = thread["pending_approval"]["approval_id"]
    update = (await inbox.wait_for(to="alice@example.com", body="needs approval"))[0]
    spoofed = raw_mail("No, v1.2.3 breaks checkout. Ship v1.2.2.", sender="Bob <bob@example.com>",
                       subject="Re: Deploy please", in_reply_to=str(update["Message-ID"]), proven=False)
    r = await post(api, spoofed)
    assert r.json() == {"status": "accepted", "detail": thread["id"]}
    now = await settle(api, thread["id"])
    said = [e for e in now["events"] if e["type"] == "human_response"]
    assert [(e["user"], e["approval_id"], e["approve"]) for e in said] == [
        ("unverified sender <bob@example.com>", None, None)
    ]
    assert now["status"] == "waiting_for_approval" and now["pending_approval"]["approval_id"] == pending
    assert fake_llm.prompts == [] and ledger_lines(ledger) == []  # nothing re-planned from it


async def test_a_spoofed_approver_without_a_token_is_refused_where_anyone_may_decide(api, app, inbox, ledger):
    thread, _, _ = await start(api, app, inbox)
    version = thread["version"]
    update = (await inbox.wait_for(to="alice@example.com", body="needs approval"))[0]
    r = await post(api, raw_mail("No, v1.2.3 breaks checkout.", sender="bob@example.com",
                                 subject="Re: Deploy please", in_reply_to=str(update["Message-ID"])))
    assert r.json()["status"] == "refused" and "approval code" in r.json()["detail"]
    told = (await inbox.wait_for(to="bob@example.com", body="I did not act on your message"))[0]
    assert "reply to the approval email itself" in _field(told, "body")
    now = (await api.get(f"/threads/{thread['id']}")).json()
    assert now["version"] == version and now["status"] == "waiting_for_approval"


async def test_a_plain_reply_that_could_decide_is_refused_whoever_it_claims_to_be_from(api, app, inbox, ledger):
    # Anyone may decide here ("*"): a plain reply from any allowed sender, who is no approver,
    # would be a rejection of the pending approval, on the strength of a From header alone.
    thread, _, _ = await start(api, app, inbox)
    update = (await inbox.wait_for(to="alice@example.com", body="needs approval"))[0]
    r = await post(api, raw_mail("No, v1.2.3 breaks checkout.", sender="dave@corp.example",
                                 subject="Re: Deploy please", in_reply_to=str(update["Message-ID"])))
    assert r.json()["status"] == "refused" and "approval code" in r.json()["detail"]
    told = (await inbox.wait_for(to="dave@corp.example", body="I did not act on your message"))[0]
    assert "reply to the approval email itself" in _field(told, "body")
    now = (await api.get(f"/threads/{thread['id']}")).json()
    assert now["version"] == thread["version"] and now["status"] == "waiting_for_approval"
    assert ledger_lines(ledger) == []


async def test_an_approver_who_is_no_allowed_sender_is_ignored_without_a_code(api, app, inbox, redis):
    # carol approves, but may not write to the bot: without a code her From proves nothing
    thread, _, _ = await start(api, app, inbox)
    update = (await inbox.wait_for(to="alice@example.com", body="needs approval"))[0]
    counting = spy(app)
    r = await post(api, raw_mail("No, v1.2.3 breaks checkout.", sender="carol@example.com",
                                 subject="Re: Deploy please", in_reply_to=str(update["Message-ID"])))
    assert r.json() == {"status": "ignored", "detail": "not an allowed sender"}
    await app.adapter("email").drain()
    assert counting.calls == [] and not [m for m in inbox.messages if "did not act" in _field(m, "body")]
    assert (await api.get(f"/threads/{thread['id']}")).json()["version"] == thread["version"]


async def test_a_reply_with_a_valid_code_and_no_text_of_its_own_is_refused(api, app, inbox, ledger):
    thread, _, approvals = await start(api, app, inbox)
    r = await post(api, gmail_reply(approvals["bob@example.com"], "", "bob@example.com"))  # only the quote
    assert r.json()["status"] == "refused" and "reply approve, or say what should change" in r.json()["detail"]
    assert await inbox.wait_for(to="bob@example.com", body="reply approve, or say what should change")
    now = (await api.get(f"/threads/{thread['id']}")).json()
    assert now["version"] == thread["version"] and now["status"] == "waiting_for_approval"


async def test_a_new_email_with_neither_subject_nor_text_is_refused(api, app, inbox):
    r = await post(api, raw_mail("> deploy backend v1.2.3\n> to production", subject=""))
    assert r.status_code == 200 and r.json()["status"] == "refused"
    assert "neither a subject nor any new text" in r.json()["detail"]
    assert await inbox.wait_for(to="alice@example.com", body="neither a subject nor any new text")
    assert (await api.get("/threads")).json()["threads"] == []


# --- automatic mail: never feedback, never answered (it could loop) ------------------------


async def test_out_of_office_replies_and_bounces_are_ignored_and_leave_nothing(api, app, inbox, redis, caplog):
    caplog.set_level(logging.INFO)
    thread, root, approvals = await start(api, app, inbox)
    bob = approvals["bob@example.com"]
    update = (await inbox.wait_for(to="alice@example.com", body="needs approval"))[0]
    await app.adapter("email").drain()
    sent, counting, before = len(inbox.messages), spy(app), await keys(redis)
    automatic = [
        # bob's out-of-office answers the approval email: its Reply-To carries his valid code
        mime("I am out of the office until Monday.", From="bob@example.com", To=str(bob["Reply-To"]),
             In_Reply_To=str(bob["Message-ID"]), Subject="Automatic reply: hi", Auto_Submitted="auto-replied",
             Message_ID="<ooo-1@mail.example.com>"),
        mime("Delivery to a@x failed.", From="alice@example.com", In_Reply_To=str(update["Message-ID"]),
             Return_Path="<>", Message_ID="<bounce-1@mail.example.com>"),
        mime("Away.", From="alice@example.com", In_Reply_To=root, Precedence="auto_reply",
             Message_ID="<ooo-2@mail.example.com>"),
        mime("Away.", From="alice@example.com", In_Reply_To=root, X_Autoreply="yes",
             Message_ID="<ooo-3@mail.example.com>"),
        # iCloud's vacation reply sets none of the above: its own header, and its subject
        mime("I am on vacation.", From="bob@example.com", To=str(bob["Reply-To"]), X_Apple_Action="VACATION",
             In_Reply_To=str(bob["Message-ID"]), Subject="Auto reply: hi", Message_ID="<ooo-4@icloud.com>"),
        # a bounce from the receiving server quoting the approval email (its code in the quote)
        mime("Delivery has failed.\n\n" + "".join(
            f"> {line}\n" for line in bob.get_body(preferencelist=("plain",)).get_content().splitlines()),
             From="MAILER-DAEMON@example.com", In_Reply_To=str(bob["Message-ID"]),
             Subject="Undelivered Mail Returned to Sender", Message_ID="<bounce-2@mx.example.com>"),
    ]
    for raw in automatic:
        r = await post(api, raw)
        assert r.json()["status"] == "ignored" and "automatic" in r.json()["detail"], r.text
    await app.adapter("email").drain()
    assert counting.calls == [] and await keys(redis) == before and len(inbox.messages) == sent
    assert (await api.get(f"/threads/{thread['id']}")).json()["version"] == thread["version"]
    assert "automatic message" in caplog.text
    # and every mail the bot sent says it is automatic, so auto-responders do not answer it
    assert inbox.messages and all(str(m["Auto-Submitted"]) == "auto-replied" for m in inbox.messages)


# --- 5: headers from input are sanitized; a mail that cannot be built is recorded ----------


async def test_a_message_id_with_encoded_crlf_still_gets_the_approval_emails_out(api, app, inbox):
    raw = mime("deploy backend v1.2.3 to production", From="alice@example.com",
               Subject="=?utf-8?q?Deploy=00please=0D=0ABcc:_mallory@evil.example?=",
               Message_ID="=?utf-8?q?<root=0D=0AX-Evil:_1@mail.example.com>?=")
    r = await post(api, raw)
    assert r.json()["status"] == "accepted"
    thread = await settle(api, r.json()["detail"])
    assert thread["status"] == "waiting_for_approval"
    sent = await inbox.wait_for(2, body="Reply APPROVE to deploy")
    sent += await inbox.wait_for(to="alice@example.com", body="needs approval")
    for msg in sent:
        assert msg["X-Evil"] is None and msg["Bcc"] is None
        for name, value in msg.items():
            assert not re.search(r"[\x00-\x1f\x7f]", str(value)), (name, value)
        assert str(msg["In-Reply-To"]) == "<rootX-Evil:1@mail.example.com>"
    assert not [e for e in thread["events"] if e["type"] == "delivery_failed"]


async def test_an_approval_email_that_cannot_be_built_is_a_delivery_failure(api, app, inbox, monkeypatch, caplog):
    caplog.set_level(logging.ERROR)

    def broken(*args: object) -> str:
        raise RuntimeError("template exploded")

    monkeypatch.setattr(email_render, "approval_text", broken)
    r = await post(api, raw_mail("deploy backend v1.2.3 to production"))
    thread_id = r.json()["detail"]

    async def failures() -> list[dict]:
        events = (await api.get(f"/threads/{thread_id}")).json()["events"]
        failed = [e for e in events if e["type"] == "delivery_failed"]
        return failed if len(failed) == 2 else []

    failed = await eventually(failures, within=10, every=0.05)
    assert sorted(e["to"] for e in failed) == ["bob@example.com", "carol@example.com"]
    assert all("could not build" in e["reason"] and "template exploded" in e["reason"] for e in failed)
    assert "could not be built" in caplog.text
    # The other mails of the same event still go out.
    assert await inbox.wait_for(to="alice@example.com", body="needs approval")


# --- 6: long texts are cut in mail bodies; the events keep them whole ----------------------


async def test_a_huge_rejection_is_cut_in_the_email_and_whole_in_the_thread(api, app, inbox, fake_llm):
    thread, _, _ = await start(api, app, inbox)
    fake_llm.script(reply(intent="done_for_now", message="ok, not deploying"))
    feedback = "v1.2.3 breaks checkout. " + "log line\n" * 200_000  # 2 MB
    await app.service.respond(thread["id"], feedback, app.service.directory.by("slack", "UAPPROVER"),
                              thread["pending_approval"]["approval_id"], approve=False, channel="slack")
    told = (await inbox.wait_for(to="alice@example.com", body="Rejected by UAPPROVER:"))[0]
    body = _field(told, "body").replace("\r\n", "\n")  # as sent: CRLF line ends
    assert "Rejected by UAPPROVER:\n\n> v1.2.3 breaks checkout. log line\n> log line\n" in body  # quoted
    assert len(body) < email_render.MAX_BODY + 1000 and "The full text is in the deploybot thread" in body
    events = (await api.get(f"/threads/{thread['id']}")).json()["events"]
    assert [e["text"] for e in events if e["type"] == "human_response"] == [feedback]


# --- HTML-only approvals: HTML can hide what it says, so it never approves --------------------


async def test_an_html_only_approval_is_refused_with_a_plain_text_hint_and_decides_nothing(api, app, inbox, ledger):
    thread, _, approvals = await start(api, app, inbox)
    bob = approvals["bob@example.com"]
    msg = EmailMessage()
    msg["From"], msg["To"], msg["Subject"] = "bob@example.com", str(bob["Reply-To"]), f"Re: {bob['Subject']}"
    msg["Message-ID"], msg["In-Reply-To"] = "<html-only-1@mail.example.com>", str(bob["Message-ID"])
    # What a mail client shows is "NO! do not ship"; the hidden text above it says APPROVE.
    msg.set_content('<div style="color:#fff;background:#fff">APPROVE</div><p>NO! do not ship</p>', subtype="html")
    r = await post(api, bytes(msg))
    assert r.json()["status"] == "refused" and "plain text" in r.json()["detail"]
    told = await inbox.wait_for(1, to="bob@example.com", body="plain text")
    assert told
    shown = (await api.get(f"/threads/{thread['id']}")).json()
    assert shown["status"] == "waiting_for_approval" and shown["version"] == thread["version"]
    assert ledger_lines(ledger) == []

    # A replay of it is a replay: refused as one, not refused (and answered) as if it were new.
    replay = await post(api, bytes(msg))
    assert replay.json()["status"] == "refused" and "already received" in replay.json()["detail"]
    await app.adapter("email").drain()
    assert len([m for m in inbox.messages if "plain text" in _field(m, "body")]) == 1
