"""A personal token's prefix is written once (bot/core/tokens.py) and read from there by
what makes tokens, what recognises them and what names them to people: changed in one place,
nothing still expects the old one."""

from __future__ import annotations

import ast

from bot.core import tokens, wording
from tests import ROOT
from tests.architecture.tree import docstrings, written

BOT = ROOT / "bot"
HOME = BOT / "core" / "tokens.py"


def literals_naming_the_prefix() -> list[str]:
    """`path:line` of every string in the code (docstrings aside: they describe the format)
    that spells the prefix out instead of reading it."""
    spelled = tokens.PERSONAL_TOKEN_PREFIX.rstrip("_")
    found = []
    for path, _, tree in written():
        if path == HOME:
            continue
        skip = docstrings(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip \
                    and (node.value == spelled or tokens.PERSONAL_TOKEN_PREFIX in node.value):
                found.append(f"{path.relative_to(BOT.parent)}:{node.lineno}")
    return found


def test_the_prefix_is_spelled_out_in_one_place_only():
    assert literals_naming_the_prefix() == []


def test_the_words_that_name_a_token_use_the_prefix():
    assert f"Bearer {tokens.PERSONAL_TOKEN_PREFIX}..." in wording.mcp_needs_agent_token()

