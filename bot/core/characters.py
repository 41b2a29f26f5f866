"""Characters nobody should be shown: Unicode's format characters (category Cf). Pure.

They draw nothing, yet change what a reader sees: U+202E reverses the text after it ("fixes
nigol" shows as "login sexif"), isolates (U+2066-2069) and marks reorder it, zero-width
spaces and joiners (U+200B-200D, U+2060) and the BOM (U+FEFF) hide a word's true spelling.
Whatever a person, an agent, the model or git wrote is passed through `visible` wherever it
goes out to people (Slack, the web console, outgoing webhooks, the markdown transcript);
what is stored stays as it came. An emoji sequence joined by U+200D (👩‍💻) shows as its parts
side by side (👩💻): readable, and the price of dropping every joiner.
"""

from __future__ import annotations

import unicodedata

FORMAT = "Cf"


def visible(text: str) -> str:
    """`text` without its format characters."""
    if text.isascii():  # the usual case, and ASCII has none
        return text
    return "".join(c for c in text if unicodedata.category(c) != FORMAT)
