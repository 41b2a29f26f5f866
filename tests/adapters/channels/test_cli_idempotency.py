"""`python -m bot chat ... --idempotency-key KEY` as a user (or a script) runs it: real
processes and Redis. Run again with the same key (a script retrying after a timeout, an
interrupted terminal), it goes on with the first thread rather than start a second; the same
key for another message is refused, storing nothing."""

from __future__ import annotations

import pytest

from tests.adapters.channels.test_cli import bot, env, shared_env  # noqa: F401
from tests.helpers import ledger_lines

pytestmark = [pytest.mark.redis, pytest.mark.processes]


def threads(where: dict[str, str]) -> list[str]:
    """The ids `threads list` prints, one row each."""
    return [row.split()[0] for row in bot(where, "threads", "list", "--limit", "200").stdout.splitlines()]


def test_a_launch_run_again_with_its_key_goes_on_with_the_first_thread(shared_env, ledger):  # noqa: F811
    ask = ("chat", "deploy backend v1.2.3 to production", "--user", "alice", "--idempotency-key", "release-42")
    first = bot(shared_env, *ask, stdin="")  # stdin ended: the approval is left waiting
    assert "approval needed" in first.stdout and "deployed: backend" not in first.stdout, first.stdout
    [thread] = threads(shared_env)
    again = bot(shared_env, *ask, stdin="y\n")
    assert threads(shared_env) == [thread]
    assert f"thread {thread}" in again.stdout and "deployed: backend v1.2.3 to production" in again.stdout
    assert len(ledger_lines(ledger)) == 1

    other = bot(shared_env, "chat", "deploy backend v1.2.2 to production", "--idempotency-key", "release-42",
                "--user", "alice", check=False)
    assert other.returncode == 1 and "--idempotency-key was used for another message" in other.stderr
    bad = bot(shared_env, "chat", "lock staging: x", "--idempotency-key", "has space", check=False)
    assert bad.returncode == 1 and "--idempotency-key must be 1 to 200 printable characters" in bad.stderr
    assert threads(shared_env) == [thread]
