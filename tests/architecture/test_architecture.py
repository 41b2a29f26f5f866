"""Imports flow one way, and the layers are the folders of bot/:

    bot/__main__.py, bot/wiring  builds and starts everything (the composition root)
    bot/config                   settings: the only reader of the environment; it imports no adapter
                                 (what it shares with them, e.g. a deploy command's argv, is in the core)
    bot/adapters/<edge>          each talks to one outside thing; edges never import each other
    bot/runtime                  sequences the rules over the ports
    bot/core                     the pure rules and words: no I/O, no clock, no environment

Read from the source with `ast`, so it cannot drift; a module outside every layer fails, so a
new one is placed on purpose; no import circle anywhere. The tree is read and parsed once a
session (`parsed`), not once a test. The same direction is also declared for import-linter in
pyproject.toml (`lint-imports`, run by `make lint`)."""

from __future__ import annotations

import ast
import functools
import tomllib
from pathlib import Path

from tests import ROOT
from tests.architecture.tree import parsed

BOT = ROOT / "bot"

EDGES = {"redis", "channels", "deployers", "http", "llm", "probes"}
# Shared bases every edge may use, themselves no edge: one way to call out over HTTP
# (timeouts, retries, rate limits, URLs kept out of errors) and one GitHub API client, for
# the GitHub deployer and the GitHub Deployments channel alike. They import no edge.
SHARED = {"adapters.outbound", "adapters.github_api"}
LAYERS = ("core", "runtime", "adapters", "config", "wiring")
ROOT_MODULES = {"__main__", "__init__"}
SUPPORT = {"testing", "baml_client"}  # test stand-ins shipped with the package, generated code

IO_LIBRARIES = {
    "redis", "httpx", "aiohttp", "slack_sdk", "slack_bolt", "aiosmtplib", "starlette", "fastapi",
    "uvicorn", "subprocess", "socket", "asyncio", "baml_py", "smtplib", "os", "time", "tenacity",
}
# What sequencing may use: waiting, and the clock it is handed.
RUNTIME_IO = {"asyncio", "os", "socket", "time", "tenacity"}


def modules() -> dict[str, set[str]]:
    """bot-relative dotted module name -> the bot-relative dotted names it imports, and the
    first part of every outside import."""
    return _imports(BOT)


@functools.cache
def _imports(root: Path) -> dict[str, set[str]]:
    found = {}
    for name, (_, _, tree) in parsed(root).items():
        imports = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                imports |= {a.name for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module:
                # `from bot.adapters.redis import keys` imports bot.adapters.redis.keys;
                # `from bot.core.wording import utc` imports bot.core.wording.
                imports |= {_module(root, node.module, a.name) for a in node.names}
        found[name] = imports
    return found


def _module(root: Path, module: str, name: str) -> str:
    """What `from module import name` imports: the submodule `name` when there is one."""
    below = root.parent.joinpath(*module.split("."), name)
    return f"{module}.{name}" if below.is_dir() or below.with_suffix(".py").is_file() else module


def ours(imports: set[str]) -> set[str]:
    return {i.removeprefix("bot.") for i in imports if i.startswith("bot.")}


def outside(imports: set[str]) -> set[str]:
    return {i.split(".")[0] for i in imports if i != "bot" and not i.startswith("bot.")}


def layer(name: str) -> str:
    top = name.split(".")[0]
    if top in LAYERS or top in SUPPORT:
        return top
    if name in ROOT_MODULES:
        return "wiring"
    raise AssertionError(f"bot/{name.replace('.', '/')}.py is in no layer: put it in one of bot/{{{','.join(LAYERS)}}}")


def edge(name: str) -> str:
    """bot.adapters.<edge>...: which outside thing an adapter talks to."""
    return name.split(".")[1]


def test_every_module_is_in_a_layer():
    for name in modules():
        layer(name)


def test_only_entry_points_sit_directly_in_bot():
    loose = {p.stem for p in BOT.glob("*.py")}
    assert loose <= ROOT_MODULES, loose - ROOT_MODULES


def test_every_adapter_is_an_edge():
    for name in modules():
        if layer(name) == "adapters" and name != "adapters.__init__" and name not in SHARED:
            assert edge(name) in EDGES, name


def test_core_imports_only_core_and_no_io():
    for name, imports in modules().items():
        if layer(name) == "core":
            wrong = {i for i in ours(imports) if layer(i) != "core"}
            assert not wrong, (name, wrong)
            assert not outside(imports) & IO_LIBRARIES, (name, outside(imports) & IO_LIBRARIES)


def test_runtime_sees_only_core_and_runtime():
    for name, imports in modules().items():
        if layer(name) == "runtime":
            wrong = {i for i in ours(imports) if layer(i) not in ("core", "runtime")}
            assert not wrong, (name, wrong)
            assert not outside(imports) & (IO_LIBRARIES - RUNTIME_IO), (name, outside(imports) & IO_LIBRARIES)


def test_adapters_never_import_each_other_or_what_is_above_them():
    # Each channel's inbox names are its own (channels/<kind>/names.py): no edge is excused.
    allowed = SHARED
    for name, imports in modules().items():
        if layer(name) != "adapters" or name == "adapters.__init__":
            continue
        for target in ours(imports):
            if layer(target) in ("config", "wiring"):
                raise AssertionError(f"{name} imports {target}: adapters are handed what they need")
            if name in SHARED and layer(target) == "adapters" and target not in SHARED:
                raise AssertionError(f"{name} imports {target}: a shared base imports no edge")
            if layer(target) == "adapters" and edge(target) != edge(name) and target not in allowed:
                raise AssertionError(f"{name} imports {target}: adapters never import each other")


def test_nothing_below_the_root_imports_it():
    for name, imports in modules().items():
        if layer(name) in ("core", "runtime", "adapters", "config"):
            wrong = {i for i in ours(imports) if layer(i) == "wiring" and i != "__init__"}
            assert not wrong, (name, wrong)


def test_config_imports_no_adapter():
    """Settings are read before any adapter exists, and handed to them by the root; what both
    need (a deploy command's argv, where the data lives) sits in the core."""
    for name, imports in modules().items():
        if layer(name) == "config":
            wrong = {i for i in ours(imports) if layer(i) == "adapters"}
            assert not wrong, f"{name} imports {sorted(wrong)}: config imports no adapter"


def test_only_settings_reads_the_environment():
    # The deploy command is given an allow-listed part of the bot's environment (deployers.command);
    # dry_run IS a deploy command, reading what it was given.
    allowed = {"config.settings", "adapters.deployers.command", "adapters.deployers.dry_run"}
    for name, (_, source, _) in parsed(BOT).items():
        if layer(name) in SUPPORT or name in allowed:
            continue
        assert "os.environ" not in source and "getenv" not in source, name


def test_only_llm_imports_the_baml_client():
    for name, imports in modules().items():
        if layer(name) not in SUPPORT and any(i.startswith(("bot.baml_client", "baml_py")) for i in imports):
            assert name == "adapters.llm", name


def test_a_wrong_import_is_caught(tmp_path):
    """The check itself can fail: a core module importing an adapter is reported."""
    fake = tmp_path / "bot"
    (fake / "core").mkdir(parents=True)
    (fake / "adapters" / "redis").mkdir(parents=True)
    (fake / "core" / "rules.py").write_text("from bot.adapters.redis import keys\n")
    (fake / "adapters" / "redis" / "keys.py").write_text("")
    globals()["BOT"], saved = fake, BOT
    try:
        try:
            test_core_imports_only_core_and_no_io()
        except AssertionError as e:
            assert "core.rules" in str(e)
        else:
            raise AssertionError("a core module importing an adapter was not caught")
    finally:
        globals()["BOT"] = saved


def test_a_channel_importing_another_edge_is_caught(tmp_path):
    """No edge is excused: a channel naming its inbox entries through the Redis keys is one
    edge importing another (each channel's names are in its own package)."""
    fake = tmp_path / "bot"
    (fake / "adapters" / "channels").mkdir(parents=True)
    (fake / "adapters" / "redis").mkdir(parents=True)
    (fake / "adapters" / "channels" / "chat.py").write_text("from bot.adapters.redis import keys\n")
    (fake / "adapters" / "redis" / "keys.py").write_text("")
    globals()["BOT"], saved = fake, BOT
    try:
        try:
            test_adapters_never_import_each_other_or_what_is_above_them()
        except AssertionError as e:
            assert "adapters.channels.chat" in str(e)
        else:
            raise AssertionError("a channel importing the Redis keys was not caught")
    finally:
        globals()["BOT"] = saved


def test_import_linter_excuses_no_edge():
    """The independence contract of pyproject.toml ignores no import."""
    config = tomllib.loads((BOT.parent / "pyproject.toml").read_text())
    independence = [c for c in config["tool"]["importlinter"]["contracts"] if c["type"] == "independence"]
    assert independence
    assert all(not c.get("ignore_imports") for c in independence)


def import_graph(root: Path) -> dict[str, set[str]]:
    """Module -> the modules under `root` it imports (a package as `name.__init__`), relative
    imports too, inside functions and `if TYPE_CHECKING:` too: a circle hidden in either is
    still one. Generated code is left out: it is not ours to change."""
    graph = {}
    for name, (_, _, tree) in parsed(root).items():
        if name.split(".")[0] in GENERATED:
            continue
        graph[name] = {m for node in ast.walk(tree) for m in _imported(root, name, node)} - {name}
    return graph


GENERATED = {"baml_client"}


def _imported(root: Path, name: str, node: ast.AST) -> set[str]:
    """The modules under `root` that one import statement in module `name` imports."""
    if isinstance(node, ast.Import):
        return {m for a in node.names if (m := _node(root, _ours(root, a.name)))}
    if not isinstance(node, ast.ImportFrom):
        return set()
    if node.level:  # relative: from the package `name` is in, one level up per extra dot
        package = name.split(".")[:-1]
        base = package[: len(package) - node.level + 1] + (node.module.split(".") if node.module else [])
    else:
        base = _ours(root, node.module or "")
    if base is None:
        return set()
    return {m for a in node.names if (m := _node(root, [*base, a.name]) or _node(root, base))}


def _ours(root: Path, dotted: str) -> list[str] | None:
    """`bot.core.events` as ['core', 'events'] (root-relative); None for an outside module."""
    parts = dotted.split(".")
    return parts[1:] if parts[0] == root.name else None


def _node(root: Path, parts: list[str] | None) -> str | None:
    """The module `parts` names under `root` (a package as `name.__init__`), None when none."""
    if parts is None:
        return None
    if parts and root.joinpath(*parts).with_suffix(".py").is_file():
        return ".".join(parts)
    return ".".join([*parts, "__init__"]) if root.joinpath(*parts, "__init__.py").is_file() else None


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every import circle: the modules that reach each other through their imports, sorted."""
    reach = {name: _reachable(graph, name) for name in graph}
    found = {frozenset(m for m in reach[name] if name in reach[m]) for name in graph if name in reach[name]}
    return sorted(sorted(circle) for circle in found)


def _reachable(graph: dict[str, set[str]], start: str) -> set[str]:
    seen: set[str] = set()
    todo = [start]
    while todo:
        for target in graph.get(todo.pop(), ()):
            if target not in seen:
                seen.add(target)
                todo.append(target)
    return seen


def test_no_import_circle():
    assert circles(import_graph(BOT)) == [], "modules that import each other, directly or round a circle"


def test_an_import_circle_is_caught(tmp_path):
    """The check itself can fail: a circle through a package's face and a function's own
    import is found, and one of relative imports; a module that only imports them is in none,
    and generated code is left out."""
    fake = tmp_path / "bot"
    for folder in ("core/words", "adapters", "baml_client"):
        (fake / folder).mkdir(parents=True)
    files = {
        "core/events.py": "from bot.core.people import Identity\n",
        "core/people.py": "from bot.core import words\n",
        "core/words/__init__.py": "from bot.core.words.asking import ask\n",
        "core/words/asking.py": "def ask():\n    from bot.core.events import Event\n",
        "core/chain.py": "import bot.core.events\nfrom bot.core.words import ask\n",
        "adapters/a.py": "from . import b\n",
        "adapters/b.py": "from .a import x\n",
        "baml_client/__init__.py": "from . import gen\n",
        "baml_client/gen.py": "from . import x\n",
    }
    for path, source in files.items():
        (fake / path).write_text(source)
    assert circles(import_graph(fake)) == [
        ["adapters.a", "adapters.b"],
        ["core.events", "core.people", "core.words.__init__", "core.words.asking"],
    ]


MAX_FUNCTION_LINES = 80  # a function longer than this is doing several things: split it


def long_functions(root: Path) -> list[str]:
    """`path:line name (N lines)` for every function or method under `root` (generated code
    left out) longer than MAX_FUNCTION_LINES, from its `def` (decorators not counted) to its
    last line."""
    found = []
    for path, _, tree in parsed(root).values():
        if "baml_client" in path.relative_to(root).parts:
            continue
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = node.end_lineno - node.lineno + 1
                if lines > MAX_FUNCTION_LINES:
                    found.append(f"{path.relative_to(root)}:{node.lineno} {node.name} ({lines} lines)")
    return found


def test_no_function_is_longer_than_80_lines():
    assert long_functions(BOT) == []


def test_a_long_function_is_caught(tmp_path):
    """The check itself can fail: an 81-line function is reported, an 80-line one and
    generated code are not."""
    body = "    x = 1\n"
    (tmp_path / "baml_client").mkdir()
    (tmp_path / "baml_client" / "gen.py").write_text("def generated():\n" + body * 200)
    fits = "def fits():\n" + body * 79  # lines 1 to 80
    too_long = "class A:\n    async def too_long(self):\n" + ("    " + body) * 80  # its def on line 83, 81 lines
    (tmp_path / "mod.py").write_text(fits + "\n" + too_long)
    assert long_functions(tmp_path) == ["mod.py:83 too_long (81 lines)"]


MAX_MODULE_LINES = 500  # a module longer than this holds several features: split it by feature
# Modules left long while a rework splits them: each leaves the list then (the next test says
# so). Empty since the second renovation split the last of them.
LONG_MODULES_BEING_REWORKED: set[str] = set()


def long_modules(root: Path) -> list[str]:
    """`path (N lines)` for every module under `root` (generated code left out) longer than
    MAX_MODULE_LINES."""
    found = []
    for path, source, _ in parsed(root).values():
        if "baml_client" in path.relative_to(root).parts:
            continue
        lines = len(source.splitlines())
        if lines > MAX_MODULE_LINES:
            found.append(f"{path.relative_to(root).as_posix()} ({lines} lines)")
    return found


def test_no_module_is_longer_than_500_lines():
    too_long = [m for m in long_modules(BOT) if m.split(" ")[0] not in LONG_MODULES_BEING_REWORKED]
    assert too_long == [], "split each by feature (a package with a face, or sibling modules)"


def test_only_long_modules_are_let_off():
    long = {m.split(" ")[0] for m in long_modules(BOT)}
    assert LONG_MODULES_BEING_REWORKED <= long, f"take off the list: {LONG_MODULES_BEING_REWORKED - long}"


def test_a_long_module_is_caught(tmp_path):
    """The check itself can fail: a 501-line module is reported, a 500-line one and generated
    code are not."""
    (tmp_path / "baml_client").mkdir()
    (tmp_path / "baml_client" / "gen.py").write_text("x = 1\n" * 900)
    (tmp_path / "fits.py").write_text("x = 1\n" * 500)
    (tmp_path / "core").mkdir()
    (tmp_path / "core" / "big.py").write_text("x = 1\n" * 501)
    assert long_modules(tmp_path) == ["core/big.py (501 lines)"]
