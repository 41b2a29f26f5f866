"""docs/cli.md names every command `python -m bot` has, with every option each takes, and
nothing it does not; and each command runs, once, as the page says (`--help` for `serve`
and `worker`, which run until stopped)."""

from __future__ import annotations

import argparse
import re
import subprocess
import sys

import pytest

from bot.__main__ import parser
from tests.docs.markdown import ROOT, blocks

CLI = ROOT / "docs" / "cli.md"


def synopsis() -> dict[str, set[str]]:
    """`threads respond` -> the options its line shows."""
    [block] = [b for b in blocks(CLI, "sh") if b.body.startswith("python -m bot ")]
    lines = {}
    for line in block.body.splitlines():
        words = line.removeprefix("python -m bot ").split()
        path = " ".join(w for w in words[:2] if re.fullmatch(r"[a-z][a-z-]*", w))
        lines[path] = set(re.findall(r"--[a-z][a-z-]*", line))
    return lines


def commands() -> dict[str, set[str]]:
    """What the parser takes: `threads respond` -> its options."""
    found = {}

    def walk(p: argparse.ArgumentParser, path: str) -> None:
        subs = [a for a in p._actions if isinstance(a, argparse._SubParsersAction)]
        if not subs:
            found[path] = {o for a in p._actions for o in a.option_strings if o.startswith("--") and o != "--help"}
        for sub in subs:
            for name, child in sub.choices.items():
                walk(child, f"{path} {name}".strip())

    walk(parser(), "")
    return found


def test_the_page_lists_every_command_with_exactly_its_options():
    assert synopsis() == commands()


@pytest.fixture
def run(doc_env, app_repo):
    (app_repo / "deploybot.toml").write_text(
        '[people.alice]\nemail = "alice@example.com"\n\n'
        '[environments.staging]\napprovers = ["*"]\n\n'
        '[environments.production]\nprotected = true\napprovers = ["alice"]\n'
    )

    def bot(*args: str) -> str:
        out = subprocess.run([sys.executable, "-m", "bot", *args], env=doc_env, cwd=app_repo, input="",
                             capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, f"{args}\n{out.stdout}\n{out.stderr}"
        return out.stdout

    return bot


@pytest.mark.timeout(300)  # some 25 processes, each a Python start: slow on a loaded machine, not stuck
def test_every_command_runs_once(run):
    for command in ("serve", "worker"):
        assert "usage: python -m bot " + command in run(command, "--help")
    out = run("chat", "deploy backend v0.1.0 to staging", "--user", "alice")
    thread = re.match(r"thread (\w+)", out)[1]
    assert "deployed: backend v0.1.0 to staging" in out
    assert thread in run("threads", "list", "--status", "done", "--limit", "5")
    assert f'"id": "{thread}"' in run("threads", "show", thread)
    assert run("threads", "show", thread, "--markdown").startswith(f"# Thread {thread}")
    assert re.search(r"new thread (\w+)", run("threads", "fork", thread, "--at", "1"))
    # a finished thread is never cancelled: one waiting for its approval is
    waiting = re.match(r"thread (\w+)", run("chat", "deploy backend v0.1.0 to production", "--user", "alice"))[1]
    assert f"cancelled {waiting}" in run("threads", "cancel", waiting, "--reason", "a try", "--user", "alice")
    assert f"[cancelled] thread {waiting}" in run("threads", "resume", waiting)
    assert "Stopped all deploys to production" in run("freeze", "production", "--reason", "incident", "--user", "alice")
    assert "Deploys to production may start again" in run("unfreeze", "production", "--user", "alice")
    assert "On staging: backend v0.1.0" in run("deploys", "staging")
    assert "nothing to roll backend in staging back to" in run("rollback", "backend", "staging", "--user", "alice")
    assert "no environment before production" in run("promote", "backend", "production", "--user", "alice")
    created = run("tokens", "create", "alice", "--name", "laptop")
    token_id = re.search(r"dbt_([A-Za-z0-9]+)_", created)[1]
    assert "laptop" in run("tokens", "list", "--person", "alice")
    run("tokens", "revoke", token_id)
    assert "/auth/link?code=" in run("login-link", "alice")
    assert "would go" in run("gc", "--dry-run")
    run("gc")
    assert run("redis-stop").strip() == "not running"  # REDIS_URL names the test's server: no embedded one
