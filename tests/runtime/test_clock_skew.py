"""A process's clock against Redis's TIME: measured with injected clocks, and a worker whose
clock is off runs no timed work (no runs, no chores) until it agrees again."""

from __future__ import annotations

import asyncio
import logging

from bot.core import wording
from bot.runtime.ports import Work
from bot.runtime.skew import MAX_SKEW, ClockCheck
from bot.runtime.worker import Worker


def server_at(seconds: float):
    async def server() -> float:
        return seconds

    return server


async def test_an_offset_within_the_bound_is_ok_and_beyond_it_is_named(caplog):
    now = [1_000.0]
    check = ClockCheck(server_at(1_000.0), local=lambda: now[0])
    assert not check.ok and check.problem() is None  # unchecked: not trusted yet, nothing to say
    assert await check.check() == 0.0 and check.ok
    now[0] = 1_000.0 + MAX_SKEW  # on the bound: still ok
    await check.check()
    assert check.ok
    now[0] = 1_300.0
    with caplog.at_level(logging.ERROR):
        assert await check.check() == 300.0
    assert not check.ok
    assert check.problem() == wording.clock_skewed(300.0, MAX_SKEW)
    assert "300.0 s ahead of Redis's" in caplog.text
    now[0] = 700.0
    await check.check()
    assert "300.0 s behind Redis's" in str(check.problem())


async def test_the_offset_is_taken_against_the_middle_of_the_round_trip():
    ticks = iter([10.0, 12.0])  # the local clock before and after the store answered
    check = ClockCheck(server_at(11.0), local=lambda: next(ticks))
    assert await check.check() == 0.0


class OneThread:
    """A queue holding one thread's work, saying whether anyone took it."""

    def __init__(self) -> None:
        self.taken = asyncio.Event()

    async def reclaim(self, consumer, min_idle_ms, count):
        return []

    async def take(self, consumer, count, block_ms, done=()):
        if self.taken.is_set():
            await asyncio.sleep(block_ms / 1000)
            return []
        self.taken.set()
        return [Work("e1", "t1")]

    async def keep(self, consumer, entries):
        pass

    async def done(self, entries):
        pass

    async def turn(self, chore, seconds):
        return False


class Runs:
    transient = (ConnectionError,)

    def __init__(self) -> None:
        self.ran: list[str] = []
        self.finished = asyncio.Event()

    async def run(self, thread_id: str):
        self.ran.append(thread_id)
        self.finished.set()
        return object()


async def test_a_worker_whose_clock_is_off_takes_no_work_and_runs_no_chores_until_it_agrees():
    local = [1_300.0]
    check = ClockCheck(server_at(1_000.0), local=lambda: local[0])
    chores: list[str] = []
    fired = asyncio.Event()

    async def chore() -> None:
        chores.append("fired")
        fired.set()

    queue, runner = OneThread(), Runs()
    worker = Worker(runner, queue, None, name="w", chores=((0.01, chore),), clock=check, clock_every=0.01)
    worker.start()
    try:
        await asyncio.sleep(0.2)
        assert check.skew == 300.0
        assert not queue.taken.is_set() and runner.ran == [] and chores == []
        local[0] = 1_000.5  # the clock fixed: within the bound
        await asyncio.wait_for(queue.taken.wait(), 5)
        await asyncio.wait_for(asyncio.gather(runner.finished.wait(), fired.wait()), 5)
        assert runner.ran == ["t1"]
    finally:
        await worker.stop(grace=1)
