"""Inbound mail -> what deploybot needs of it; approval reply tokens. Pure (no I/O).

Only the new text of a reply counts. It is read line by line, the way every mail client lays
a reply out (see `new_text`): `>` quote blocks are skipped and the text after them is new
again (bottom posting, inline answers); an attribution ("On <date>, <who> wrote:" in the
languages below, wrapped over up to three lines or sharing its line with the reply) ends the
new text before it; a header block (From/Sent/To/Subject in those languages, as Outlook writes
it in plain text or as its HTML reads once converted) or an "Original Message" separator ends
the new text for good; a signature ("-- ", "Sent from my iPhone", ...) is left out. These
are the fallback: the channel reads a reply again against the mail the bot sent
(`email_reply`, which finds the bot's own copy and the block above it in any language) and
uses these rules only for what is left, or when that mail is no longer kept.

The first line of the new text decides an approval, and only an unambiguous approval word
approves (`bot.core.commands.is_approval`), with no question anywhere under it: anything else is
feedback. An approval is never taken
from an HTML-only email (`Inbound.refusal`): HTML can hide text (display:none, zero size, the
background's colour) that a mail client does not show, and only plain text reads the same to
the bot and to the person who wrote it.

The MIME parse is bounded: at most MAX_PARTS parts; every header is cut before the stdlib
parses it, or read raw (see `_BoundedPolicy`); References and the Message-ID are capped, with
the reason in `Inbound.cut`. The new text is read from the first MAX_READ characters of the
body only (a reply's new text is at the top; the code is searched for in all of it), with
HTML read by a tokenizer of our own that never looks at a character twice (the stdlib's
HTMLParser rescans to the end of the input for every unclosed tag: minutes for 100 KB). A
hostile message of a megabyte costs well under a second.

Automatic mail (out-of-office replies, bounces, list mail: `Inbound.automatic`) is flagged,
so the channel can leave it be: it is no feedback, and answering it could loop.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import unicodedata
from dataclasses import dataclass, field
from datetime import UTC, datetime
from email import policy as email_policy
from email.message import EmailMessage
from email.parser import BytesParser
from email.utils import getaddresses, parseaddr
from html import unescape
from typing import Any

import authres

from bot.adapters.channels.email_render import MAX_MESSAGE_ID
from bot.core.commands import is_approval

REJECT_WORDS = {"no", "reject", "rejected", "stop"}
TOKEN = r"[0-9a-f]{16}\.\d{10}\.[0-9a-f]{16}"

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


class TokenError(ValueError):
    pass


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


def _automatic(msg: EmailMessage) -> str | None:
    """What marks `msg` as automatic mail, or None: `Auto-Submitted` other than "no" (RFC
    3834), `Precedence: bulk|junk|list|auto_reply`, `X-Autoreply` or `X-Autorespond`, an
    empty `Return-Path: <>` (a bounce) or a delivery report (multipart/report)."""
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
    plain = msg.get_body(preferencelist=("plain",))
    html = msg.get_body(preferencelist=("html",))
    if isinstance(plain, EmailMessage) and ((content := _content(plain)).strip() or html is None):
        return plain, content, False
    if isinstance(html, EmailMessage):
        return html, _content(html), True
    raise MalformedEmail("the email has no text or HTML body")


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


# --- the new text of a reply --------------------------------------------------------------

# "On <date>, <who> wrote:" ends with one of these verbs and a colon (a name may come between:
# German, Dutch and Swedish clients write "... schrieb/schreef/skrev <who>:").
_WROTE = (
    r"wrote|writes|schrieb|a\s+écrit|escribió|escreveu|ha\s+scritto|schreef|skrev"
    r"|написал\(?а?\)?|написала|пишет|napisał\(?a?\)?|napisała|pisze"
)
# ... wrote: / a écrit : / schrieb Bob <bob@x>:
_ATTRIBUTION = re.compile(rf".*\b(?:{_WROTE})(?:\s(?:[^:]|\d:\d){{0,200}})?\s?:", re.I)
_TIME = re.compile(r"\d{1,2}:\d{2}")
_ATTRIBUTION_HINT = re.compile(rf"{_WROTE}|@", re.I)  # what every attribution has: a quick first test
# How an attribution starts: a word ("On <date>", "Am <date>", ...), a weekday or a date.
# One that shares its line with the reply ("approve On Wed, ... wrote:") is found by these.
_OPENER_WORDS = r"On|Am|Le|El|Em|Il|Op|Den|På|W\s+dniu|Dnia"
_OPENER = re.compile(
    rf"(?<=\s)(?:{_OPENER_WORDS}"
    r"|(?:пн|вт|ср|чт|пт|сб|вс)\.?,|(?:pon|wt|śr|czw|pt|sob|niedz)\.,"
    r"|\d{1,2}[./]\d{1,2}[./]\d{2,4}|\d{4}-\d{2}-\d{2})\s"
)
_OPENER_WORD = re.compile(_OPENER_WORDS)
_MAX_ATTRIBUTION = 400  # characters; a longer line is no attribution
_SEPARATOR = re.compile(
    r"-{2,}\s*(?:original message|forwarded message|reply message|ursprüngliche nachricht"
    r"|original-nachricht|weitergeleitete nachricht|message d'origine|message transféré"
    r"|mensaje original|mensaje reenviado|mensagem original|исходное сообщение"
    r"|пересылаемое сообщение|oryginalna wiadomość|wiadomość oryginalna|przekazana wiadomość"
    r"|ursprungligt meddelande|vidarebefordrat meddelande|oorspronkelijk bericht"
    r"|doorgestuurd bericht|messaggio originale|oprindelig meddelelse|opprinnelig melding)\s*-{2,}",
    re.I,
)
_RULE = re.compile(r"_{10,}|-{10,}")  # Outlook's line above its header block
# The header block of a quoted message, as Outlook and most webmails write it.
_FROM_KEYS = r"from|von|de|от|od|från|van|da|fra"
_DATE_KEYS = (
    r"sent|date|gesendet|datum|envoyé|envoyé le|enviado|enviado el|enviada em|fecha|data|отправлено|дата"
    r"|wysłano|wysłane|skickat|verzonden|inviato|sendt|dato"
)
_SUBJECT_KEYS = r"subject|betreff|objet|asunto|assunto|тема|temat|ämne|onderwerp|oggetto|emne"
_TO_KEYS = r"to|cc|bcc|reply-to|an|à|a|para|кому|копия|do|dw|till|kopia|aan|til"
_HEADER_LINE = re.compile(
    rf"[*\s]*(?:(?P<from>{_FROM_KEYS})|(?P<date>{_DATE_KEYS})|(?P<subject>{_SUBJECT_KEYS})|{_TO_KEYS})"
    r"[*\s]*:\**(?:\s|$)",
    re.I,
)
_SIGNATURE = re.compile(
    r"--|—|__"
    r"|(?:sent from my|sent from (?:yahoo|mail|mailbox|outlook|samsung|proton|typeapp)|sent with|get outlook for"
    r"|download outlook for|télécharger outlook pour"  # Outlook's mobile apps (crisp-oss fixtures)
    r"|gesendet von|von meinem|envoyé de mon|envoyé depuis|enviado desde mi|enviado do meu"
    r"|отправлено с|wysłane z|wysłano z|skickat från|verzonden (?:vanaf|met)|verstuurd vanaf"
    r"|inviato da|sendt fra"
    # the same in more languages, as EdgeTier/email-reply-parser's fixtures have them
    r"|envoyé à partir de mon|enviado do iphone|verzonden vanuit|trimis de pe|lähetetty iphonesta"
    r"|az iphone-omról küldve|أُرسلت من)\b.{0,60}",
    re.I,
)

_LINK = re.compile(r"<https?://[^\s>]*>")  # "Sent from Mail<https://go.microsoft.com/...> for Windows 10"


def new_text(text: str) -> str:
    """The new text of a reply: what its author wrote, without the quoted history.

    Line by line: a `>` quote block is skipped, and text after it is new again (a bottom-posted
    or inline reply); an attribution line ends the text before it and, when no `>` quote
    follows it (Yahoo, Outlook), everything after it is history; a header block or an
    "Original Message" separator starts the history; a signature is left out up to the next
    quote block. Pieces of new text around quote blocks are joined by a blank line."""
    text = "".join(c for c in text if unicodedata.category(c) != "Cf")  # Zimbra's zero-width characters
    lines = [line.rstrip() for line in text.replace("\r\n", "\n").replace("\r", "\n").split("\n")]
    pieces: list[list[str]] = [[]]
    signature = False
    i = 0
    while i < len(lines):
        line = lines[i]
        if _quoted(line):
            while i < len(lines) and (_quoted(lines[i]) or not lines[i].strip()):
                i += 1
            pieces.append([])
            signature = False
            continue
        if not line.strip():
            pieces[-1].append("")
            i += 1
            continue
        if _history_starts(lines, i):
            break
        if found := _attribution(lines, i):
            lead, last = found
            if lead and not signature:
                pieces[-1].append(lead)
            following = _next_text(lines, last + 1)
            if following < len(lines) and _quoted(lines[following]):
                i = following
                continue
            break  # the original follows unquoted: all of it is history
        if _SIGNATURE.fullmatch(_LINK.sub("", line.strip())) or _list_footer(lines, i):
            signature = True
        elif not signature:
            pieces[-1].append(line)
        i += 1
    texts = ["\n".join(piece).strip("\n") for piece in pieces]
    return re.sub(r"\n{3,}", "\n\n", "\n\n".join(t for t in texts if t.strip())).strip()


def _quoted(line: str) -> bool:
    return line.lstrip().startswith(">")


def _list_footer(lines: list[str], i: int) -> bool:
    """Line i starts the footer a mailing list adds (Mailman's rule, then "<list> mailing
    list"): it is no more the person's text than a signature is."""
    return (
        bool(re.fullmatch(r"_{10,}", lines[i].strip()))
        and i + 1 < len(lines) and lines[i + 1].strip().lower().endswith("mailing list")
    )


def _next_text(lines: list[str], i: int) -> int:
    while i < len(lines) and not lines[i].strip():
        i += 1
    return i


def _attribution(lines: list[str], i: int) -> tuple[str, int] | None:
    """(the reply text before it on its line, its last line) when an attribution starts on
    line i: one to three unquoted lines (Gmail wraps a long one) ending in a colon, with a
    date in it or a `>` quote after it. One that shares its line with the reply starts at an
    opener ("On", "Am", "Le", a date, ...): those are tried first, so the reply is kept (an
    opener word alone before a date, as in "On 11/23/26, ...", is part of the attribution)."""
    first = lines[i].strip()
    for last in range(i, min(i + 3, len(lines))):
        if last > i and (not lines[last].strip() or _quoted(lines[last])):
            return None
        if last > i and _OPENER.match(f" {lines[last].strip()}", 1):
            return None  # the attribution starts on a later line: line i is the reply ("Approved")
        if not lines[last].endswith(":"):
            continue
        joined = " ".join(line.strip() for line in lines[i:last + 1])
        if not _ATTRIBUTION_HINT.search(joined, max(0, len(joined) - _MAX_ATTRIBUTION)):
            continue
        after = _next_text(lines, last + 1)
        quote_follows = after < len(lines) and _quoted(lines[after])
        openers = _OPENER.finditer(first, max(0, len(joined) - _MAX_ATTRIBUTION))
        for start in [*(m.start() for m, _ in zip(openers, range(5), strict=False)), 0]:
            candidate = joined[start:]
            if len(candidate) <= _MAX_ATTRIBUTION and (quote_follows or re.search(r"\d", candidate)) and (
                _ATTRIBUTION.fullmatch(candidate) or _dated_address(candidate)
            ):
                # Yahoo's "--- On ..., bob wrote:" and Zimbra's "- Le ..., bob a écrit :" start with
                # dashes: they are the attribution's, not the reply's.
                lead = re.sub(r"-+$", "", joined[:start].strip()).strip()
                return ("" if _OPENER_WORD.fullmatch(lead) else lead), last
    return None


def lead_of_attribution(lines: list[str], i: int) -> str:
    """The reply text before an attribution that starts on line i and shares its line
    ("approve On Wed, ... wrote:"), or ""."""
    found = _attribution(lines, i)
    return found[0] if found else ""


def _dated_address(line: str) -> bool:
    """`line` has a time and ends in the address after it and a colon: "<date> 10:00,
    Bob <bob@x>:" (Gmail in Russian, Mail.ru). What `.*\\d{1,2}:\\d{2}.*@[^\\s<>()]+>?\\)?\\s?:`
    would fullmatch, read from the end in linear time (that regex took minutes a megabyte)."""
    if not line.endswith(":"):
        return False
    end = len(line) - 1  # the address ends before an optional ">", ")" and one space
    for optional in (str.isspace, ")".__eq__, ">".__eq__):
        if end and optional(line[end - 1]):
            end -= 1
    start = end
    while start and not (line[start - 1].isspace() or line[start - 1] in "<>()"):
        start -= 1
    at = line.rfind("@", start, end - 1)  # "@" and at least one character of the address after it
    return at >= 0 and _TIME.search(line, 0, at) is not None


def _history_starts(lines: list[str], i: int) -> bool:
    """Line i starts quoted history that is not marked with `>`: an "Original Message"
    separator, or a header block (Outlook's rule line above it included)."""
    line = lines[i].strip()
    if _SEPARATOR.fullmatch(line):
        return True
    if _RULE.fullmatch(line):
        following = _next_text(lines, i + 1)
        return following < len(lines) and _header_block(lines, following)
    # A block is found from its first line: one inside a run of header lines was looked at.
    before = lines[max(0, i - 2):i]
    previous = before[-1] if before and before[-1].strip() else before[0] if len(before) == 2 else ""
    return not _HEADER_LINE.match(previous) and _header_block(lines, i)


def _header_block(lines: list[str], i: int) -> bool:
    """Header lines from line i on (a blank line may come between, as Outlook's HTML reads
    once converted) naming a sender (From:, Von:, От:, ...) and a date or a subject, within
    the first dozen lines (a block has From, Sent, To, Cc, Subject and a few more)."""
    seen: set[str] = set()
    blank = 0
    for line in lines[i:i + 12]:
        if not line.strip():
            blank += 1
            if blank > 1:
                break
        elif m := _HEADER_LINE.match(line):
            seen |= {key for key, value in m.groupdict().items() if value}
            if "from" in seen and seen & {"date", "subject"}:
                return True
            blank = 0
        else:
            break
    return False


def decision(text: str) -> tuple[bool, str]:
    """(approve, feedback). The first line approves only if it is just an approval word and
    no line asks a question (`is_approval`); "no", "reject" or "stop" first is a rejection
    with the rest as feedback; anything else is feedback as it is."""
    first, _, rest = text.strip().partition("\n")
    words = re.sub(r"[^\w\s]", " ", first).lower().split()
    if is_approval(text):
        return True, ""
    if words and words[0] in REJECT_WORDS:
        feedback = (" ".join(first.split()[1:]).lstrip(" ,.:;-") + "\n" + rest).strip()
        return False, feedback
    return False, text.strip()


# --- HTML as a mail client shows it -------------------------------------------------------

_VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "param", "source", "track", "wbr"}
_BLOCK = {
    "address", "article", "aside", "blockquote", "center", "dd", "div", "dl", "dt", "figure", "footer",
    "form", "h1", "h2", "h3", "h4", "h5", "h6", "header", "hr", "li", "main", "nav", "ol", "p", "pre",
    "section", "table", "tr", "ul",
}
_NOT_SHOWN = {"head", "style", "script", "template", "title"}
# Quote blocks and signatures: skipped, and text after them is new again (Thunderbird's
# bottom posting puts the reply after the quote).
_QUOTE_MARKERS = (
    "gmail_quote", "moz-cite-prefix", "yahoo_quoted", "protonmail_quote", "gmail_signature", "moz-signature",
)
# Outlook's markers: everything from them on is the quoted message.
_HISTORY_MARKERS = ("divrplyfwdmsg", "appendonsend", "outlookmessageheader", "mail-editor-reference-message")
_ZERO = re.compile(r"[0.]+(?:px|pt|em|rem|%)?")


def _hides(style: str) -> bool:
    """Whether an inline style hides its element: display:none, visibility:hidden, Outlook's
    mso-hide, a zero font size or opacity, or a zero height or width with overflow hidden."""
    decls = {}
    for declaration in style.lower().split(";"):
        name, _, value = declaration.partition(":")
        decls[name.strip()] = value.replace("!important", "").strip()

    def zero(*names: str) -> bool:
        return any(_ZERO.fullmatch(decls.get(name, "")) for name in names)

    return (
        decls.get("display") == "none" or decls.get("visibility") in ("hidden", "collapse")
        or decls.get("mso-hide") == "all" or zero("font-size", "opacity")
        or (decls.get("overflow") == "hidden" and zero("height", "max-height", "width", "max-width"))
    )


# The tokenizer (HTML5's rules, simplified). Every pattern is possessive, and whatever it
# searches for is searched for once: a tag, comment or declaration that the end of the input
# cuts off ends the reading (HTML5 drops it too), so no character is looked at twice.
_START_TAG = re.compile(r"<([a-zA-Z][^\s/>]*+)((?:[^>=]++|=\s*+(?:\"[^\"]*+\"|'[^']*+')|=)*+)>")
_END_TAG = re.compile(r"</([a-zA-Z][^\s/>]*+)[^>]*+>")
_ATTRIBUTE = re.compile(r"([^\s/>=]++)(?:\s*+=\s*+(\"[^\"]*+\"|'[^']*+'|[^\s>]*+))?")
_RAW_TEXT = {  # their content is text up to their end tag, never markup
    name: re.compile(rf"</{name}(?=[\s/>])", re.I) for name in ("script", "style")
}


def _attributes(text: str) -> list[tuple[str, str | None]]:
    found: list[tuple[str, str | None]] = []
    for m in _ATTRIBUTE.finditer(text):
        value = m[2]
        if value is not None and len(value) > 1 and value[0] in "\"'" and value[-1] == value[0]:
            value = value[1:-1]
        found.append((m[1].lower(), None if value is None else unescape(value)))
    return found


class _Text:
    """HTML mail -> the text a mail client shows, without quote blocks.

    Left out: what a client never shows (head, style, script), elements hidden by their own
    attributes (`hidden`, or a style `_hides`), quote blocks and signatures, and everything
    from an Outlook reply header on. Text hidden by other means (the
    background's colour, CSS classes) is not detected: HTML-only mail never approves."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.skip_tag: str | None = None
        self.skip_depth = 0
        self.pre = 0
        self.done = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if self.done:
            return
        if self.skip_tag is not None:
            if tag == self.skip_tag and tag not in _VOID:
                self.skip_depth += 1
            return
        values = dict(attrs)
        marker = " ".join(v for k, v in attrs if k in ("class", "id") and v).lower()
        if any(m in marker for m in _HISTORY_MARKERS):
            self.done = True
            return
        hidden = "hidden" in values or _hides(values.get("style") or "")
        if tag in _NOT_SHOWN or tag == "blockquote" or hidden or any(m in marker for m in _QUOTE_MARKERS):
            if tag not in _VOID:
                self.skip_tag, self.skip_depth = tag, 1
            if tag in _BLOCK:
                self._newline()
            return
        if tag == "br":
            self.parts.append("\n")
        elif tag in _BLOCK:
            self._newline()
        if tag == "pre":
            self.pre += 1

    def handle_endtag(self, tag: str) -> None:
        if self.done:
            return
        if self.skip_tag is not None:
            if tag == self.skip_tag:
                self.skip_depth -= 1
                if not self.skip_depth:
                    self.skip_tag = None
            return
        if tag in _BLOCK:
            self._newline()
        if tag == "pre" and self.pre:
            self.pre -= 1

    def handle_data(self, data: str) -> None:
        if self.done or self.skip_tag is not None:
            return
        if not self.pre:
            data = re.sub(r"[ \t\r\n\f\xa0]+", " ", data)  # HTML collapses white space
            if not self.parts or self.parts[-1].endswith("\n"):
                data = data.lstrip(" ")  # and drops it at the start of a line
        if data:
            self.parts.append(data)

    def _newline(self) -> None:
        if self.parts and not self.parts[-1].endswith("\n"):
            self.parts.append("\n")

    def read(self, doc: str) -> None:
        """Tokenize `doc` and hand its tags and text to the methods above, in one pass."""
        i, n = 0, len(doc)
        while i < n and not self.done:
            j = doc.find("<", i)
            j = n if j < 0 else j
            if i < j:
                self.handle_data(unescape(doc[i:j]))
            i = self._markup(doc, j) if j < n else n

    def _markup(self, doc: str, i: int) -> int:
        """Read the markup at doc[i] ("<"); where the text after it starts."""
        n = len(doc)
        after = doc[i + 1:i + 2]
        if after.isascii() and after.isalpha():
            if not (tag := _START_TAG.match(doc, i)):
                return n  # cut off by the end of the input: nothing more is shown
            name = tag[1].lower()
            self.handle_starttag(name, _attributes(tag[2]))
            if name not in _RAW_TEXT:
                return tag.end()
            closing = _RAW_TEXT[name].search(doc, tag.end())
            stop = closing.start() if closing else n
            self.handle_data(doc[tag.end():stop])
            return stop
        if doc.startswith("</", i):
            if (tag := _END_TAG.match(doc, i)) is not None:
                self.handle_endtag(tag[1].lower())
                return tag.end()
            if doc[i + 2:i + 3].isascii() and doc[i + 2:i + 3].isalpha():
                return n  # cut off by the end of the input
        elif doc.startswith("<!--", i):
            for empty in ("<!-->", "<!--->"):
                if doc.startswith(empty, i):
                    return i + len(empty)
            end = doc.find("-->", i + 4)
            return n if end < 0 else end + 3
        elif not doc.startswith(("<!", "<?"), i):
            self.handle_data("<")  # "a < b": text
            return i + 1
        # "</>", "</ ...>", "<!DOCTYPE ...>", "<?xml ...>": a declaration or a bogus comment
        end = doc.find(">", i + 2)
        return n if end < 0 else end + 1


def html_to_text(html: str) -> str:
    parser = _Text()
    parser.read(html)
    lines = [line.strip(" \t") for line in "".join(parser.parts).split("\n")]
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()


# --- reply tokens: bound to one approval, one approver address and an expiry ---------------
#
# The same machinery signs the code of a sender confirmation ("Did you send this?"): its kind
# is signed in, so an approval code never confirms a sender and a confirmation code never
# decides an approval. An approval's blob is as it always was (codes already mailed stay good).

APPROVAL = "approval"
CONFIRMATION = "confirmation"


def make_token(secret: str, approval_id: str, address: str, expires_at: datetime, kind: str = APPROVAL) -> str:
    expires = int(expires_at.timestamp())
    return f"{approval_id}.{expires}.{_sign(secret, approval_id, address, expires, kind)}"


def check_token(secret: str, token: str, address: str, now: datetime, kind: str = APPROVAL) -> str:
    """The approval (or confirmation) id the token is for; raises TokenError saying why it is
    not accepted."""
    approval_id, _, rest = token.partition(".")
    expires_text, _, signature = rest.partition(".")
    what = f"the {kind} code"
    if not (approval_id and expires_text.isdigit() and signature):
        raise TokenError(f"{what} is malformed")
    if not hmac.compare_digest(signature, _sign(secret, approval_id, address.lower(), int(expires_text), kind)):
        raise TokenError(f"{what} is not valid for this sender (forged, altered, or sent from another address)")
    if now > datetime.fromtimestamp(int(expires_text), UTC):
        raise TokenError(f"{what} has expired")
    return approval_id


def _sign(secret: str, approval_id: str, address: str, expires: int, kind: str = APPROVAL) -> str:
    blob = f"{approval_id}|{address.lower()}|{expires}"
    if kind != APPROVAL:
        blob = f"{kind}|{blob}"
    return hmac.new(secret.encode(), blob.encode(), hashlib.sha256).hexdigest()[:16]


# --- Authentication-Results (RFC 8601): what the receiving mail server proved -------------

MAX_AUTH_RESULTS = 5  # Authentication-Results headers read: the topmost, where the receiving server adds its own
# Characters of one Authentication-Results header; a longer one proves nothing. A receiving
# server's own is well under it, and the authres parser is superlinear (10,000 characters of
# "x=y;" took a second, 2,000 a tenth of one).
MAX_AUTH_RESULT = 1_000


def proven_by(headers: tuple[str, ...], sender: str, trusted: frozenset[str]) -> str | None:
    """The authserv-id whose verdict proves `sender`'s domain sent the mail, else None: an
    Authentication-Results header of a trusted server (the MTA or inbound route in front of the
    bot, which removes forged ones) saying `dmarc=pass`, or `dkim=pass` signed by the From
    domain or a parent of it. Any other server's header was written by whoever sent the mail,
    and proves nothing (RFC 8601 section 5); so does a header that does not parse."""
    domain = sender.rpartition("@")[2].lower()
    if not domain or not trusted:
        return None
    for value in headers:
        # Only a trusted server's header is parsed at all, and only one of a sane length.
        named = value.partition(";")[0].split()[:1]  # the authserv-id (a version may follow)
        if len(value) > MAX_AUTH_RESULT or not named or named[0].lower() not in trusted:
            continue
        try:
            parsed = authres.AuthenticationResultsHeader.parse(f"Authentication-Results: {value}")
        except Exception:  # authres raises its own kinds, and others on hostile input
            continue
        server = str(parsed.authserv_id or "").lower()
        if server in trusted and any(_passes(result, domain) for result in parsed.results):
            return server
    return None


def _passes(result: Any, domain: str) -> bool:
    method, verdict = str(getattr(result, "method", "")).lower(), str(getattr(result, "result", "")).lower()
    if verdict != "pass":
        return False
    if method == "dmarc":
        # DMARC passes for the header.from domain it checked: it must be the From's.
        checked = _property(result, "header", "from")
        return checked in ("", domain)
    if method == "dkim":
        signer = _property(result, "header", "d").rstrip(".")
        return bool(signer) and (domain == signer or domain.endswith(f".{signer}"))
    return False


def _property(result: Any, kind: str, name: str) -> str:
    """A result's `kind.name` property (`header.d`), lower-cased; "" when it has none."""
    for prop in getattr(result, "properties", None) or ():
        if str(getattr(prop, "type", "")).lower() == kind and str(getattr(prop, "name", "")).lower() == name:
            return str(getattr(prop, "value", "") or "").lower()
    return ""
