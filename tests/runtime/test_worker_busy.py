"""A worker with a thread another holds: tried again while the holder lives, left to it after a
lease; a failed run left for reclaiming."""

from __future__ import annotations

import pytest

from bot.runtime.worker import Worker


class BusyRunner:
    """A runner whose thread another run holds for the first `busy` tries."""

    transient = (ConnectionError,)

    def __init__(self, busy: int, fail: Exception | None = None) -> None:
        self.busy, self.fail, self.tries = busy, fail, 0

    async def run(self, thread_id: str):
        self.tries += 1
        if self.fail:
            raise self.fail
        return None if self.tries <= self.busy else object()


async def test_a_busy_thread_is_tried_again_until_its_holder_lets_go(monkeypatch):
    monkeypatch.setattr("bot.runtime.worker.BUSY_WAIT", 0.01)
    runner = BusyRunner(busy=3)
    assert await Worker(runner, None, None, name="w")._run("t1") is True
    assert runner.tries == 4


async def test_a_thread_busy_for_longer_than_a_lease_is_left_to_its_live_holder(monkeypatch):
    monkeypatch.setattr("bot.runtime.worker.BUSY_WAIT", 0.01)
    monkeypatch.setattr("bot.runtime.worker.BUSY_FOR", 0.1)
    runner = BusyRunner(busy=10_000)
    assert await Worker(runner, None, None, name="w")._run("t1") is True  # done: the holder re-reads
    assert 5 <= runner.tries <= 12


@pytest.mark.parametrize("error, done", [(ConnectionError("down"), False), (ValueError("bug"), False)])
async def test_a_failed_run_is_not_retried_here_but_left_for_reclaiming(error, done):
    runner = BusyRunner(busy=0, fail=error)
    assert await Worker(runner, None, None, name="w")._run("t1") is done
    assert runner.tries == 1
