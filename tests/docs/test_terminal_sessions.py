"""Every terminal session the docs show (```console blocks: `$ command` lines and what it
prints) is run for real, `python -m bot` in a fresh store, and compared line by line with
the doc; ids, commits and times are placeholders (tests/docs/placeholders.py). An answer the
doc types after a prompt is what the test sends on stdin."""

from __future__ import annotations

import shlex
import subprocess
import sys
from dataclasses import dataclass

import pytest

from tests.docs.markdown import DOCS, Block, blocks
from tests.docs.placeholders import Placeholders

PROMPTS = ("rejects it as feedback] ", "your reply> ")


@dataclass
class Command:
    line: str
    shown: list[str]


def sessions() -> list[Block]:
    return [b for path in DOCS for b in blocks(path, "console") if not b.illustrative]


def commands(block: Block) -> list[Command]:
    found: list[Command] = []
    for line in block.body.splitlines():
        if line.startswith("$ "):
            found.append(Command(line[2:], []))
        else:
            assert found, f"{block}: output before any command"
            found[-1].shown.append(line.rstrip())
    return found


def argv_and_stdin(command: Command) -> tuple[list[str], str]:
    words = shlex.split(command.line)
    answers = [(line + " ").split(p, 1)[1].strip() for line in command.shown for p in PROMPTS if p in line + " "]
    stdin = "".join(f"{a}\n" for a in answers if a)
    if words[-2:] == ["<", "/dev/null"]:
        words, stdin = words[:-2], ""
    assert words[:3] in ([".venv/bin/python", "-m", "bot"], [".venv/bin/python", "-m", "bot.testing.try_gate"]), (
        command.line)
    return [sys.executable, *words[1:]], stdin


def test_the_docs_show_sessions_to_run():
    names = {b.path.name for b in sessions()}
    assert {"README.md", "cli.md"} <= names


@pytest.mark.parametrize("block", sessions(), ids=str)
def test_the_session_prints_what_the_doc_shows(block, doc_env, app_repo):
    placeholders = Placeholders()
    for command in commands(block):
        argv, stdin = argv_and_stdin(Command(placeholders.fill(command.line), command.shown))
        run = subprocess.run(argv, env=doc_env, cwd=app_repo, input=stdin, capture_output=True, text=True,
                             timeout=120)
        printed = [line.rstrip() for line in run.stdout.splitlines()]
        assert run.returncode == 0, f"{command.line}\n{run.stdout}\n{run.stderr}"
        assert len(printed) == len(command.shown), f"{block}: {command.line}\n" + "\n".join(printed)
        for shown, got in zip(command.shown, printed, strict=True):
            assert placeholders.match(shown, got), f"{block}: {command.line}\n  doc: {shown}\n  got: {got}"
