"""The language-independent rules a reply's new text is read by. Pure (no I/O).

A reply is read line by line, the way every mail client lays one out (see `new_text`): `>`
quote blocks are skipped and the text after them is new again (bottom posting, inline
answers); an attribution ("On <date>, <who> wrote:" in the languages below, wrapped over up
to three lines or sharing its line with the reply) ends the new text before it; a header
block (From/Sent/To/Subject in those languages, as Outlook writes it in plain text or as its
HTML reads once converted) or an "Original Message" separator ends the new text for good; a
signature ("-- ", "Sent from my iPhone", ...) is left out. These are the fallback: the channel
reads a reply again against the mail the bot sent (`reply`, which finds the bot's own
copy and the block above it in any language) and uses these rules only for what is left, or
when that mail is no longer kept.
"""

from __future__ import annotations

import re
import unicodedata

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
