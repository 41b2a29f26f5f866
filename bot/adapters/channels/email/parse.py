"""Inbound mail -> what deploybot needs of it (`Inbound`): the bounded MIME parse. Pure (no I/O).

The MIME parse is bounded: at most MAX_PARTS parts; every header is cut before the stdlib
parses it, or read raw (see `_BoundedPolicy`); References and the Message-ID are capped, with
the reason in `Inbound.cut`. The new text is read from the first MAX_READ characters of the
body only (a reply's new text is at the top; the code is searched for in all of it), by the
rules of reply_rules, with HTML read as text by html. A hostile message of a
megabyte costs well under a second.

An approval is never taken from an HTML-only email (`Inbound.refusal`): HTML can hide text
(display:none, zero size, the background's colour) that a mail client does not show, and only
plain text reads the same to the bot and to the person who wrote it.

Automatic mail (out-of-office replies, bounces, list mail: `Inbound.automatic`) is flagged,
so the channel can leave it be: it is no feedback, and answering it could loop.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field
from email import policy as email_policy
from email.message import EmailMessage
from email.parser import BytesParser
from email.utils import getaddresses, parseaddr
from typing import Any

from bot.adapters.channels.email.auth import MAX_AUTH_RESULT, MAX_AUTH_RESULTS
from bot.adapters.channels.email.html import html_to_text
from bot.adapters.channels.email.render import MAX_MESSAGE_ID
from bot.adapters.channels.email.reply_rules import new_text
from bot.adapters.channels.email.tokens import TOKEN
from bot.core.commands import is_approval

MAX_PARTS = 100  # MIME parts (nested ones included); a message with more is refused
MAX_REFERENCES = 20  # the newest References kept (In-Reply-To first): the lookups the channel makes
MAX_REFERENCE = MAX_MESSAGE_ID  # characters of one reference; a longer one is dropped
MAX_HEADER = 10_000  # characters of one address or subject header read; the rest is not parsed
MAX_PARSED_HEADER = 256  # characters of any other header the stdlib parses (Content-Type, ...)
MAX_HEADERS_READ = 10  # occurrences of one recipient header read (To, Cc, Delivered-To, ...)
MAX_READ = 64 * 1024  # characters of the body (plain text or HTML) the new text is read from

HTML_ONLY_APPROVAL = (
    "an approval is only taken from an email with a plain-text part, and yours is HTML only "
    "(HTML can hide text that your mail client does not show): reply again in plain text "
    "(in Gmail: More options > Plain text mode; in Outlook: Format Text > Plain Text)"
)


class MalformedEmail(ValueError):
    pass


class RefusedEmail(MalformedEmail):
    """A readable email the bot must not act on (`parse` raises it; `read` returns the same
    message with `refusal` set). `mail` is what was read, for the caller's sender checks."""

    def __init__(self, mail: Inbound) -> None:
        super().__init__(mail.refusal)
        self.mail = mail


@dataclass(frozen=True)
class Inbound:
    sender: str  # lower-cased address
    message_id: str  # one longer than MAX_MESSAGE_ID is cut to MAX_MESSAGE_ID + 1 characters
    subject: str
    text: str  # the new text only
    references: tuple[str, ...]  # In-Reply-To first, then References, newest first
    token: str | None
    html_only: bool = False  # the text was read from HTML: the email has no plain-text part
    refusal: str | None = None  # why the bot must not act on it, in words for the sender
    cut: tuple[str, ...] = field(default=())  # what was cut from oversize headers, for the log
    automatic: str | None = None  # what marks it as automatic mail (an out-of-office reply, a bounce)
    body: str = ""  # the top of the body as text (HTML converted), to read the new text from again
    auth_results: tuple[str, ...] = ()  # its Authentication-Results headers, raw (see `proven_by`)


def parse(raw: bytes) -> Inbound:
    """`read`, raising RefusedEmail (a MalformedEmail) for a message the bot must not act on:
    a caller that does not know `Inbound.refusal` refuses it anyway."""
    mail = read(raw)
    if mail.refusal:
        raise RefusedEmail(mail)
    return mail


def read(raw: bytes) -> Inbound:
    """What deploybot needs of a raw message. Raises MalformedEmail for one it cannot read
    (or one with more than MAX_PARTS MIME parts); a message it must not act on comes back
    with `refusal` saying why. Synchronous and pure: callers run it off their event loop."""
    try:
        msg = _parse_bytes(raw)
        sender = parseaddr(_header(msg, "From"))[1].strip().lower()
        message_id, cut = _message_id(msg)
        if "@" not in sender or not message_id:
            raise MalformedEmail("an email needs a From address and a Message-ID")
        whole, content, html_only = _body(msg)
        head = _head(content, html_only)  # the new text is at the top; the code may be anywhere
        body = html_to_text(head) if html_only else head
        text = new_text(body)
        subject = " ".join(_header(msg, "Subject", decoded=True).split())  # no folded or encoded newlines
        recipients = " ".join(a for _, a in getaddresses(
            [v for h in ("To", "Cc", "Delivered-To", "X-Original-To") for v in _headers(msg, h)]
        ))
        references, refs_cut = _references(msg)
        token = re.search(rf"\+({TOKEN})@", recipients) or _token_in_body(msg, whole, content)
        automatic = _automatic(msg)
        auth_results = tuple(
            " ".join(v[:MAX_AUTH_RESULT + 1].split()) for v in _raw_headers(msg, "Authentication-Results")
            [:MAX_AUTH_RESULTS]
        )
    except MalformedEmail:
        raise
    except Exception as e:  # the stdlib parser raises many kinds on broken input
        raise MalformedEmail(f"unreadable message: {type(e).__name__}: {e}") from e
    # The body copy of the code is usually in the quoted approval email, so all of the body is
    # searched (quote and HTML quote blocks included): a code only works from the address it
    # was issued to, wherever it is found. The decision and feedback come from `text` only.
    refusal = HTML_ONLY_APPROVAL if html_only and token and is_approval(text) else None
    return Inbound(
        sender, message_id, subject, text, references, token[1] if token else None,
        html_only=html_only, refusal=refusal, cut=cut + refs_cut, automatic=automatic, body=body,
        auth_results=auth_results,
    )


# --- the MIME parse, bounded -------------------------------------------------------------


class _TooManyParts(Exception):
    pass


class _BoundedPolicy(email_policy.EmailPolicy):
    """The default policy, but a header the stdlib parses is cut to MAX_PARSED_HEADER
    characters first and parsed once per message: the stdlib parses a header on every access
    (its parser reads each part's Content-Type several times, and so do `get_body` and
    `walk`), and its header parser is superlinear: one Content-Type of a megabyte took
    minutes. The headers the bot needs whole are read raw (`_raw_headers`)."""

    parsed: dict[tuple[str, str], Any]

    def __init__(self, **kw: Any) -> None:
        super().__init__(**kw)
        object.__setattr__(self, "parsed", {})  # a policy is immutable, but this is a cache

    def header_fetch_parse(self, name: str, value: Any) -> Any:
        if not isinstance(value, str) or hasattr(value, "name"):
            return super().header_fetch_parse(name, value)
        key = (name, value[:MAX_PARSED_HEADER])
        if key not in self.parsed:
            self.parsed[key] = super().header_fetch_parse(*key)
        return self.parsed[key]


def _parse_bytes(raw: bytes) -> EmailMessage:
    """The message tree, refused past MAX_PARTS parts: the stdlib builds (and parses the
    Content-Type of) every part, so a count checked afterwards would come too late."""
    made = 0

    def factory(policy: email_policy.Policy) -> EmailMessage:
        nonlocal made
        made += 1
        if made > MAX_PARTS:
            raise _TooManyParts
        return EmailMessage(policy=policy)

    try:
        msg = BytesParser(policy=_BoundedPolicy(message_factory=factory)).parsebytes(raw)
    except _TooManyParts:
        raise MalformedEmail(f"the email has more than {MAX_PARTS} MIME parts") from None
    assert isinstance(msg, EmailMessage)
    return msg


def _raw_headers(msg: EmailMessage, name: str) -> list[str]:
    """The unparsed values of header `name`, at most MAX_HEADERS_READ of them: the stdlib
    parses a header on every access, so an oversize one is cut before that."""
    name = name.lower()
    return [v for k, v in msg.raw_items() if k.lower() == name][:MAX_HEADERS_READ]


def _headers(msg: EmailMessage, name: str) -> list[str]:
    return [v[:MAX_HEADER] for v in _raw_headers(msg, name)]


def _header(msg: EmailMessage, name: str, decoded: bool = False) -> str:
    """The first header `name`, cut to MAX_HEADER characters; `decoded`: with RFC 2047
    encoded words decoded (the cut happens first, so an oversize one costs nothing)."""
    values = _raw_headers(msg, name)
    if not values:
        return ""
    value = values[0][:MAX_HEADER]
    return _decoded(name, value) if decoded else value


def _decoded(name: str, value: str) -> str:
    """A raw header value as the stdlib reads it (unfolded, encoded words decoded)."""
    return str(email_policy.default.header_factory(name, re.sub(r"[\r\n]", "", value)))


def _message_id(msg: EmailMessage) -> tuple[str, tuple[str, ...]]:
    values = _raw_headers(msg, "Message-ID")
    if not values:
        return "", ()
    value = values[0].strip()
    if len(value) > MAX_MESSAGE_ID:
        # Cut to one character over the limit: still too long for the caller (which refuses
        # it, and can say so), but no huge string travels further.
        return value[:MAX_MESSAGE_ID + 1], (f"its Message-ID is longer than {MAX_MESSAGE_ID} characters",)
    return _decoded("Message-ID", value).strip(), ()


def _references(msg: EmailMessage) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """In-Reply-To, then References newest first: at most MAX_REFERENCES, each at most
    MAX_REFERENCE characters (a longer one cannot be a Message-ID the bot knows) and
    `clean_id`: the channel looks each one up as it is."""
    def ids(name: str) -> list[str]:
        return re.findall(r"<[^<>\s]+>", (_raw_headers(msg, name) or [""])[0])

    found = list(dict.fromkeys([*ids("In-Reply-To"), *reversed(ids("References"))]))
    kept = [r for r in found if len(r) <= MAX_REFERENCE]
    cut = [f"references longer than {MAX_REFERENCE} characters were dropped"] if len(kept) < len(found) else []
    if len(kept) > MAX_REFERENCES:
        cut.append(f"{len(kept)} references were cut to the newest {MAX_REFERENCES}")
    return tuple(dict.fromkeys(clean_id(r) for r in kept[:MAX_REFERENCES])), tuple(cut)


def clean_id(value: str) -> str:
    """A Message-ID as a key: without whitespace, control characters or line separators."""
    return "".join(c for c in value if not c.isspace() and unicodedata.category(c) not in ("Cc", "Zl", "Zp"))


# The subject prefixes of the common providers' out-of-office replies ("Automatic reply: ...",
# behind any "Re:", "AW:"): a person approving writes none of them first.
AUTO_REPLY_SUBJECT = re.compile(
    r"^(?:(?:re|aw|sv|vs|antw|ref|rif|tr|wg|fw|fwd)\s*:\s*)*"
    r"(?:auto(?:matic)?[ -]?reply|auto[ -]?response|autoreply|out of (?:the )?office|abwesenheitsnotiz"
    r"|automatische antwort|r[ée]ponse automatique|respuesta autom[áa]tica|risposta automatica"
    r"|automatisch antwoord|automatiskt svar)\s*:",
    re.IGNORECASE,
)


def _automatic(msg: EmailMessage) -> str | None:
    """What marks `msg` as automatic mail, or None: `Auto-Submitted` other than "no" (RFC
    3834), `Precedence: bulk|junk|list|auto_reply`, `X-Autoreply` or `X-Autorespond`, an
    empty `Return-Path: <>` (a bounce), a delivery report (multipart/report), iCloud's
    `X-Apple-Action: VACATION`, an out-of-office subject, or a mail from MAILER-DAEMON or
    postmaster."""
    submitted = re.split(r"[\s;(]", _header(msg, "Auto-Submitted").strip(), maxsplit=1)[0].lower()
    if submitted and submitted != "no":
        return f"Auto-Submitted: {submitted[:40]}"
    precedence = re.split(r"[\s;(]", _header(msg, "Precedence").strip(), maxsplit=1)[0].lower()
    if precedence in ("bulk", "junk", "list", "auto_reply"):
        return f"Precedence: {precedence}"
    for name in ("X-Autoreply", "X-Autorespond"):
        if _raw_headers(msg, name):
            return name
    if any("".join(v[:MAX_PARSED_HEADER].split()) == "<>" for v in _raw_headers(msg, "Return-Path")):
        return "Return-Path: <>"
    if msg.get_content_type() == "multipart/report":
        return "a delivery report"
    apple = _header(msg, "X-Apple-Action").strip().lower()
    if apple == "vacation":  # iCloud's out-of-office reply, which sets none of the above
        return "X-Apple-Action: vacation"
    if AUTO_REPLY_SUBJECT.match(" ".join(_header(msg, "Subject", decoded=True).split())):
        return "an automatic reply's subject"
    sender = parseaddr(_header(msg, "From"))[1].strip().lower().partition("@")[0]
    if sender in ("mailer-daemon", "postmaster"):  # a bounce sent without an empty Return-Path
        return f"a mail from {'MAILER-DAEMON' if sender == 'mailer-daemon' else sender}"
    return None


def _head(content: str, html: bool) -> str:
    """The first MAX_READ characters of a body, up to its last line end (plain text) or the
    end of its last tag (HTML) where there is one: no line or tag is read cut in half."""
    if len(content) <= MAX_READ:
        return content
    head = content[:MAX_READ]
    end = head.rfind(">") + 1 if html else head.rfind("\n")
    return head[:end] if end > 0 else head


def _body(msg: EmailMessage) -> tuple[EmailMessage, str, bool]:
    """(the body's part, its text, whether it is HTML). The plain-text part when there is one
    with any text: what the sender's client wrote for readers without HTML, with nothing
    hidden in it."""
    plain = msg.get_body(preferencelist=("plain",)) or _first_inline(msg, "text/plain")
    html = msg.get_body(preferencelist=("html",)) or _first_inline(msg, "text/html")
    if isinstance(plain, EmailMessage) and ((content := _content(plain)).strip() or html is None):
        return plain, content, False
    if isinstance(html, EmailMessage):
        return html, _content(html), True
    raise MalformedEmail("the email has no text or HTML body")


def _first_inline(msg: EmailMessage, kind: str) -> EmailMessage | None:
    """The first part of type `kind` that is no attachment: where `get_body` finds none (a
    multipart/related whose first part, its start, is an inline image and its HTML after it)."""
    for part in msg.walk():
        if (part.get_content_type() == kind and part.get_content_disposition() != "attachment"
                and isinstance(part, EmailMessage)):
            return part
    return None


def _content(part: EmailMessage) -> str:
    """A text part decoded (quoted-printable, base64, the declared charset; format=flowed
    lines joined again)."""
    try:
        content = part.get_content()
    except LookupError:  # an unknown charset: read what can be read
        payload = part.get_payload(decode=True)
        content = payload.decode("utf-8", "replace") if isinstance(payload, bytes) else ""
    content = str(content).replace("\r\n", "\n").replace("\r", "\n")
    if part.get_content_subtype() == "plain" and str(part.get_param("format", "")).lower() == "flowed":
        content = unflow(content, delsp=str(part.get_param("delsp", "")).lower() == "yes")
    return content


def _token_in_body(msg: EmailMessage, body: EmailMessage, content: str) -> re.Match[str] | None:
    """The code in the body read (`content`, the text of part `body`), or else in any other
    text part (an HTML alternative)."""
    if found := re.search(rf"\b({TOKEN})\b", content):
        return found
    for part in msg.walk():
        if (part is not body and part.get_content_type() in ("text/plain", "text/html")
                and part.get_content_disposition() != "attachment" and isinstance(part, EmailMessage)):
            if found := re.search(rf"\b({TOKEN})\b", _content(part)):
                return found
    return None


def unflow(text: str, delsp: bool = False) -> str:
    """RFC 3676 format=flowed text with its soft line breaks joined again (Thunderbird and
    Apple Mail send it): a line ending in a space continues on the next one of the same
    quote depth. Quoted lines keep a `>` prefix per level."""
    out: list[str] = []
    pending: list[str] = []  # the pieces of a flowed line so far, joined once it ends
    pending_depth = 0
    for line in text.split("\n"):
        body = line.lstrip(">")
        depth = len(line) - len(body)
        if body.startswith(" "):
            body = body[1:]  # space-stuffing
        flowed = body.endswith(" ") and body.rstrip() != "--"
        if flowed and delsp:
            body = body[:-1]
        if pending and depth != pending_depth:  # a flowed line ends where the quote depth changes
            out.append(_quote(pending_depth, "".join(pending)))
            pending = []
        if flowed:
            pending.append(body)
            pending_depth = depth
        elif pending:
            pending.append(body)
            out.append(_quote(depth, "".join(pending)))
            pending = []
        else:
            out.append(_quote(depth, body))
    if pending:
        out.append(_quote(pending_depth, "".join(pending)))
    return "\n".join(out)


def _quote(depth: int, line: str) -> str:
    return f"{'>' * depth} {line}" if depth else line


