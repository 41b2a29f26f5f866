"""What the new text of a reply decides. Pure (no I/O).

The first line of the new text decides an approval, and only an unambiguous approval word
approves (`bot.core.commands.is_approval`), with no question anywhere under it: anything else
is feedback. (An approval is never taken from an HTML-only email: parse.read.)
"""

from __future__ import annotations

import re

from bot.core.commands import is_approval

REJECT_WORDS = {"no", "reject", "rejected", "stop"}


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
