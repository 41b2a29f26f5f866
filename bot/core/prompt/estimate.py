"""About how many tokens a model's tokenizer makes of a text, without its vocabulary
(docs/context.md has the figures)."""

from __future__ import annotations

import re

# Pieces a BPE tokenizer (cl100k/o200k-like) mostly keeps whole or splits predictably.
_PIECES = re.compile(
    r"(?P<letters>[A-Z]+(?![a-z])|[A-Z]?[a-z]+)|(?P<digits>[0-9]+)|(?P<blank>[ \t]+)|(?P<newline>\n+)"
    r"|(?P<punct>[!-/:-@\[-`{-~]+)|(?P<wide>[\U00010000-\U0010ffff])|(?P<other>.)",
    re.S,
)


def estimate_tokens(text: str) -> int:
    """About how many tokens a model's tokenizer makes of `text`, without its vocabulary:
    a run of letters costs one per 4 letters (a new capital starts a run), digits one per
    3, punctuation one per 2, a single space none (it joins the next word), more blanks
    or a run of line breaks one, a character outside the basic plane (emoji) 3, any other
    character 1. Against cl100k it errs high on prose, renderings, logs and code (up to
    1.4x) and low on random strings (0.8x on base64, 0.56x on made-up words): docs/context.md."""
    n = 0
    for m in _PIECES.finditer(text):
        kind, size = m.lastgroup, m.end() - m.start()
        if kind == "letters":
            n += (size + 3) // 4
        elif kind == "digits":
            n += (size + 2) // 3
        elif kind == "blank":
            n += size > 1
        elif kind == "punct":
            n += (size + 1) // 2
        elif kind == "wide":
            n += 3
        else:  # newline, other
            n += 1
    return n
