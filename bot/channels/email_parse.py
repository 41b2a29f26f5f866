"""Inbound mail -> what deploybot needs of it; approval reply tokens. Pure (no I/O).

Only the new text of a reply counts: quoted history (Gmail, Outlook, Apple Mail, `>`),
signatures and HTML quote blocks are removed. The first line of a reply decides an approval,
and only an unambiguous approval word approves: anything else is feedback.
"""

from __future__ import annotations

import hashlib
import hmac
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from email import message_from_bytes, policy
from email.message import EmailMessage
from email.utils import getaddresses, parseaddr
from html.parser import HTMLParser

from mailparser_reply import EmailReplyParser

from bot.commands import is_approval

REJECT_WORDS = {"no", "reject", "rejected", "stop"}
TOKEN = r"[0-9a-f]{16}\.\d{10}\.[0-9a-f]{16}"
_SIGNATURE = re.compile(r"^(--\s*|sent from my \w+.*|get outlook for \w+.*)$", re.I)


class MalformedEmail(ValueError):
    pass


class TokenError(ValueError):
    pass


@dataclass(frozen=True)
class Inbound:
    sender: str  # lower-cased address
    message_id: str
    subject: str
    text: str  # the new text only
    references: tuple[str, ...]  # In-Reply-To first, then References, newest first
    token: str | None


def parse(raw: bytes) -> Inbound:
    try:
        msg = message_from_bytes(raw, policy=policy.default)
        assert isinstance(msg, EmailMessage)
        sender = parseaddr(str(msg.get("From", "")))[1].strip().lower()
        message_id = str(msg.get("Message-ID", "")).strip()
        if "@" not in sender or not message_id:
            raise MalformedEmail("an email needs a From address and a Message-ID")
        body = _body(msg)
        text = new_text(body)
        subject = " ".join(str(msg.get("Subject", "")).split())  # no folded or encoded newlines
        recipients = " ".join(a for _, a in getaddresses(
            [str(v) for h in ("To", "Cc", "Delivered-To", "X-Original-To") for v in msg.get_all(h, [])]
        ))
    except MalformedEmail:
        raise
    except Exception as e:  # the stdlib parser raises many kinds on broken input
        raise MalformedEmail(f"unreadable message: {type(e).__name__}: {e}") from e
    references = " ".join(reversed(str(msg.get("References", "")).split()))
    refs = re.findall(r"<[^<>\s]+>", f"{msg.get('In-Reply-To', '')} {references}")
    # The body fallback is usually in the quoted approval email, so search all of it: a token
    # only works from the address it was issued to, wherever it is found.
    token = re.search(rf"\+({TOKEN})@", recipients) or re.search(rf"\b({TOKEN})\b", body)
    return Inbound(sender, message_id, subject, text, tuple(dict.fromkeys(refs)), token[1] if token else None)


def _body(msg: EmailMessage) -> str:
    part = msg.get_body(preferencelist=("plain", "html"))
    if part is None:
        raise MalformedEmail("the email has no text or HTML body")
    content = part.get_content()  # decodes quoted-printable, base64 and the declared charset
    return html_to_text(content) if part.get_content_type() == "text/html" else content


def new_text(text: str) -> str:
    reply = EmailReplyParser(languages=["en", "de", "fr", "es", "nl"]).parse_reply(text=text) or ""
    lines: list[str] = []
    for line in reply.replace("\r\n", "\n").split("\n"):
        if _SIGNATURE.match(line.strip()):
            break
        if line.startswith(">"):
            continue
        lines.append(line.rstrip())
    return "\n".join(lines).strip()


def decision(text: str) -> tuple[bool, str]:
    """(approve, feedback). The first line approves only if it is just an approval word."""
    first, _, rest = text.strip().partition("\n")
    words = re.sub(r"[^\w\s]", " ", first).lower().split()
    if is_approval(text):
        return True, ""
    if words and words[0] in REJECT_WORDS:
        feedback = (" ".join(first.split()[1:]).lstrip(" ,.:;-") + "\n" + rest).strip()
        return False, feedback
    return False, text.strip()


class _Text(HTMLParser):
    """HTML mail -> text, without the quoted history HTML clients put in blocks."""

    SKIP = {"style", "script", "head", "blockquote"}
    QUOTE_MARKERS = ("gmail_quote", "appendonsend", "divrplyfwdmsg", "moz-cite-prefix", "yahoo_quoted")

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.skipping = 0
        self.done = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        marker = " ".join(f"{v}" for k, v in attrs if k in ("class", "id") and v).lower()
        if any(m in marker for m in self.QUOTE_MARKERS):
            self.done = True  # everything from the quote marker on is history
        if tag in self.SKIP:
            self.skipping += 1
        if tag in ("br", "p", "div", "tr", "li"):
            self.parts.append("\n")

    def handle_endtag(self, tag: str) -> None:
        if tag in self.SKIP and self.skipping:
            self.skipping -= 1
        if tag in ("p", "div"):
            self.parts.append("\n")

    def handle_data(self, data: str) -> None:
        if not self.skipping and not self.done:
            self.parts.append(data)


def html_to_text(html: str) -> str:
    parser = _Text()
    parser.feed(html)
    return re.sub(r"\n{3,}", "\n\n", re.sub(r"[ \t]+", " ", "".join(parser.parts))).strip()


# --- reply tokens: bound to one approval, one approver address and an expiry ---------------


def make_token(secret: str, approval_id: str, address: str, expires_at: datetime) -> str:
    expires = int(expires_at.timestamp())
    return f"{approval_id}.{expires}.{_sign(secret, approval_id, address, expires)}"


def check_token(secret: str, token: str, address: str, now: datetime) -> str:
    """The approval id the token is for; raises TokenError saying why it is not accepted."""
    approval_id, _, rest = token.partition(".")
    expires_text, _, signature = rest.partition(".")
    if not (approval_id and expires_text.isdigit() and signature):
        raise TokenError("the approval code is malformed")
    if not hmac.compare_digest(signature, _sign(secret, approval_id, address.lower(), int(expires_text))):
        raise TokenError(
            "the approval code is not valid for this sender (forged, altered, or sent from another address)"
        )
    if now > datetime.fromtimestamp(int(expires_text), UTC):
        raise TokenError("the approval code has expired")
    return approval_id


def _sign(secret: str, approval_id: str, address: str, expires: int) -> str:
    blob = f"{approval_id}|{address.lower()}|{expires}".encode()
    return hmac.new(secret.encode(), blob, hashlib.sha256).hexdigest()[:16]
