"""A reply's new text, found by what the bot sent. Pure (no I/O).

Every mail client quotes the same thing in its own way: a copy of the bot's own message
(prefixed with `>` or `|`, re-wrapped, converted from HTML, or not marked at all) under an
attribution or header block that names the bot's address or display name, the subject it
sent, or a date, in the client's language. Phrase lists per language cannot keep up with the
clients; the bot knows exactly what it sent (`Sent`), so:

1. Invisible characters (Unicode category Cf: zero-width spaces and joiners, BOMs, bidi
   marks) are dropped first: Zimbra puts them around typed text.
2. The copy: runs of lines whose words, with quote prefixes, case, white space and line breaks
   set aside, are a run of the sent text's words (`_copies`). It ends the new text above it;
   text after a quoted copy is new again (bottom posting, inline answers), after an unquoted
   one (Outlook, Yahoo) all is history.
3. The block just above a copy goes with it (`_block_start`): lines that name the bot's
   address or display name, the sent subject, a date or time, or are a separator line, in any
   language, with the lines between such lines and the short "wrote:" tail. A line without
   any of those (what the person typed) is kept, even directly above the attribution.
4. What is left is read by the language-independent rules of `reply_rules.new_text` (quote
   prefixes, signatures, "Sent from my ..."): a signature between the new text and the
   attribution is never new text, and mail that quotes nothing of the bot's is read by them
   alone.

`reading` says which of these found the new text (`RULES`): docs/email-replies.md gives the
share of the corpus each one handles.
"""

from __future__ import annotations

import dataclasses
import json
import re
import unicodedata
from dataclasses import dataclass
from email.message import EmailMessage
from email.utils import parseaddr

from bot.adapters.channels.email import parse as email_parse
from bot.adapters.channels.email import reply_rules as email_reply_rules
from bot.core.commands import is_approval

MIN_COPY = 6  # words: a shorter run of the bot's words ("approve") may be the person's own
MAX_CANDIDATES = 16  # places in the sent text one line is tried at (a hostile text repeats words)
MAX_STEPS = 200_000  # line comparisons per reply; past them no further copy is looked for
MAX_GAP = 2  # lines a copy may skip that do not match (a mangled link, a client's own line)
MAX_BLOCK = 16  # lines above a copy looked at for its attribution or header block
MAX_SENT_TEXT = 20_000  # characters of a sent mail remembered (render.MAX_BODY)

RULES = {
    "copy+block": "the bot's copy, and the attribution or header block above it",
    "copy": "the bot's copy, with nothing above it to remove",
    "block": "no copy (an HTML quote left out), but the attribution or header block above it",
    "fallback": "no copy of the bot's: quote prefixes, signatures, attribution and header phrases",
    "as-is": "nothing quoted, nothing cut: the whole text",
}


@dataclass(frozen=True)
class Sent:
    """What the bot sent in one mail that can be replied to: its text, subject and sender."""

    text: str
    subject: str
    address: str
    name: str = ""

    def dumps(self) -> str:
        return json.dumps({
            "text": self.text[:MAX_SENT_TEXT], "subject": self.subject, "address": self.address, "name": self.name,
        })

    @classmethod
    def of(cls, msg: EmailMessage) -> Sent:
        """What the bot says in `msg` (one render.message built): its plain text, its
        subject, and its sender's address and display name (if it has one)."""
        name, address = parseaddr(str(msg["From"] or ""))
        body = msg.get_body(("plain",))
        text = body.get_content() if isinstance(body, EmailMessage) else ""
        return cls(text, str(msg["Subject"] or ""), address.lower(), name)

    @classmethod
    def loads(cls, raw: str | None) -> Sent | None:
        """The stored form back; None for nothing or anything unreadable (a reply is then
        read by the fallback rules, never refused for it)."""
        if not raw:
            return None
        try:
            data = json.loads(raw)
            return cls(str(data["text"]), str(data["subject"]), str(data["address"]), str(data.get("name") or ""))
        except (ValueError, KeyError, TypeError):
            return None


@dataclass(frozen=True)
class Reading:
    text: str  # the new text
    rule: str  # which of RULES found it


def visible(text: str) -> str:
    """`text` without invisible characters (Unicode Cf: zero-width ones, BOMs, bidi marks)."""
    return "".join(c for c in text if unicodedata.category(c) != "Cf")


def new_text(text: str, sent: Sent | None) -> str:
    return reading(text, sent).text


def reading(text: str, sent: Sent | None) -> Reading:
    lines = visible(text).replace("\r\n", "\n").replace("\r", "\n").split("\n")
    markers = _Markers.of(sent) if sent else None
    copies = _copies(lines, _words(visible(sent.text))) if sent else []
    if markers and copies:
        return _around_copies(lines, copies, markers)
    if markers and (top := _trailing_block(lines, markers)) is not None:
        # A client that sent HTML only: its quote was left out with the HTML, its attribution
        # or header block was not.
        return Reading(email_reply_rules.new_text("\n".join(lines[:top])), "block")
    whole = "\n".join(lines)
    kept = email_reply_rules.new_text(whole)
    return Reading(kept, "as-is" if kept == whole.strip() else "fallback")


def _around_copies(lines: list[str], copies: list[tuple[int, int, bool]], markers: _Markers) -> Reading:
    """The text around the copies, less the block above each: after a quoted copy the text is
    new again (bottom posting, inline answers); after an unquoted one it is all history."""
    pieces: list[str] = []
    at, block = 0, False
    for start, end, quoted in copies:
        top = _block_start(lines, start, at, markers)
        block = block or top < start
        # A reply on the attribution's own line ("approve On Wed, ... wrote:") is kept.
        lead = email_reply_rules.lead_of_attribution(lines, top) if top < start else ""
        pieces.append("\n".join([*lines[at:top], lead]))
        at = end + 1 if quoted else len(lines)
        if not quoted:
            break
    pieces.append("\n".join(lines[at:]))
    kept = "\n\n".join(email_reply_rules.new_text(piece) for piece in pieces)
    return Reading(re.sub(r"\n{3,}", "\n\n", kept).strip(), "copy+block" if block else "copy")


def _trailing_block(lines: list[str], markers: _Markers) -> int | None:
    """The first line of a block at the end of the text that names the bot's address or the
    sent subject (what a typed reply does not), or None."""
    top = _block_start(lines, len(lines), 0, markers)
    if any(markers.names_bot(_PREFIX.sub("", line)) for line in lines[top:]):
        return top
    return None


def reread(mail: email_parse.Inbound, sent: Sent | None) -> email_parse.Inbound:
    """`mail` with its new text read against `sent` (and its refusal decided again on it: an
    approval from HTML-only mail is refused, see email_parse.read). Without `sent` it was read
    by the same rules already."""
    if sent is None or not mail.body:
        return mail
    text = new_text(mail.body, sent)
    refusal = email_parse.HTML_ONLY_APPROVAL if mail.html_only and mail.token and is_approval(text) else None
    return dataclasses.replace(mail, text=text, refusal=refusal)


# --- the copy of the bot's message --------------------------------------------------------

_PREFIX = re.compile(r"^[\s>|]*")


def _words(text: str) -> list[str]:
    return re.findall(r"\w+", unicodedata.normalize("NFKC", text).casefold())


def _quoted(line: str) -> bool:
    return line.lstrip().startswith((">", "|"))


def _copies(lines: list[str], sent: list[str]) -> list[tuple[int, int, bool]]:
    """(first line, last line, quoted) of each run of lines that copies the sent text: its
    words, line breaks aside, are a run of at least MIN_COPY of the sent text's words (all of
    them when it has fewer), in order; up to MAX_GAP lines that do not match may come between."""
    where: dict[str, list[int]] = {}
    for p, word in enumerate(sent):
        where.setdefault(word, []).append(p)
    words = [_words(line) for line in lines]
    marks = [_quoted(line) for line in lines]
    need = min(MIN_COPY, len(sent))
    found: list[tuple[int, int, bool]] = []
    budget = [MAX_STEPS]
    i = 0
    while i < len(lines) and budget[0] > 0:
        best: tuple[int, int] | None = None  # (words matched, last line)
        for p in where.get(words[i][0], [])[:MAX_CANDIDATES] if words[i] else []:
            run = _extend(words, marks, i, p, sent, where, budget)
            if run and (best is None or run[0] > best[0]):
                best = run
        if best is not None and best[0] >= need:
            found.append((i, best[1], marks[i]))
            i = best[1] + 1
        else:
            i += 1
    return found


def _extend(
    words: list[list[str]], marks: list[bool], i: int, p: int, sent: list[str], where: dict[str, list[int]],
    budget: list[int],
) -> tuple[int, int] | None:
    """(words matched, last line) of the copy that starts with line i at sent word p. In a
    quoted copy, a line that does not match ends it unless it is quoted too: an unquoted one
    there is the person's (an inline answer)."""
    if sent[p:p + len(words[i])] != words[i]:
        return None
    matched, q, last, gap = len(words[i]), p + len(words[i]), i, 0
    # A short first line ("Yes" to a mail that says "Reply YES") starts a copy only when the
    # next line goes straight on with the sent text: else it is the person's, and the copy
    # starts further down.
    anchored = len(words[i]) >= MIN_COPY
    j = i + 1
    while j < len(words) and gap <= MAX_GAP and budget[0] > 0:
        budget[0] -= 1
        line = words[j]
        if not line:
            j += 1
            continue
        if sent[q:q + len(line)] == line:
            if not anchored and gap:
                return None
            matched, q, last, gap, anchored = matched + len(line), q + len(line), j, 0, True
        elif (ahead := _ahead(line, q, sent, where)) is not None:
            if not anchored:
                return None
            # A line of the sent text left out or mangled (a link a client rewrote): the copy goes on.
            matched, q, last, gap = matched + len(line), ahead + len(line), j, 0
        elif marks[i] and not marks[j]:
            break
        else:
            gap += 1
        j += 1
    return matched, last


def _ahead(line: list[str], q: int, sent: list[str], where: dict[str, list[int]]) -> int | None:
    """Where `line` comes in the sent text a little after word q (a line of it skipped)."""
    for p in where.get(line[0], [])[:MAX_CANDIDATES]:
        if q < p <= q + 30 and sent[p:p + len(line)] == line:
            return p
    return None


# --- the attribution or header block above it ---------------------------------------------

_TIME = re.compile(r"\b\d{1,2}[:.h]\d{2}\b|\b\d{1,2}\s?(?:am|pm)\b", re.I)
_DATE = re.compile(
    r"(?<!\d)(?:19|20)\d{2}(?!\d)|\b\d{1,2}[./-]\d{1,2}[./-]\d{2,4}\b", re.I
)
_KEY = re.compile(r"^[^\s:]{1,20}(?:\s[^\s:]{1,20})?\s?:")  # "From:", "De :", "보낸 사람:"
_SEPARATOR = re.compile(r"\W*[-_=*~]{2,}.*|.*[-_=*~]{2,}\W*")


@dataclass(frozen=True)
class _Markers:
    address: str
    name: str
    local: str  # the address's local part, as words: a client without a display name writes it
    subject: list[str]

    @classmethod
    def of(cls, sent: Sent) -> _Markers:
        subject = _words(re.sub(r"^(?:\s*(?:re|fwd?|aw|sv|vs|rv)\s*:)+", "", sent.subject, flags=re.I))
        name = " ".join(_words(sent.name))
        local = " ".join(_words(sent.address.partition("@")[0]))
        return cls(sent.address.casefold(), name if len(name) >= 3 else "", local, subject if len(subject) >= 2 else [])

    def names_bot(self, line: str) -> bool:
        """Whether `line` has the bot's address or the sent subject in it."""
        if self.address and self.address in line.casefold().replace(" ", ""):
            return True
        return bool(self.subject) and f" {' '.join(self.subject)} " in f" {' '.join(_words(line))} "

    def carried_by(self, line: str) -> bool:
        """Whether `line` (quote prefix gone) names the bot, the sent subject or a date, or
        is a separator line."""
        words = _words(line)
        if not words or _SEPARATOR.fullmatch(line.strip()):
            return True  # no words (Gmail's ">:" on its own line) or a rule
        if self.names_bot(line) or (self.name and f" {self.name} " in f" {' '.join(words)} "):
            return True
        if self.local and self.local in (" ".join(words), " ".join(_words(_KEY.sub("", line)))):
            return True  # the local part alone on a line ("deploybot", Polymail; "From: deploybot"):
            # a common word such as "deploy" is a marker only there, never inside typed text
        # A date or time alone marks a line only as an attribution or header writes it (a
        # person's "not before 14:00" is no attribution): with a key, both, or a closing , or :
        time, date = _TIME.search(line), _DATE.search(line)
        return bool((time or date) and (_headerish(line) or (time and date) or line.endswith((",", ":"))))


def _block_start(lines: list[str], start: int, floor: int, markers: _Markers) -> int:
    """The first line of the attribution or header block right above line `start`, or
    `start` when there is none. A line belongs to it when it carries a marker, when it sits
    between such lines (blank lines aside), or when it is the short tail right above the
    copy ("wrote:", "het volgende geschreven:")."""
    top = start
    between = 0  # lines without a marker since the last one that had one
    tail = True
    i = start - 1
    while i >= floor and start - i <= MAX_BLOCK:
        line = _PREFIX.sub("", lines[i]).strip()
        if not line:
            i -= 1
            continue
        if markers.carried_by(line):
            top, between, tail = i, 0, False
        elif tail and line.endswith(":") and len(_words(line)) <= 4:
            top = i
        else:
            tail = False
            between += 1
            if between > 2 or not _headerish(line):
                break
        i -= 1
    return top


def _headerish(line: str) -> bool:
    """A line a header block or a wrapped attribution has between its marked lines: a
    "Key: value" line (To:, Cc:, any language), an address, or the end of an attribution."""
    return bool(_KEY.match(line)) or "@" in line or line.endswith(":")
