"""The core and the runtime name no channel: a channel's kind, ids, targets and sentences are its
own (its package's `kind` module, and bot/core/wording/ for what people read). Comments and
docstrings may name channels as examples; code may not."""

from __future__ import annotations

import ast

from tests import ROOT
from tests.architecture.tree import docstrings, written

BOT = ROOT / "bot"
CHANNELS = ("slack", "email")  # the chat channels; GitHub, as the gate and the code host, is a concept of the core


def _named(tree: ast.AST) -> list[tuple[int, str]]:
    """Each name and string of the code (not its docstrings), with its line."""
    skip = docstrings(tree)
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip:
            found.append((node.lineno, node.value))
        elif isinstance(node, ast.Name):
            found.append((node.lineno, node.id))
        elif isinstance(node, ast.Attribute):
            found.append((node.lineno, node.attr))
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            found.append((node.lineno, node.name))
        elif isinstance(node, ast.arg):
            found.append((node.lineno, node.arg))
        elif isinstance(node, ast.alias):
            found.append((node.lineno, node.asname or node.name))
    return found


def test_the_core_and_the_runtime_name_no_channel_in_their_code():
    named = []
    for path, _, tree in written():
        if path.relative_to(BOT).parts[0] not in ("core", "runtime"):
            continue
        if "wording" in path.parts:  # sentences people read name channels: that is their job
            continue
        for line, text in _named(tree):
            if any(channel in text.lower() for channel in CHANNELS):
                named.append(f"{path.relative_to(ROOT)}:{line}: {text!r}")
    assert named == []
