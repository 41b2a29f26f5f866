"""The inbound endpoint: one raw RFC 822 message per POST, the form inbound-mail services deliver.

In this order: the inbound secret, the parse (in a thread: a big MIME message must not hold up
the event loop, which also serves Slack acknowledgements and lease renewals), who sent it (an
allowed sender, an approver, or a valid reply token), and only then anything that reads or
writes the store. A stranger's mail leaves nothing behind."""

from __future__ import annotations

import asyncio
import base64
import dataclasses
import hmac
import logging

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from bot.adapters.channels.email import confirmation, inbound, names, parse, proof, render, reply
from bot.adapters.channels.email.answers import Answer, refuse
from bot.adapters.channels.email.mailbox import Mailbox
from bot.adapters.channels.email.render import short

log = logging.getLogger(__name__)
SEEN_TTL = 30 * 24 * 3600  # a replayed Message-ID is refused for a month
MAX_MESSAGE_ID = render.MAX_MESSAGE_ID  # characters; a longer one is refused (it would be a key)
MAX_ADDRESS = render.MAX_ADDRESS  # a longer From address is nobody we know
MAX_SUBJECT = 998  # kept of an inbound subject (it is stored with the thread)
MAX_SENT_LOOKUPS = 3  # references looked up for the mail a reply answers (In-Reply-To first)


async def serve(channel: Mailbox, request: Request) -> Response:
    if not _authorized(channel, request):
        return JSONResponse({"detail": "wrong or missing inbound secret"}, status_code=401)
    if int(request.headers.get("content-length") or 0) > channel.max_bytes:
        return JSONResponse({"detail": f"larger than {channel.max_bytes} bytes"}, status_code=413)
    raw = await request.body()
    if len(raw) > channel.max_bytes:
        return JSONResponse({"detail": f"larger than {channel.max_bytes} bytes"}, status_code=413)
    try:
        mail = await asyncio.to_thread(parse.read, raw)
    except parse.MalformedEmail as e:
        log.warning("email: refused a malformed message (%d bytes): %s", len(raw), short(str(e)))
        return JSONResponse({"detail": f"malformed email: {short(str(e))}"}, status_code=400)
    status, detail = await receive(channel, mail)
    return JSONResponse({"status": status, "detail": detail})


def _authorized(channel: Mailbox, request: Request) -> bool:
    offered = request.query_params.get("secret") or ""
    auth = request.headers.get("authorization", "")
    if auth.startswith("Bearer "):
        offered = auth[7:]
    elif auth.startswith("Basic "):
        try:
            offered = base64.b64decode(auth[6:]).decode().partition(":")[2]
        except ValueError:
            return False
    return hmac.compare_digest(offered.encode(), channel.inbound_secret.encode())


async def receive(channel: Mailbox, mail: parse.Inbound) -> Answer:
    mail = bounded(mail)
    if mail.automatic:
        # An out-of-office reply or a bounce is no feedback, and answering it could loop
        # (the bot mails the thread's starter on every event): nothing is stored or sent.
        log.info("email: ignored an automatic message from %s (%s)", short(mail.sender), mail.automatic)
        return "ignored", f"an automatic message ({mail.automatic})"
    # Who sent it, before anything is read or written: a stranger is only logged.
    approval_id, token_error = proof.check_token(channel, mail)
    # A confirmation code ("Did you send this?") is signed as one: it never decides.
    confirmed, confirmation_error = proof.confirmation(channel, mail) if token_error else (None, None)
    token_error = None if confirmed else confirmation_error or token_error
    # A genuine approval code that only lapsed proves the address as well as a valid one
    # (someone an approval was escalated to is no approver): they are told it expired.
    lapsed = proof.lapsed(channel, mail) if token_error else None
    allowed = proof.is_allowed(channel, mail.sender)
    known = allowed or proof.is_approver(channel, mail.sender)
    if len(mail.sender) > MAX_ADDRESS or not (approval_id or confirmed or lapsed or known):
        log.warning("email: ignored a message from %s, who is not an allowed sender: %s",
                    short(mail.sender), token_error or "no valid approval code")
        return ("refused", token_error) if token_error else ("ignored", "not an allowed sender")
    if mail.token is None and not allowed:
        # An approver's address without an approval code: only replies to approval emails
        # are taken from it (a From header alone proves nothing).
        log.warning("email: ignored a message from %s without an approval code", mail.sender)
        return "ignored", "not an allowed sender"
    if mail.cut:
        log.info("email: cut oversize headers of %s: %s", short(mail.message_id), "; ".join(mail.cut))
    if not mail.message_id or len(mail.message_id) > MAX_MESSAGE_ID:
        return await refuse(channel, mail, f"its Message-ID is empty or longer than {MAX_MESSAGE_ID} characters")
    # A replay is caught before anything else is said about the message: each copy of a
    # refused one would otherwise be refused (and answered) as if it were new.
    fresh, _, _ = await channel.inbox.receive(names.EMAIL_INBOUND, mail.message_id, SEEN_TTL, None)
    if not fresh:
        return await refuse(channel, mail, f"message {mail.message_id} was already received")
    mail = await asyncio.to_thread(reply.reread, mail, await _sent(channel, mail, approval_id or lapsed))
    try:
        if mail.refusal:  # e.g. an approval from HTML-only mail, which can hide what it says
            return await refuse(channel, mail, mail.refusal)
        if lapsed:
            return await inbound.too_late(channel, mail, lapsed, token_error or "the approval code has expired")
        if confirmed:
            return await confirmation.confirm(channel, mail, confirmed)
        return await inbound.handle(channel, mail, approval_id, token_error)
    except Exception:
        # A retry must not look like a replay.
        await channel.inbox.forget(names.EMAIL_INBOUND, mail.message_id)
        raise


async def _sent(channel: Mailbox, mail: parse.Inbound, approval_id: str | None) -> reply.Sent | None:
    """What the bot said in the mail `mail` answers (by In-Reply-To/References, then the
    approval email its code is for), so its new text is found by it; None when none is
    kept (the reply is read by the language-independent rules alone)."""
    refs = list(mail.references[:MAX_SENT_LOOKUPS])
    if approval_id:
        refs.append(render.approval_message_id(approval_id, mail.sender, channel.sender))
    try:
        for ref in refs:
            if sent := reply.Sent.loads(await channel.inbox.lookup(names.email_sent(ref))):
                return sent
    except Exception:  # read without it rather than not at all
        log.exception("email: could not look up the mail %s answers", short(mail.message_id))
    return None


def bounded(mail: parse.Inbound) -> parse.Inbound:
    """`mail` with its Message-ID (it becomes a key) without control characters or
    whitespace (one longer than MAX_MESSAGE_ID is kept, and refused by the caller) and a
    bounded subject. The references are bounded and cleaned by the parser."""
    message_id = mail.message_id if len(mail.message_id) > MAX_MESSAGE_ID else parse.clean_id(mail.message_id)
    return dataclasses.replace(
        mail, message_id=message_id, subject=render.header(mail.subject[:MAX_SUBJECT * 2], MAX_SUBJECT),
    )
