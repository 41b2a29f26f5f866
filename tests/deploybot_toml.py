"""deploybot.toml for tests, built from what a test says about its team instead of the same text
pasted into each file: people with their ids, groups, environments, services and any other
table, written by tomli_w and read back by the real settings wherever a test uses it.

    CONFIG = (Toml().person("alice", slack="UALICE").person("bob", email="bob@example.com")
              .environment("production", protected=True, approvers=["bob"]).unprotected("staging"))
    path = CONFIG.write(tmp_path)
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import tomli_w


class Toml:
    """A deploybot.toml being built; each step returns a new one, so a module's base stays as
    it was for every test that adds to it."""

    def __init__(self, tables: dict[str, Any] | None = None) -> None:
        self.tables: dict[str, Any] = tables or {}

    def _with(self, path: tuple[str, ...], fields: dict[str, Any]) -> Toml:
        tables = copy.deepcopy(self.tables)
        table = tables
        for key in path:
            table = table.setdefault(key, {})
        table.update(fields)
        return Toml(tables)

    def person(self, name: str, **ids: str | list[str]) -> Toml:
        """[people.NAME] with its ids by kind: slack = "U…", email = "…" (or a list)."""
        return self._with(("people", name), ids)

    def group(self, name: str, *members: str) -> Toml:
        return self._with(("groups",), {name: list(members)})

    def environment(self, name: str, **fields: Any) -> Toml:
        """[environments.NAME]: what is left out comes from the variables, as in the file."""
        return self._with(("environments", name), fields)

    def unprotected(self, *names: str) -> Toml:
        built = self
        for name in names:
            built = built._with(("environments", name), {"protected": False})
        return built

    def service(self, name: str, **fields: Any) -> Toml:
        return self._with(("services", name), fields)

    def top(self, **fields: Any) -> Toml:
        """Keys before any table: top(promotion=["staging", "production"])."""
        return self._with((), fields)

    def table(self, *path: str, **fields: Any) -> Toml:
        """Any other table: table("agents", "claude-code", owner="alice")."""
        return self._with(path, fields)

    def entry(self, array: str, **fields: Any) -> Toml:
        """One [[ARRAY]] entry: entry("freezes", environments=["production"], …)."""
        tables = copy.deepcopy(self.tables)
        tables.setdefault(array, []).append(fields)
        return Toml(tables)

    def __str__(self) -> str:
        return tomli_w.dumps(self.tables)

    def write(self, folder: Path, name: str = "deploybot.toml") -> Path:
        path = folder / name
        path.write_text(str(self))
        return path


# The team most tests need: alice asks, bob approves production, anyone approves staging.
ALICE_AND_BOB = (
    Toml().person("alice", email="alice@example.com").person("bob", email="bob@example.com")
    .environment("staging", approvers=["*"]).environment("production", protected=True, approvers=["bob"])
)
