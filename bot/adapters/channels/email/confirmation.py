"""A request nothing proved: it waits, as an unverified sender's, until the person its From
names answers "Did you send this?" from their mailbox (or it expires). One waits per address,
which is asked at most once per CONFIRMATION_EVERY: anyone can write an address in a From."""

from __future__ import annotations

import logging
import math
from datetime import datetime
from email.message import EmailMessage

from bot.adapters.channels.email import names, proof, render, sending, tokens
from bot.adapters.channels.email.answers import Answer, accepted, refuse, thread_of
from bot.adapters.channels.email.kind import KIND, normalise_address
from bot.adapters.channels.email.mailbox import Mailbox
from bot.adapters.channels.email.parse import Inbound
from bot.adapters.channels.email.render import short
from bot.core import wording
from bot.core.commands import is_approval
from bot.core.events import SenderConfirmationRequested, new_id
from bot.core.thread import Origin, Thread
from bot.runtime.service import Refused

log = logging.getLogger(__name__)
# Seconds: at most one "Did you send this?" to an address in this time. Anyone can write the
# address in a From, and each unproven request would mail it.
CONFIRMATION_EVERY = 10 * 60


async def start_unconfirmed(channel: Mailbox, mail: Inbound, origin: Origin, text: str) -> Answer:
    """Nothing proved the From: the request is recorded as an unverified sender's (no
    powers) and waits until the person it names confirms it from their mailbox. Anyone can
    write their address, so one request waits per address and it is asked at most once per
    CONFIRMATION_EVERY: any other is refused, stored nowhere, and answered to nobody (an
    answer would go to the address the limits protect)."""
    asked = _request(channel, mail, text)
    address = normalise_address(asked.address)
    if why := await _hold(channel, address, asked.expires_at):
        log.warning("email: refused %s from %s, unanswered: %s", short(mail.message_id), short(mail.sender), why)
        return "refused", why
    try:
        thread = await channel.service.launch(
            text, proof.unverified_identity(mail.sender), "email", origin, new_id(), proof.evidence(mail),
            then=[asked],
        )
    except BaseException:  # nothing waits, and nobody was asked
        await _release(channel, address, asked_too=True)
        raise
    return await accepted(channel, mail, thread.id)


async def _hold(channel: Mailbox, address: str, until: datetime) -> str | None:
    """Mark `address` as waiting on a confirmation until `until` and as asked now, in the
    Inbox (so every web process sees it); None when both were free, else why not (and
    nothing is held)."""
    waits = max(1, math.ceil((until - channel.service.clock()).total_seconds()))
    free, _, _ = await channel.inbox.receive(names.EMAIL_UNCONFIRMED, address, waits, None)
    if not free:
        return wording.sender_confirmation_waiting()
    askable, _, _ = await channel.inbox.receive(names.EMAIL_CONFIRMATIONS_MAILED, address, CONFIRMATION_EVERY, None)
    if not askable:
        await _release(channel, address)
        return wording.sender_asked_recently(CONFIRMATION_EVERY // 60)
    return None


async def _release(channel: Mailbox, address: str, asked_too: bool = False) -> None:
    """`address` waits on no confirmation any more; with `asked_too`, it was not asked either."""
    await channel.inbox.forget(names.EMAIL_UNCONFIRMED, address)
    if asked_too:
        await channel.inbox.forget(names.EMAIL_CONFIRMATIONS_MAILED, address)


def _request(channel: Mailbox, mail: Inbound, text: str) -> SenderConfirmationRequested:
    """Ask the person the From names (at their stored address; an allowed sender who is
    no person at the address itself) whether they sent it."""
    who = proof.sender(channel, mail)
    person = channel.service.directory.people.get(who.person) if who.person else None
    stored = [a for a in (person.ids.get(KIND, ()) if person else ()) if normalise_address(a) == mail.sender]
    return SenderConfirmationRequested(
        address=(stored or [mail.sender])[0], claimed=who.principal, text=text,
        expires_at=channel.service.clock() + channel.policy.approval_ttl,
    )


async def confirm(channel: Mailbox, mail: Inbound, confirmation_id: str) -> Answer:
    """A reply to "Did you send this?" from the mailbox it went to: an approval word
    confirms, and the request goes on as the person; anything else confirms nothing. The
    code confirms only the request it was sent for: a reply to another thread's mail that
    carries it is refused (its YES was said about something else)."""
    thread_id = await channel.inbox.lookup(names.email_confirmation(confirmation_id))
    if thread_id is None:
        return await refuse(channel, mail, "the confirmation code does not belong to any request", tell=True)
    try:
        thread = await channel.service.get(thread_id)
    except Refused as e:  # gone since (retention)
        return await refuse(channel, mail, e.message, tell=True)
    replied_to = await thread_of(channel, mail)
    if replied_to is not None and replied_to != thread_id:
        return await refuse(channel, mail, wording.confirmation_for_another_request(), thread, tell=True)
    if not is_approval(mail.text):
        return await refuse(channel, mail, wording.sender_not_confirmed(), thread, tell=True)
    try:
        await channel.service.confirm_sender(
            thread_id, confirmation_id, channel.service.directory.by(KIND, mail.sender), proof.evidence(mail), KIND,
        )
    except Refused as e:
        return await refuse(channel, mail, e.message, thread, tell=True)
    try:  # confirmed: nothing waits for them now (they are asked again once the window lapses)
        await _release(channel, mail.sender)
    except Exception:  # it lapses with the confirmation anyway
        log.exception("email: could not release the confirmation of %s", short(mail.sender))
    return await accepted(channel, mail, thread_id)


async def ask(channel: Mailbox, thread: Thread, asked: SenderConfirmationRequested) -> None:
    """"Did you send this?" to the address the request named, with a confirmation code
    (signed as one: it cannot decide an approval) in Reply-To and the body."""
    await channel.inbox.link(names.email_confirmation(asked.confirmation_id), thread.id, thread.id)
    local, _, domain = channel.sender.partition("@")

    def build() -> EmailMessage:
        token = tokens.make_token(
            channel.reply_secret, asked.confirmation_id, asked.address, asked.expires_at, tokens.CONFIRMATION,
        )
        return render.message(
            channel.sender, asked.address, render.reply_subject(thread.origin.at(KIND, "subject") or ""),
            render.confirmation_text(asked, token, CONFIRMATION_EVERY // 60), reply_to=f"{local}+{token}@{domain}",
            in_reply_to=thread.origin.at(KIND, "root"),
        )

    await sending.send(channel, thread, asked.address, build)
