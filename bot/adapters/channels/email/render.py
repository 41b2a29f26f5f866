"""What deploybot says by email, as ready-to-send messages (plain text + HTML). Pure.

Every header built from input (a subject, an address, a Message-ID from an inbound mail) is
sanitized: no CR, LF or other control characters, no bidi or other format characters
(U+202E would show a subject or an address reversed), and bounded. In a body, text a person
or the model wrote is either on one line (`one_line`) or a block whose every line starts
with "> " (`quoted`): a multi-line reason cannot forge a line of the bot's own ("Environment:
staging", "Reply APPROVE to ..."). A body longer than
MAX_BODY is cut, with a marker: the full text stays in the thread's events. Every mail says
it is automatic (`Auto-Submitted: auto-replied`, RFC 3834), so auto-responders leave it be.
"""

from __future__ import annotations

import hashlib
import html
import re
import unicodedata
from email.message import EmailMessage
from email.utils import make_msgid
from urllib.parse import quote

from bot.core import standing, wording
from bot.core.events import ApprovalRequested, Cancelled, Event, HumanResponse, LockTaken, SenderConfirmationRequested
from bot.core.notices import notice
from bot.core.public_url import without_userinfo
from bot.core.thread import Thread

MAX_BODY = 20_000  # characters of one email's text
MAX_FIELD = 2_000  # characters of one free-text field inside a message (a reason, feedback)
MAX_SUBJECT = 200
MAX_ADDRESS = 254  # RFC 5321's limit on a forward path
MAX_MESSAGE_ID = 255
_MSG_ID = re.compile(r"<[^<>\s]+>")
_BREAKS = ("Cc", "Zl", "Zp")  # control characters (CR, LF, NUL, NEL, ...) and line separators
_INVISIBLE = "Cf"  # format characters: bidi overrides and isolates (U+202E, ...), zero-width ones


def text_for(thread: Thread, event: Event) -> str | None:
    """The update a requester gets by email for `event`; None: nothing to say."""
    match event:
        case HumanResponse(approve=True) if event.approval_id and (request := thread.approval(event.approval_id)):
            return _approved(thread, request, event)
        case HumanResponse(approve=True):
            return f"Approved by {one_line(decider(event), 200)}."
        case HumanResponse(approve=False) if event.approval_id:
            feedback = f":\n\n{quoted(event.text)}" if event.text else "."
            return f"Rejected by {one_line(decider(event), 200)}{feedback}"
        case ApprovalRequested():
            return (
                f"Deploying {event.service} {event.tag} to {event.environment} needs approval; "
                f"I have asked the approvers. The request expires {wording.utc(event.expires_at)}."
            )
    n = notice(thread, event)
    if n is None:
        return None
    head = n.render()
    if isinstance(event, (Cancelled, LockTaken)):  # a person's reason inside our sentence: one line
        head = one_line(head, MAX_FIELD)
    return "\n\n".join(part for part in (head, n.url, n.detail) if part)


def _approved(thread: Thread, request: ApprovalRequested, event: HumanResponse) -> str:
    """An approval: with several needed, how far the request got (a progress line)."""
    found = standing.of(thread, request)
    required = found.required  # under the rules in force, if they changed
    if required <= 1:
        return f"Approved by {decider(event)}."
    given = [decider(a) for a in found.given]
    if found.decision is None:
        return wording.approved_by_so_far(decider(event), given, required)
    return wording.approved_by_all(decider(event), given, required)


def progress_text(found: standing.Standing) -> str:
    """The progress line an approver gets in their approval email thread."""
    return wording.approval_still_open([decider(a) for a in found.given], found.required)


def decider(decision: HumanResponse) -> str:
    """Who decided, as an email names them: their person (whichever channel they decided
    by), else the Slack id or address they came with."""
    return decision.person or decision.user


def _named(principal: str) -> str:
    """A person's name as it is; someone deploybot.toml does not name (`email:<address>`,
    `slack:<id>`) by the address or id they came with."""
    via, _, raw = principal.partition(":")
    return raw if raw and via in ("email", "slack") else principal


def _change(request: ApprovalRequested) -> list[str]:
    if request.change is None:
        return []
    head, *rest = wording.change_lines(request.change)
    return ["", f"  Changes:     {one_line(head, MAX_FIELD)}", *(f"    {one_line(line, MAX_FIELD)}" for line in rest)]


def console_link(public_url: str | None, thread_id: str) -> str:
    """The thread's page in the console, where PUBLIC_URL says the bot is reached; "" without
    one (a link to 127.0.0.1 helps nobody reading mail elsewhere). No user or password of the
    URL goes into a mail."""
    if not public_url:
        return ""
    return f"{without_userinfo(public_url.rstrip('/'))}/console/threads/{quote(thread_id)}"


def approval_text(request: ApprovalRequested, token: str, intro: str = "", link: str = "") -> str:
    """`intro`: a paragraph on top (why someone it was escalated to is asked); `link`: the
    thread's page in the console. Every field the model or a person chose is on its own one
    line: none can add a line of ours."""
    return "\n".join([
        *([intro, ""] if intro else []),
        f"{one_line(_named(request.asker), 200) or 'Someone'} asked to deploy:",
        "",
        f"  Service:     {one_line(request.service, 200)}",
        f"  Tag:         {one_line(request.tag, 200)}",
        f"  Commit:      {one_line(request.commit, 200)}",
        f"  Environment: {one_line(request.environment, 200)}",
        *([f"  Why:         {one_line(request.reason, MAX_FIELD)}"] if request.reason else []),
        f"  Valid until: {wording.utc(request.expires_at)}",
        *_change(request),
        *(["", f"In the console: {link}"] if link else []),
        "",
        "Reply APPROVE to deploy, or reply with what should change.",
        "",
        f"approval code: {token}",
    ])


def confirmation_text(asked: SenderConfirmationRequested, token: str, minutes: int) -> str:
    """"Did you send this?", the request quoted (every line "> "), and the code; `minutes`:
    how long other unproven requests in the same name are ignored in any case."""
    return "\n".join([
        wording.confirm_sender_question(asked.expires_at, minutes),
        "",
        quoted(asked.text),
        "",
        f"confirmation code: {token}",
    ])


def follow_up_text(text: str, token: str) -> str:
    """A mail in an approver's approval email thread (a reminder, progress) that still lets
    them decide by replying."""
    return "\n".join([text, "", wording.reply_to_decide(), "", f"approval code: {token}"])


def approval_message_id(approval_id: str, to: str, sender: str) -> str:
    """The Message-ID of the approval email to `to`: derived, so its follow-ups (reminders,
    progress, expiry) thread under it without storing it. Unique as the approval id is; the
    address is hashed, so the header does not repeat it."""
    digest = hashlib.sha256(f"{approval_id}|{address(to).lower()}".encode()).hexdigest()[:12]
    domain = re.sub(r"[^A-Za-z0-9.-]", "", address(sender).rpartition("@")[2]) or "deploybot"
    return f"<approval.{re.sub(r'[^A-Za-z0-9_-]', '', approval_id)[:64]}.{digest}@{domain}>"


def message(
    sender: str,
    to: str,
    subject: str,
    text: str,
    *,
    reply_to: str | None = None,
    in_reply_to: str | None = None,
    own_id: str | None = None,
) -> EmailMessage:
    """One mail. Headers are sanitized here, whatever the caller passes; an In-Reply-To that
    is no single well-formed Message-ID after that is left out (the mail is still sent), and
    so is an `own_id` (its Message-ID) that is not one (a new one is made)."""
    sender, to = address(sender), address(to)
    msg = EmailMessage()
    msg["From"] = sender
    msg["To"] = to
    msg["Subject"] = header(subject, MAX_SUBJECT)
    given = message_id(own_id) if own_id else None
    msg["Message-ID"] = given or make_msgid(domain=sender.rpartition("@")[2] or None)
    msg["Auto-Submitted"] = "auto-replied"  # RFC 3834: out-of-office replies and the like stay quiet
    if reply_to:
        msg["Reply-To"] = address(reply_to)
    if in_reply_to and (ref := message_id(in_reply_to)):
        # Gmail, Outlook and Apple Mail thread on these two headers (and the subject).
        msg["In-Reply-To"] = ref
        msg["References"] = ref
    text = cut(text, MAX_BODY)
    msg.set_content(text)
    msg.add_alternative(
        "<html><body><pre style=\"font-family: sans-serif; white-space: pre-wrap\">"
        f"{html.escape(text)}</pre></body></html>",
        subtype="html",
    )
    return msg


def reply_subject(subject: str) -> str:
    subject = header(subject, MAX_SUBJECT - 4)
    return subject if subject.lower().startswith("re:") else f"Re: {subject or 'deploybot'}"


def header(value: str, limit: int) -> str:
    """`value` fit for one header line: control characters (CR and LF among them) and line
    separators become spaces, format characters (bidi overrides, zero-width ones) are left
    out, whitespace runs collapse, and it is cut to `limit` characters."""
    cleaned = "".join(_clean(c, " ") for c in value)
    return " ".join(cleaned.split())[:limit].strip()


def address(value: str) -> str:
    """An address for From/To/Reply-To: one line, bounded."""
    return header(value, MAX_ADDRESS)


def message_id(value: str) -> str | None:
    """`value` as one Message-ID (`<left@right>`) with nothing that could break a header,
    or None when it is not one or is too long."""
    cleaned = "".join(_clean(c, "") for c in value).strip()
    if len(cleaned) > MAX_MESSAGE_ID or not _MSG_ID.fullmatch(cleaned):
        return None
    return cleaned


def _clean(c: str, space: str) -> str:
    """One character of a header: a control character or line separator -> `space`, a
    format character -> nothing."""
    category = unicodedata.category(c)
    return space if category in _BREAKS else "" if category == _INVISIBLE else c


def one_line(text: str, limit: int) -> str:
    """Text a person or the model wrote, as one line of a body: control characters and line
    breaks of every kind become spaces, format characters go, and it is cut with a marker."""
    cleaned = " ".join("".join(_clean(c, " ") for c in text).split())
    return cleaned if len(cleaned) <= limit else f"{cleaned[:limit].rstrip()} [... cut: the full text is in the thread]"


def quoted(text: str, limit: int = MAX_FIELD) -> str:
    """Text a person or the model wrote, as a block every line of which starts with "> ":
    line breaks of every kind split lines, other control and format characters go."""
    text = cut(text, limit)
    lines = "".join("\n" if c in "\r\n\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029" else _clean(c, " ") for c in text)
    return "\n".join(f"> {line}".rstrip() for line in lines.replace("\r\n", "\n").split("\n"))


def cut(text: str, limit: int) -> str:
    """`text`, or its first `limit` characters and a marker saying the rest is in the thread."""
    if len(text) <= limit:
        return text
    return (
        f"{text[:limit].rstrip()}\n\n[... cut: {len(text) - limit:,} more characters. "
        "The full text is in the deploybot thread.]"
    )


def short(text: str, limit: int = 120) -> str:
    """For log lines and answers: an input that may be huge, cut."""
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} characters)"
