"""bot/core/characters.py: what a person, an agent or git wrote loses its format characters
(Unicode category Cf: bidi controls, zero-width ones, BOMs) before anyone is shown it, and
nothing else."""

from __future__ import annotations

import sys
import unicodedata

from bot.core.characters import visible


def test_every_format_character_is_dropped():
    every = "".join(chr(c) for c in range(sys.maxunicode + 1) if unicodedata.category(chr(c)) == "Cf")
    assert {"\u202e", "\u2066", "\u2069", "\u200b", "\u200d", "\u2060", "\ufeff", "\u00ad"} <= set(every)
    assert visible(f"a{every}b") == "ab"


def test_other_text_is_kept_as_it_was():
    kept = "plain ASCII *bold* <!channel>\tü ñ 日本語 عربي e\u0301 🚀 🇫🇷 1\ufe0f\u20e3 line\nnext"
    assert visible(kept) == kept


def test_an_emoji_sequence_loses_its_joiner_and_stays_readable():
    # U+200D joins 👩 and 💻 into one glyph; without it both show, side by side.
    assert visible("👩\u200d💻 deploys") == "👩💻 deploys"
