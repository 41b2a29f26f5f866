"""What deploybot says by email, as ready-to-send messages (plain text + HTML). Pure."""

from __future__ import annotations

import html
from email.message import EmailMessage
from email.utils import make_msgid

from bot.events import ApprovalRequested, Event, HumanResponse
from bot.notices import notice
from bot.thread import Thread


def text_for(thread: Thread, event: Event) -> str | None:
    """The update a requester gets by email for `event`; None: nothing to say."""
    match event:
        case HumanResponse(approve=True):
            return f"Approved by {event.user}."
        case HumanResponse(approve=False) if event.approval_id:
            return f"Rejected by {event.user}" + (f": {event.text}" if event.text else ".")
        case ApprovalRequested():
            return (
                f"Deploying {event.service} {event.tag} to {event.environment} needs approval; "
                f"I have asked the approvers. The request expires {event.expires_at:%Y-%m-%d %H:%M} UTC."
            )
    n = notice(thread, event)
    if n is None:
        return None
    return "\n\n".join(part for part in (n.render(), n.url, n.detail) if part)


def approval_text(request: ApprovalRequested, token: str) -> str:
    return "\n".join([
        f"{request.requested_by or 'Someone'} asked to deploy:",
        "",
        f"  Service:     {request.service}",
        f"  Tag:         {request.tag}",
        f"  Commit:      {request.commit}",
        f"  Environment: {request.environment}",
        *([f"  Why:         {request.reason}"] if request.reason else []),
        f"  Valid until: {request.expires_at:%Y-%m-%d %H:%M} UTC",
        "",
        "Reply APPROVE to deploy, or reply with what should change.",
        "",
        f"approval code: {token}",
    ])


def message(
    sender: str,
    to: str,
    subject: str,
    text: str,
    *,
    reply_to: str | None = None,
    in_reply_to: str | None = None,
) -> EmailMessage:
    msg = EmailMessage()
    msg["From"] = sender
    msg["To"] = to
    msg["Subject"] = subject
    msg["Message-ID"] = make_msgid(domain=sender.rpartition("@")[2] or None)
    if reply_to:
        msg["Reply-To"] = reply_to
    if in_reply_to:
        # Gmail, Outlook and Apple Mail thread on these two headers (and the subject).
        msg["In-Reply-To"] = in_reply_to
        msg["References"] = in_reply_to
    msg.set_content(text)
    msg.add_alternative(
        "<html><body><pre style=\"font-family: sans-serif; white-space: pre-wrap\">"
        f"{html.escape(text)}</pre></body></html>",
        subtype="html",
    )
    return msg


def reply_subject(subject: str) -> str:
    subject = " ".join(subject.split())
    return subject if subject.lower().startswith("re:") else f"Re: {subject or 'deploybot'}"
