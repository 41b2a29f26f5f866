"""A question is never a command that changes anything."""

from __future__ import annotations

from bot.core.commands import deploy_anyway, parse
from bot.core.events import StopDeploys


def test_questions_are_never_commands_that_change_anything():
    for text in ("stop all deploys, or only production?", "lock production for a minute?",
                 "unlock production?", "roll back backend in production?"):
        assert parse(text) is None, text
    assert deploy_anyway("deploy anyway, or should we wait for CI?") is None
    assert parse("what's on production?") is not None  # asked as a question, and only reads
    assert parse("stop all deploys until 2026-02-30: x") is None  # not a date: no open-ended stop
    stop = parse("stop all deploys until 2026-11-26 8:00: migration")
    assert isinstance(stop, StopDeploys) and stop.until is not None and stop.until.hour == 8
