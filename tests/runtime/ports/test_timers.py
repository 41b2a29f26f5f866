"""Timers and deploy queues: the same cases against the in-memory fakes and Redis."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from bot.testing.memory import MemoryDeployQueue, MemoryTimers

T0 = datetime(2026, 11, 25, 12, 0, tzinfo=UTC)


@pytest.fixture(params=["memory", pytest.param("redis", marks=pytest.mark.redis)])
def parts(request):
    if request.param == "memory":
        return MemoryTimers(), MemoryDeployQueue()
    from bot.adapters.redis.timers import RedisDeployQueue, RedisTimers

    redis = request.getfixturevalue("redis")
    return RedisTimers(redis), RedisDeployQueue(redis)


async def test_what_is_due_is_taken_once_until_its_lease_lapses(parts):
    timers, _ = parts
    await timers.set("t1", T0)
    await timers.set("t2", T0 + timedelta(seconds=5))
    await timers.set("t3", T0 - timedelta(seconds=5))
    assert await timers.due(T0, lease_ms=30_000, limit=10) == ["t3", "t1"]  # the most overdue first
    assert await timers.due(T0 + timedelta(seconds=1), lease_ms=30_000, limit=10) == []  # leased
    assert await timers.due(T0 + timedelta(seconds=6), lease_ms=30_000, limit=10) == ["t2"]
    # t1 was taken but never run (its worker died): due again when the lease lapses
    assert set(await timers.due(T0 + timedelta(seconds=31), lease_ms=30_000, limit=10)) == {"t1", "t3"}


async def test_a_run_sets_the_next_due_time_or_clears_it(parts):
    timers, _ = parts
    await timers.set("t1", T0)
    assert await timers.due(T0, 1000, 10) == ["t1"]
    await timers.set("t1", T0 + timedelta(minutes=15))  # the run says: next reminder then
    assert await timers.due(T0 + timedelta(minutes=14), 1000, 10) == []
    await timers.set("t1", None)  # decided: nothing due
    assert await timers.due(T0 + timedelta(days=1), 1000, 10) == []
    await timers.set("nobody", None)  # clearing what was never set is fine


async def test_limit(parts):
    timers, _ = parts
    for n in range(5):
        await timers.set(f"t{n}", T0 + timedelta(seconds=n))
    assert await timers.due(T0 + timedelta(seconds=10), 1000, 2) == ["t0", "t1"]
    assert await timers.due(T0 + timedelta(seconds=10), 1000, 10) == ["t2", "t3", "t4"]


async def test_first_come_first_served_per_service_and_environment(parts):
    _, queue = parts
    assert await queue.first("production", "api") is None
    assert await queue.join("production", "api", "d1", T0) == 1
    assert await queue.join("production", "api", "d2", T0 + timedelta(seconds=1)) == 2
    assert await queue.join("production", "web", "w1", T0 + timedelta(seconds=2)) == 1  # its own line
    assert await queue.join("production", "api", "d1", T0 + timedelta(seconds=9)) == 1  # keeps its place
    assert await queue.first("production", "api") == "d1"
    await queue.leave("production", "api", "d1")
    assert await queue.first("production", "api") == "d2"
    assert await queue.join("production", "api", "d3", T0 + timedelta(seconds=3)) == 2
    await queue.leave("production", "api", "nobody")
    assert await queue.first("staging", "api") is None
