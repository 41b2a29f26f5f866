"""What a test needs beyond Python, as its markers: found from the fixtures it uses (directly
or through others), or said by the test module (`pytestmark = pytest.mark.network`). `make
unit` runs the tests that need nothing, and there opening a socket or starting a process fails
the test with the marker to add, so a test cannot land in the fast layer by mistake."""

from __future__ import annotations

import contextlib
import os
import re
import socket
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

NEEDS = {
    "redis": "a Redis server process (valkey): one server, a cluster or Sentinels",
    "browser": "Chromium, driven by Playwright",
    "prometheus": "a Prometheus server process",
    "processes": "other processes: git, a deploy command, the bot's own web and workers",
    "network": "a server on loopback: an HTTP stand-in (Slack, GitHub, a model), SMTP, the web app",
}
# The fixtures that bring each: every test using one (at any depth) needs what it brings.
BY_FIXTURE = {
    "redis_url": "redis", "redis_cluster": "redis", "cluster_servers": "redis",
    "git_repo": "processes", "deploy_command": "processes",
    "fake_llm": "network", "api": "network",
    "chromium": "browser",
}
NONE = "not (" + " or ".join(NEEDS) + ")"  # the -m expression of `make unit`
# A module marked as a whole (`pytestmark = [pytest.mark.redis, ...]`): every test in it needs that.
_MODULE_MARK = re.compile(r"^pytestmark = (\[.*?\]|[^\n]*)", re.M | re.S)
_A_NEED = re.compile(r"pytest\.mark\.(" + "|".join(NEEDS) + r")\b")


def register(config: pytest.Config) -> None:
    for name, what in NEEDS.items():
        config.addinivalue_line("markers", f"{name}: the test needs {what}")


def mark(items: list[pytest.Item]) -> None:
    for item in items:
        for name in sorted({BY_FIXTURE[f] for f in getattr(item, "fixturenames", ()) if f in BY_FIXTURE}):
            item.add_marker(name)


def marked_whole(source: str) -> bool:
    """Whether a test module's source marks the whole module with something it needs."""
    return any(_A_NEED.search(m.group(1)) for m in _MODULE_MARK.finditer(source))


def left_out(path: Path, config: pytest.Config) -> bool:
    """For `make unit` (-m NONE): a module marked as a whole holds no test it would run, so it
    is not even imported (importing the servers' tests is most of collecting them)."""
    if config.getoption("markexpr", "") != NONE or path.suffix != ".py" or not path.name.startswith("test_"):
        return False
    if os.environ.get("DEPLOYBOT_TESTS_READ_ALL"):  # tests/architecture/test_test_layout.py compares
        return False
    return marked_whole(path.read_text())


def needs_nothing(item: pytest.Item) -> bool:
    return not any(item.get_closest_marker(name) for name in NEEDS)


def guarding(item: pytest.Item) -> contextlib.AbstractContextManager[None]:
    """nothing_but_python() for a test that needs nothing, else nothing at all."""
    return nothing_but_python() if needs_nothing(item) else contextlib.nullcontext()


class NeedsAMarker(AssertionError):
    pass


def _refuse(what: str, marker: str) -> Any:
    def refused(*args: object, **kwargs: object) -> None:
        raise NeedsAMarker(f"this test {what}: mark what it needs (pytestmark = pytest.mark.{marker}; tests/needs.py)")
    return refused


@contextmanager
def nothing_but_python() -> Iterator[None]:
    """Sockets and processes refused while an unmarked test (and the fixtures it sets up) runs."""
    patches = {
        (socket.socket, "connect"): _refuse("connects a socket", "network"),
        (socket.socket, "connect_ex"): _refuse("connects a socket", "network"),
        (socket.socket, "bind"): _refuse("listens on a socket", "network"),
        (subprocess.Popen, "_execute_child"): _refuse("starts a process", "processes"),
    }
    saved = {key: getattr(*key) for key in patches}
    try:
        for (owner, name), replacement in patches.items():
            setattr(owner, name, replacement)
        yield
    finally:
        for (owner, name), original in saved.items():
            setattr(owner, name, original)
