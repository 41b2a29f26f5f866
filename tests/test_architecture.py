"""Imports flow one way: root -> adapters -> logic -> core. The core does no I/O, adapters
never import each other, and only settings.py reads the environment. Read from the source
with `ast`, so it cannot drift; every module must be placed in a layer, so a new one is
placed on purpose."""

from __future__ import annotations

import ast
from pathlib import Path

BOT = Path(__file__).resolve().parent.parent / "bot"

# Pure: no I/O, no clock, no environment; only each other and pydantic.
CORE = {
    "events", "thread", "prompt", "policy", "commands", "control", "transcript", "views",
    "notices", "wording", "people", "catalog", "triggers", "freezes", "agents",
}
# The application: uses the ports, never an adapter.
LOGIC = {
    "agent", "steps", "deploying", "loop", "service", "worker", "ports", "retry", "clock", "schedules", "gc",
}
# The edges: each talks to one outside thing.
ADAPTERS = {"stores", "deployers", "channels", "llm", "web", "embedded_redis", "http_limits", "console"}
# Builds and starts everything.
ROOT = {"app", "settings", "settings_file", "__main__", "__init__"}
# Test support shipped with the package (stand-in servers, fakes, the chaos suite).
SUPPORT = {"testing", "baml_client"}

IO_LIBRARIES = {
    "redis", "httpx", "aiohttp", "slack_sdk", "slack_bolt", "aiosmtplib", "starlette", "fastapi",
    "uvicorn", "subprocess", "socket", "asyncio", "baml_py", "smtplib", "os", "time", "tenacity",
}
CORE_THIRD_PARTY = {"pydantic"}


def modules() -> dict[str, set[str]]:
    found = {}
    for path in BOT.rglob("*.py"):
        rel = path.relative_to(BOT)
        imports = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                imports |= {a.name for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module:
                package = BOT.parent.joinpath(*node.module.split(".")).is_dir()
                if package:  # `from bot.stores import keys` imports bot.stores.keys
                    imports |= {f"{node.module}.{a.name}" for a in node.names}
                else:
                    imports.add(node.module)
        found[".".join(rel.with_suffix("").parts)] = imports
    return found


def ours(imports: set[str]) -> set[str]:
    return {i.split(".")[1] for i in imports if i.startswith("bot.")}


def layer(name: str) -> str:
    top = name.split(".")[0]
    for label, members in (("core", CORE), ("logic", LOGIC), ("adapters", ADAPTERS), ("root", ROOT),
                           ("support", SUPPORT)):
        if top in members:
            return label
    raise AssertionError(f"bot/{name.replace('.', '/')}.py is in no layer: add it to tests/test_architecture.py")


def test_every_module_is_in_a_layer():
    for name in modules():
        layer(name)


def test_core_imports_only_core_and_no_io():
    for name, imports in modules().items():
        if layer(name) == "core":
            assert ours(imports) <= CORE, (name, ours(imports) - CORE)
            outside = {i.split(".")[0] for i in imports if not i.startswith("bot")}
            assert not outside & IO_LIBRARIES, (name, outside & IO_LIBRARIES)


def test_logic_sees_only_core_and_logic():
    for name, imports in modules().items():
        if layer(name) == "logic":
            assert ours(imports) <= CORE | LOGIC, (name, ours(imports) - CORE - LOGIC)
            outside = {i.split(".")[0] for i in imports if not i.startswith("bot")}
            assert not outside & (IO_LIBRARIES - {"asyncio", "os", "socket", "time", "tenacity"}), name


def test_adapters_never_import_each_other_or_the_root():
    # The shared pieces: channels name their inbox entries through stores.keys (pure naming), and
    # the web app mounts the console's routes (bot.console.mount), which import nothing of web's.
    allowed = {"stores.keys", "console.mount"}
    for name, imports in modules().items():
        if layer(name) != "adapters":
            continue
        top = name.split(".")[0]
        others = {i.removeprefix("bot.") for i in imports if i.startswith("bot.")}
        crossing = {o for o in others if o.split(".")[0] in ADAPTERS - {top} and o not in allowed}
        assert not crossing, (name, crossing)
        assert not ours(imports) & ROOT, (name, ours(imports) & ROOT)


def test_nothing_below_the_root_imports_it():
    for name, imports in modules().items():
        if layer(name) in ("core", "logic", "adapters"):
            assert not ours(imports) & (ROOT - {"__init__"}), (name, ours(imports) & ROOT)


def test_only_settings_reads_the_environment():
    # The deploy command is given an allow-listed part of the bot's environment (deployers.command);
    # dry_run IS a deploy command, reading what it was given.
    allowed = {"settings", "deployers.command", "deployers.dry_run"}
    for path in BOT.rglob("*.py"):
        name = ".".join(path.relative_to(BOT).with_suffix("").parts)
        if layer(name) == "support" or name in allowed:
            continue
        source = path.read_text()
        assert "os.environ" not in source and "getenv" not in source, name


def test_only_llm_imports_the_baml_client():
    for name, imports in modules().items():
        if layer(name) != "support" and any(i.startswith(("bot.baml_client", "baml_py")) for i in imports):
            assert name == "llm", name
