"""Renewal: a lease or lock renewed at a third of its TTL for as long as its holder works,
with no task at all for work that ends before the first renewal is due."""

from __future__ import annotations

import asyncio

from bot.runtime.deploying import Renewal
from tests.helpers import eventually

TTL_MS = 300  # first renewal due after 100 ms


def renewing_tasks() -> list[asyncio.Task]:
    return [t for t in asyncio.all_tasks() if "keep_renewing" in repr(t.get_coro()) and not t.done()]


async def test_long_work_is_renewed_again_and_again_until_it_ends():
    calls: list[float] = []

    async def renew() -> bool:
        calls.append(asyncio.get_running_loop().time())
        return True

    renewal = Renewal(renew, TTL_MS, "a lease")
    await eventually(lambda: len(calls) >= 3, within=10, message="renewed fewer than three times")
    renewal.cancel()
    await asyncio.sleep(0)
    assert renewing_tasks() == []
    seen = len(calls)
    await asyncio.sleep(TTL_MS / 1000)
    assert len(calls) == seen  # nothing after the end


async def test_short_work_makes_no_task_and_renews_nothing():
    calls: list[int] = []

    async def renew() -> bool:
        calls.append(1)
        return True

    renewal = Renewal(renew, TTL_MS, "a lease")
    assert renewing_tasks() == []
    renewal.cancel()
    await asyncio.sleep(TTL_MS / 1000)
    assert calls == [] and renewing_tasks() == []


async def test_a_failed_renewal_does_not_end_the_renewals(caplog):
    outcomes = iter([ConnectionError("redis restarting"), False, True, True, True])
    calls: list[int] = []

    async def renew() -> bool:
        calls.append(1)
        outcome = next(outcomes)
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    renewal = Renewal(renew, TTL_MS, "the lease on thread t1")
    await eventually(lambda: len(calls) >= 3, within=10, message="renewals stopped after a failure")
    renewal.cancel()
    assert "renewing the lease on thread t1 failed" in caplog.text
    assert "lost the lease on thread t1 to someone else" in caplog.text
