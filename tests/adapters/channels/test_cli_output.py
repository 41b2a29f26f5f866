"""bot/adapters/channels/cli.py in process, over the in-memory fakes: what the terminal prints of
people's, the model's and git's text holds no control characters (no escape sequences),
and statuses are read with the service's clock (an expired approval waits for a human)."""

from __future__ import annotations

import argparse
import re

import pytest

from bot.adapters.channels import cli
from bot.core.events import DeployBackend, DoneForNow, GitTag, GitTagsResult, ListGitTags
from tests.memory_parts import Parts, who

ESC = "\x1b]0;owned\x07\x1b[2J\x1b[31mred\x1b[0m\r\x9b31m\u202eevil"
CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e]")


def args(action: str, **values) -> argparse.Namespace:
    defaults = {"status": None, "limit": 20, "markdown": False, "id": None}
    return argparse.Namespace(action=action, **{**defaults, **values})


@pytest.fixture
def term(parts: Parts, service, runner) -> cli.Terminal:
    return cli.Terminal(service, runner.run)


async def test_nothing_printed_holds_a_control_character(parts, service, term, capsys):
    parts.model.script(DoneForNow(message=f"done {ESC}"))
    thread = await service.launch(f"hello {ESC}\nsecond line", service.unproven(f"mallory{ESC}"))
    await term.run(thread.id)
    capsys.readouterr()

    assert await cli.threads(term, args("list")) == 0
    listed = capsys.readouterr().out
    assert not CONTROL.search(listed) and "hello ]0;owned[2J[31mred[0m" in listed
    assert len(listed.splitlines()) == 1  # the title's line break does not start a row

    assert await cli.threads(term, args("show", id=thread.id, markdown=True)) == 0
    shown = capsys.readouterr().out
    assert not CONTROL.search(shown) and "second line" in shown

    assert await cli.threads(term, args("show", id=thread.id)) == 0
    raw = capsys.readouterr().out  # JSON: every control character is escaped
    assert not CONTROL.search(raw) and "\\u001b" in raw

    await cli.PrintNotifier().publish(thread, thread.events)
    printed = capsys.readouterr().out
    assert not CONTROL.search(printed) and "mallory" in printed and "    second line" in printed


def test_safe_keeps_line_feeds_and_tabs_but_no_other_control():
    assert cli.safe("a\tb\nc\x1b[1md\r\ne\u2028f") == "a\tb\nc[1md\ne\nf"
    assert cli.safe("a\nb\rc", one_line=True) == "a b c"


async def test_the_approval_question_and_git_tags_are_printed_safely(parts, service, term, capsys, monkeypatch):
    asked = []

    async def ask(prompt: str) -> str | None:
        asked.append(prompt)
        return None  # the terminal closed: the thread pauses

    monkeypatch.setattr(cli, "ask", ask)
    parts.model.script(ListGitTags(), DeployBackend(tag="v1.2.3", environment="production", reason=ESC))
    assert await cli.chat(term, "ship the newest backend", "bob") == 0  # an approver: asked
    out = capsys.readouterr().out
    assert not CONTROL.search(out) and not CONTROL.search(asked[0])
    assert "[waiting_for_approval]" in out
    tags = GitTagsResult(step_id="s", tags=[GitTag(name=f"v1{ESC}", commit="abc")])
    assert not CONTROL.search(cli.plain(tags))


async def test_an_expired_approval_is_listed_as_waiting_for_a_human(parts, service, term, capsys):
    parts.model.script(ListGitTags(), DeployBackend(tag="v1.2.3", environment="production"))
    thread = await service.launch("ship the newest backend", who("alice"))
    await term.run(thread.id)
    capsys.readouterr()
    assert await cli.threads(term, args("list")) == 0
    assert "waiting_for_approval" in capsys.readouterr().out

    parts.clock.advance(hours=2)
    assert await cli.threads(term, args("list")) == 0
    assert "waiting_for_human" in capsys.readouterr().out
    assert await cli.threads(term, args("list", status="waiting_for_approval")) == 0
    assert capsys.readouterr().out == ""  # it no longer waits for an approval
    assert await cli.threads(term, args("resume", id=thread.id)) == 0
    assert f"[waiting_for_human] thread {thread.id}" in capsys.readouterr().out
    assert await cli.threads(term, args("show", id=thread.id, markdown=True)) == 0
    assert "Status: **waiting_for_human**" in capsys.readouterr().out
