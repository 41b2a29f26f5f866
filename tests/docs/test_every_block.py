"""Every fenced block of the docs is run or checked by a test, or marked illustrative
(`<!-- illustrative -->` on the line above it: few, and only where running it means a
receiver or a secret). Which test takes which block is decided here, so a new kind of block
fails until someone says how it is checked."""

from __future__ import annotations

import inspect
import re
import shlex
import subprocess
import sys
from collections.abc import Callable

import pytest
import yaml

from bot.__main__ import parser
from bot.adapters.deployers.github_actions import GitHubDeployer
from tests.docs import test_cli_reference, test_http_examples, test_terminal_sessions
from tests.docs.markdown import DOCS, ROOT, Block, blocks

MAKEFILE = (ROOT / "Makefile").read_text()


# Which test takes a block: the first whose question it answers yes.
KINDS: tuple[tuple[str, Callable[[Block], bool]], ...] = (
    ("illustrative", lambda b: b.illustrative),
    ("extending", lambda b: b.path.name == "extending.md"),  # tests/wiring/test_extending.py holds it to the code
    ("mcp client", lambda b: b.lang == "json" and b.path.name == "agents.md"),  # test_mcp.py
    ("toml", lambda b: b.lang == "toml"),  # tests/docs/test_readme_examples.py loads it
    ("session", lambda b: b.lang == "console"),
    ("http", lambda b: b in test_http_examples.examples()),
    ("cli synopsis", lambda b: b.lang == "sh" and b.body.startswith("python -m bot serve")),
    ("setup", lambda b: b.lang == "sh" and b.body == "git tag v0.1.0\n"),  # tests/docs/conftest.py's app_repo runs it
    ("commands", lambda b: b.lang == "sh"),
    ("workflow", lambda b: b.lang == "yaml"),
    ("procfile", lambda b: b.body.startswith("# Procfile\n")),
    ("diagram", lambda b: b.lang == ""),
)


def kind(block: Block) -> str:
    return next((name for name, takes in KINDS if takes(block)), "unchecked")


def test_every_block_is_checked_or_marked_illustrative():
    kinds = {str(b): kind(b) for path in DOCS for b in blocks(path)}
    assert [where for where, k in kinds.items() if k == "unchecked"] == []
    assert list(kinds.values()).count("illustrative") <= 2, "keep illustrative blocks few"
    assert "session" in kinds.values() and "http" in kinds.values()
    assert len(test_terminal_sessions.sessions()) + len(test_http_examples.examples()) >= 4
    assert test_cli_reference.synopsis()


def lines(kind_: str) -> list[tuple[Block, str]]:
    return [(b, line.split("  #")[0].strip()) for path in DOCS for b in blocks(path) if kind(b) == kind_
            for line in b.body.splitlines() if line.strip()]


@pytest.mark.processes  # the chaos tool's --help
def test_each_command_shown_exists_and_takes_its_options():
    chaos_help = ""
    for block, line in lines("commands"):
        words = shlex.split(line)
        if words[0] == "make":
            assert re.search(rf"^{words[1]}:", MAKEFILE, re.M), f"{block}: no make target {words[1]}"
        elif words[:3] == ["python", "-m", "bot"]:
            parser().parse_args([w.replace("<id>", "tok123") for w in words[3:]])
        elif words[:3] == [".venv/bin/python", "-m", "bot.testing.chaos"]:
            chaos_help = chaos_help or subprocess.run(
                [sys.executable, "-m", "bot.testing.chaos", "--help"], capture_output=True, text=True, check=True
            ).stdout
            assert all(w in chaos_help for w in words[3:] if w.startswith("--")), f"{block}: {line}"
        else:
            raise AssertionError(f"{block}: no test knows how to check {line!r}")


def test_the_procfile_shown_is_the_procfile():
    [block] = [b for path in DOCS for b in blocks(path) if kind(b) == "procfile"]
    assert block.body.removeprefix("# Procfile\n") == (ROOT / "Procfile").read_text()


def test_the_workflow_shown_takes_what_the_github_deployer_sends():
    [block] = [b for path in DOCS for b in blocks(path) if kind(b) == "workflow"]
    workflow = yaml.safe_load(block.body)
    inputs = workflow[True]["workflow_dispatch"]["inputs"]  # YAML 1.1 reads the key `on` as True
    commit_input = inspect.signature(GitHubDeployer).parameters["commit_input"].default
    assert set(inputs) == {"tag", "environment", "deploy_id", commit_input}  # what a dispatch sends
    assert "${{ inputs.deploy_id }}" in workflow["run-name"]
    [checkout] = [s for s in workflow["jobs"]["deploy"]["steps"] if s.get("uses", "").startswith("actions/checkout")]
    assert checkout["with"]["ref"] == "${{ inputs.commit }}"
