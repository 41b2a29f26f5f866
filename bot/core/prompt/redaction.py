"""Anything that looks like a secret, redacted (`redact`), and a text cut in the middle to fit a
number of tokens, its head and its tail kept and redacted whole (`fit`): what the transcript
and the console redact with too."""

from __future__ import annotations

import re
from collections.abc import Iterable

from bot.core.prompt.estimate import estimate_tokens

REDACTED = "[redacted]"


# Text around a cut that is redacted with the part that is kept, so that a secret across
# the cut is recognised whole (a PEM private key is at most a few KB).
CUT_MARGIN = 8_192

_PEM = r"-----BEGIN [A-Z ]*PRIVATE KEY-----"
_PEM_END = r"-----END [A-Z ]*PRIVATE KEY-----"
# Each pattern with the words it cannot match without (looked for in the folded text when
# the pattern ignores case): most texts have none of them, and a `sub` over a long text costs
# far more than looking for a word (rendering a long thread redacts every part of it).
_SECRET_PATTERNS = [
    (re.compile(r"(?i)\b(authorization\s*[:=]\s*)(?:\w+\s+)?\S+"), r"\1" + REDACTED, ("authorization",)),
    (re.compile(r"(?i)\b(bearer|basic)\s+[A-Za-z0-9._~+/=-]{12,}"), r"\1 " + REDACTED, ("bearer", "basic")),
    (
        re.compile(
            # A prefix is allowed: AWS_SECRET_ACCESS_KEY=, DB_PASSWORD=, GITHUB_TOKEN=.
            # (Bounded pieces: an unbounded [\w-]* on both sides is quadratic on "a-a-a-...".)
            r"(?i)\b((?:[a-z0-9]{1,40}[_-]){0,4}(?:api[_-]?key|access[_-]?key|secret|token|passw(?:or)?d|pwd)"
            r"[a-z0-9]{0,40}(?:[_-][a-z0-9]{1,40}){0,4}"
            r"[\"']?\s*[:=]\s*[\"']?)[^\s\"',;]+"
        ),
        r"\1" + REDACTED,
        ("key", "secret", "token", "passw", "pwd"),
    ),
    (re.compile(r"\b(xox[abposr]|xapp)-[A-Za-z0-9-]{8,}"), REDACTED, ("xox", "xapp")),
    (re.compile(r"\b(gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})"), REDACTED, ("gh",)),
    (re.compile(r"\bsk-(?:ant-)?[A-Za-z0-9_-]{16,}"), REDACTED, ("sk-",)),
    (re.compile(r"\bAKIA[0-9A-Z]{16}\b"), REDACTED, ("AKIA",)),
    # scheme://user:password@host and scheme://:password@host (Redis has no user name)
    (re.compile(r"(://[^/\s:@]*:)[^/\s@]+@"), r"\1" + REDACTED + "@", ("://",)),
    # A private key, also one whose end (or beginning) is missing: pasted in part, or cut.
    # One alternation, so a text of many headers without an end is still read once.
    (re.compile(_PEM + "(?:.*?" + _PEM_END + "|.*)", re.S), REDACTED, ("PRIVATE KEY-----",)),
    (re.compile(r"\A.*" + _PEM_END, re.S), REDACTED, ("PRIVATE KEY-----",)),
]


def redact(text: str, secrets: Iterable[str] = ()) -> str:
    for secret in secrets:
        if secret and len(secret) >= 6:
            text = text.replace(secret, REDACTED)
    folded = _fold(text)
    for pattern, replacement, words in _SECRET_PATTERNS:
        within = folded if pattern.flags & re.IGNORECASE else text
        if any(word in within for word in words):
            text = pattern.sub(replacement, text)
            folded = _fold(text)
    return text


def _fold(text: str) -> str:
    """`text` lowered so that every letter `re.IGNORECASE` takes for an ASCII one is that
    letter: İ and ı for i, ſ for s (the Kelvin sign lowers to k). A word found here that the
    pattern then does not match costs a `sub`; a word missed would leave a secret."""
    return text.lower().replace("\u0307", "").replace("ı", "i").replace("ſ", "s")


def fit(text: str, tokens: int, secrets: Iterable[str] = ()) -> str:
    """`text` redacted, and cut in the middle if it is over `tokens` estimated tokens: its
    head and its tail are kept, with a marker saying how much was cut."""
    secrets = tuple(secrets)
    limit = 4 * tokens  # characters: about 4 a token
    if len(text) <= limit:
        text = redact(text, secrets)
        if estimate_tokens(text) <= tokens:
            return text
        limit = len(text) - 1
    while True:
        cut = _cut(text, limit, secrets)
        estimate = estimate_tokens(cut)
        if estimate <= tokens or limit == 0:
            return cut
        limit = min(limit - 1, limit * tokens // estimate)


def _cut(text: str, limit: int, secrets: tuple[str, ...]) -> str:
    head, tail = limit * 2 // 3, limit - limit * 2 // 3
    marker = f"[... {len(text) - head - tail:,} characters cut ...]"
    return "\n".join(part for part in (_head(text, head, secrets), marker, _tail(text, tail, secrets)) if part)


def _head(text: str, size: int, secrets: tuple[str, ...]) -> str:
    """The first `size` characters of `text` redacted: the text after them is redacted with
    them, so a secret across the cut is not left in part."""
    margin = CUT_MARGIN
    while True:
        window = text[: size + margin]
        clean = redact(window, secrets)
        if len(window) == len(text) or len(clean) >= size + margin // 2 or clean.endswith(REDACTED):
            return clean[:size]
        margin *= 2


def _tail(text: str, size: int, secrets: tuple[str, ...]) -> str:
    if size == 0:
        return ""
    margin = CUT_MARGIN
    while True:
        window = text[-(size + margin) :]
        clean = redact(window, secrets)
        if len(window) == len(text) or len(clean) >= size + margin // 2 or clean.startswith(REDACTED):
            return clean[-size:]
        margin *= 2
