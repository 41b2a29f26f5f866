"""bot/ read and parsed once a test session, for every test that reads the code itself (the
layers, the sizes, the names, the notes): parsing the tree is most of what those tests cost."""

from __future__ import annotations

import ast
import functools
from pathlib import Path

from tests import ROOT

BOT = ROOT / "bot"


@functools.cache
def parsed(root: Path = BOT) -> dict[str, tuple[Path, str, ast.Module]]:
    """Every module under `root`: its root-relative dotted name (a package as `name.__init__`)
    -> its path, its source and its tree."""
    found = {}
    for path in sorted(root.rglob("*.py")):
        source = path.read_text()
        found[".".join(path.relative_to(root).with_suffix("").parts)] = (path, source, ast.parse(source, str(path)))
    return found


def written() -> list[tuple[Path, str, ast.Module]]:
    """bot/'s modules but the generated client, in path order."""
    return [entry for entry in parsed().values() if "baml_client" not in entry[0].parts]


def docstrings(tree: ast.AST) -> set[int]:
    """The ids of the docstring nodes of a module, its classes and its functions."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.add(id(first.value))
    return found
