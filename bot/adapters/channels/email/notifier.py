"""What the channel mails when events are recorded: approval emails to the addresses of each
approver the authority lets decide, the requester's updates in their mail thread, a notify
target's mails, and an approval over time in each approval email's thread (reminders, an
escalation's own approval emails, progress lines, its expiry)."""

from __future__ import annotations

import functools
import logging
from collections.abc import Iterable, Sequence
from email.message import EmailMessage

from bot.adapters.channels.email import confirmation, names, proof, render, sending, tokens
from bot.adapters.channels.email.kind import KIND
from bot.adapters.channels.email.mailbox import Mailbox
from bot.adapters.channels.email.render import short
from bot.core import authority, standing, wording
from bot.core.events import (
    ApprovalEscalated,
    ApprovalExpired,
    ApprovalReminded,
    ApprovalRequested,
    Event,
    HumanResponse,
    SenderConfirmationRequested,
    SenderConfirmed,
    UserMessage,
    principal_of,
)
from bot.core.people import ANYONE, describe, identity_for
from bot.core.thread import Thread
from bot.core.triggers import targets

log = logging.getLogger(__name__)


async def publish(channel: Mailbox, thread: Thread, new: Sequence[Event]) -> None:
    for event in new:
        if isinstance(event, ApprovalRequested):
            await _ask(channel, thread, event, _approver_mail_addresses(channel, thread, event))
        elif isinstance(event, SenderConfirmationRequested):
            await confirmation.ask(channel, thread, event)
        else:
            await _approval_thread(channel, thread, event)
        if thread.origin.channel == KIND:
            await _reply(channel, thread, event)
        for address in (a.lower() for a in targets(thread.origin.notify, KIND)):  # addresses compare lower-cased
            await _notify(channel, thread, event, address)


def text_for(channel: Mailbox, thread: Thread, event: Event) -> str | None:
    """What the requester (and a notify target) is told of `event` by email: a reminder
    names who may still decide; else render.text_for."""
    match event:
        case ApprovalReminded():
            request = thread.pending_approval()
            if request is None or request.approval_id != event.approval_id:
                return None
            deciders = describe(standing.of(thread, request, channel.policy).deciders or ())
            return wording.reminder(_what(request), deciders, request.expires_at)
        case ApprovalEscalated():
            request = thread.approval(event.approval_id)
            return wording.escalated(_what(request), describe(event.to)) if request else None
        case SenderConfirmationRequested():
            return None  # the confirmation mail itself says it
        case SenderConfirmed():
            return wording.sender_confirmed()
    return render.text_for(thread, event)


async def _notify(channel: Mailbox, thread: Thread, event: Event, address: str) -> None:
    """A notify target's mail (a trigger's, a schedule's): the thread's first message,
    then its updates as a requester gets them, all in one mail thread."""
    first = next((e for e in thread.events if isinstance(e, UserMessage)), None)
    if isinstance(event, UserMessage):
        text = wording.started_by(event.channel, event.user, event.text) if event is first else None
    else:
        text = text_for(channel, thread, event)
    if not text:
        return
    name = names.email_notify_root(thread.id, address)
    try:
        root = await channel.inbox.lookup(name)
    except Exception:
        log.exception("thread %s: could not look up the mail thread of %s", thread.id, short(address))
        root = None
    subject = f"deploybot: {first.text if first else thread.id}"
    if root:
        subject = render.reply_subject(subject)

    def build() -> EmailMessage:
        msg = render.message(channel.sender, address, subject, text, in_reply_to=root)
        if root is None:
            built.append(str(msg["Message-ID"]))
        return msg

    built: list[str] = []
    await sending.send(channel, thread, address, build)
    if built:
        await channel.inbox.link(name, built[0], thread.id)


async def _reply(channel: Mailbox, thread: Thread, event: Event) -> None:
    origin = thread.origin

    def build() -> EmailMessage | None:
        text = text_for(channel, thread, event)
        if not text:
            return None
        return render.message(
            channel.sender, origin.at(KIND, "from") or "", render.reply_subject(origin.at(KIND, "subject") or ""),
            text, in_reply_to=origin.at(KIND, "root"),
        )

    await sending.send(channel, thread, origin.at(KIND, "from") or "", build)


async def _ask(
    channel: Mailbox, thread: Thread, request: ApprovalRequested, addresses: Iterable[str], intro: str = ""
) -> None:
    """One email to each address (a Slack-only approver gets none), each with a reply token
    bound to that address."""
    addresses = sorted(set(addresses))
    if not addresses:
        return
    await channel.inbox.link(names.email_approval(request.approval_id), thread.id, thread.id)
    for address in addresses:
        await sending.send(
            channel, thread, address, functools.partial(_approval_mail, channel, thread, request, address, intro),
            must=True,  # without it nobody is asked: kept in the outbox until sent
        )


def _approval_subject(thread: Thread, request: ApprovalRequested) -> str:
    if thread.origin.channel == KIND:
        return render.reply_subject(thread.origin.at(KIND, "subject") or "")
    return f"Approve deploy: {request.service} {request.tag} to {request.environment}?"


def _approval_mail(
    channel: Mailbox, thread: Thread, request: ApprovalRequested, address: str, intro: str = ""
) -> EmailMessage:
    local, _, domain = channel.sender.partition("@")
    from_email = thread.origin.channel == KIND
    token = tokens.make_token(channel.reply_secret, request.approval_id, address, request.expires_at)
    return render.message(
        channel.sender, address, _approval_subject(thread, request),
        render.approval_text(request, token, intro, render.console_link(channel.public_url, thread.id)),
        reply_to=f"{local}+{token}@{domain}",
        in_reply_to=thread.origin.at(KIND, "root") if from_email else None,
        own_id=render.approval_message_id(request.approval_id, address, channel.sender),
    )


# --- an approval over time, in each approver's approval email thread ------------------------


async def _approval_thread(channel: Mailbox, thread: Thread, event: Event) -> None:
    """Follow-ups to whoever got an approval email: a reminder (those who may still
    decide), an escalation (an approval email of their own to each new person), each
    approval of several (a progress line) and its expiry (nothing was deployed)."""
    match event:
        case ApprovalReminded():
            request = thread.pending_approval()
            if request is None or request.approval_id != event.approval_id:
                return
            stands = standing.of(thread, request, channel.policy)
            text = wording.reminder(_what(request), describe(stands.deciders or ()), request.expires_at)
            await _follow_up(channel, thread, request, _still_asked(channel, thread, stands), text, decide=True)
        case ApprovalEscalated():
            found = standing.find(thread, event.approval_id)
            if found is None or found.closed:
                return
            request = found.request
            asked = _approver_mail_addresses(channel, thread, request)
            new = [a for a in proof.addresses(channel, _deciding(channel, thread, request, event.to)) if a not in asked]
            await _ask(channel, thread, request, new, wording.escalated_to_you(_what(request), request.expires_at))
        case HumanResponse(approve=True) if event.approval_id:
            found = standing.find(thread, event.approval_id)
            if found is None or found.required <= 1 or found.decision is not None:
                return
            text = render.progress_text(found)
            await _follow_up(channel, thread, found.request, _still_asked(channel, thread, found), text, decide=True)
        case ApprovalExpired():
            request = thread.approval(event.approval_id)
            if request is None:
                return
            what = _what(request)
            text = f"{wording.approval_expired_notice(what, event.expires_at)}\n\n{wording.no_longer_asked(what)}"
            await _follow_up(channel, thread, request, _asked(channel, thread, request), text, decide=False)


async def _follow_up(
    channel: Mailbox, thread: Thread, request: ApprovalRequested, addresses: Iterable[str], text: str,
    decide: bool,
) -> None:
    """A mail to each address in its approval email thread; with `decide`, its own
    approval code, so a reply to it decides as one to the approval email would."""
    local, _, domain = channel.sender.partition("@")
    subject = render.reply_subject(_approval_subject(thread, request))

    def build(address: str) -> EmailMessage:
        token = tokens.make_token(channel.reply_secret, request.approval_id, address, request.expires_at)
        return render.message(
            channel.sender, address, subject, render.follow_up_text(text, token) if decide else text,
            reply_to=f"{local}+{token}@{domain}" if decide else None,
            in_reply_to=render.approval_message_id(request.approval_id, address, channel.sender),
        )

    for address in sorted(set(addresses)):
        await sending.send(channel, thread, address, functools.partial(build, address))


def _approver_mail_addresses(channel: Mailbox, thread: Thread, request: ApprovalRequested) -> list[str]:
    """The addresses of the environment's approvers who may decide on `request` (the
    authority's answer: with approver_must_differ, never whoever asked for it)."""
    approvers = channel.policy.rules_for(request.environment).approvers
    return proof.addresses(channel, _deciding(channel, thread, request, approvers))


def _deciding(
    channel: Mailbox, thread: Thread, request: ApprovalRequested, principals: Iterable[str]
) -> list[str]:
    """Those of `principals` the authority lets decide on `request` (`*` is nobody's address)."""
    decide = authority.Decide(thread, request)
    return [p for p in principals
            if p != ANYONE and authority.why_not(channel.policy, identity_for(p), decide) is None]


def _asked(channel: Mailbox, thread: Thread, request: ApprovalRequested) -> list[str]:
    """Every address that got an approval email for `request`."""
    escalated_to = standing.of(thread, request).escalated_to
    escalated = proof.addresses(channel, _deciding(channel, thread, request, escalated_to))
    return sorted({*_approver_mail_addresses(channel, thread, request), *escalated})


def _still_asked(channel: Mailbox, thread: Thread, found: standing.Standing) -> list[str]:
    """The addresses asked whose person has not approved yet (one of several)."""
    approved = {principal_of(a) for a in found.given}
    directory = channel.policy.directory
    return [a for a in _asked(channel, thread, found.request) if directory.by(KIND, a).principal not in approved]


def _what(request: ApprovalRequested) -> str:
    return wording.what_to_deploy(request.service, request.tag, request.environment)
