"""Imports flow one way: the core does no I/O, adapters never import each other, and only
settings.py reads the environment. Read from the source with `ast`, so it cannot drift."""

from __future__ import annotations

import ast
from pathlib import Path

BOT = Path(__file__).resolve().parent.parent / "bot"
CORE = {"events", "thread", "prompt", "policy", "commands", "control", "transcript", "views", "notices"}
LOGIC = {"agent", "handler", "loop", "service", "worker", "ports"}
ADAPTERS = {"stores", "deployers", "channels", "llm", "web", "embedded_redis"}
THIRD_PARTY_CORE = {"pydantic"}


def modules() -> dict[str, set[str]]:
    found = {}
    for path in BOT.rglob("*.py"):
        rel = path.relative_to(BOT)
        if rel.parts[0] in ("baml_client", "testing"):
            continue
        imports = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                imports |= {a.name for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module:
                imports.add(node.module)
                if node.module == "bot":
                    imports |= {f"bot.{a.name}" for a in node.names}
        found[".".join(rel.with_suffix("").parts)] = imports
    return found


def ours(imports: set[str]) -> set[str]:
    return {i.split(".")[1] for i in imports if i.startswith("bot.")}


def test_core_imports_only_core_and_no_io():
    for name, imports in modules().items():
        if name in CORE:
            assert ours(imports) <= CORE, (name, ours(imports) - CORE)
            outside = {i.split(".")[0] for i in imports if not i.startswith("bot")}
            assert not outside & {"redis", "fastapi", "baml_py", "asyncio", "subprocess", "httpx", "socket"}, name


def test_logic_sees_only_core_and_ports():
    for name, imports in modules().items():
        if name in LOGIC:
            assert ours(imports) <= CORE | LOGIC, (name, ours(imports) - CORE - LOGIC)


def test_adapters_never_import_each_other():
    for name, imports in modules().items():
        top = name.split(".")[0]
        if top in ADAPTERS:
            assert not (ours(imports) & ADAPTERS) - {top}, (name, ours(imports) & ADAPTERS)


def test_only_settings_reads_the_environment():
    # The deploy command inherits the bot's environment; dry_run IS a deploy command.
    allowed = {"settings", "deployers.command", "deployers.dry_run"}
    for path in BOT.rglob("*.py"):
        name = ".".join(path.relative_to(BOT).with_suffix("").parts)
        if name.startswith(("baml_client", "testing")) or name in allowed:
            continue
        source = path.read_text()
        assert "os.environ" not in source and "getenv" not in source, name


def test_only_llm_imports_the_baml_client():
    for name, imports in modules().items():
        if any(i.startswith(("bot.baml_client", "baml_py")) for i in imports):
            assert name == "llm", name
