"""The handoff stream against a real Redis server: at-least-once, reclaim, heartbeats."""

from __future__ import annotations

import pytest

from bot.adapters.redis.work import RedisWorkQueue
from tests.helpers import eventually

pytestmark = pytest.mark.redis


@pytest.fixture
async def queue(redis) -> RedisWorkQueue:
    return RedisWorkQueue(redis)


async def test_work_is_taken_once_and_gone_when_done(queue):
    await queue.push("t1")
    await queue.push("t2")
    first = await queue.take("w1", 10, 100)
    assert [w.thread_id for w in first] == ["t1", "t2"]
    assert await queue.take("w2", 10, 50) == []  # another worker gets nothing twice
    assert await queue.backlog() == 2  # taken is not done
    await queue.done([w.entry for w in first])
    assert await queue.backlog() == 0


async def test_finished_work_is_acknowledged_by_the_next_take(queue, redis):
    """Issue 29: the acknowledgement rides with the next read, one round trip for both; what
    was taken with it is not acknowledged, and a dead worker's finished entries were never
    acknowledged, so they are reclaimed (and find their thread already run)."""
    await queue.push("t1")
    [first] = await queue.take("w1", 10, 100)
    await queue.push("t2")
    [second] = await queue.take("w1", 10, 100, done=[first.entry])
    assert second.thread_id == "t2"
    assert await queue.backlog() == 1  # t1 acknowledged and deleted, t2 taken but not done
    pending = await redis.xpending_range(queue.stream, "workers", "-", "+", 10)
    assert [p["message_id"].decode() for p in pending] == [second.entry]
    assert await queue.take("w1", 10, 50, done=[second.entry]) == []  # nothing new: acknowledged anyway
    assert await queue.backlog() == 0


async def test_work_pushed_before_any_worker_exists_is_not_skipped(queue):
    await queue.push("early")  # creates the stream, not the group
    assert [w.thread_id for w in await queue.take("w1", 10, 100)] == ["early"]


async def test_a_dead_workers_work_is_reclaimed_after_the_idle_time(queue):
    await queue.push("t1")
    [taken] = await queue.take("dead", 1, 100)
    assert await queue.reclaim("alive", 200, 10) == []  # too fresh: its worker may be alive
    [reclaimed] = await eventually(lambda: queue.reclaim("alive", 200, 10), message="never idle for 200 ms")
    assert reclaimed == taken
    await queue.done([reclaimed.entry])
    assert await queue.backlog() == 0


async def test_kept_work_is_not_reclaimed(queue):
    await queue.push("t1")
    await queue.push("t2")
    kept, left = await queue.take("slow", 2, 100)

    async def reclaimed_while_one_is_kept() -> list:
        await queue.keep("slow", [kept.entry])
        return await queue.reclaim("other", 200, 10)

    # Until the entry left alone is idle long enough to be reclaimed, the kept one is kept:
    # only the one left alone goes to another worker.
    reclaimed = await eventually(reclaimed_while_one_is_kept, every=0.05, message="never idle for 200 ms")
    assert [w.thread_id for w in reclaimed] == [left.thread_id] == ["t2"]


async def test_reclaim_walks_the_whole_pending_list(queue):
    for i in range(25):
        await queue.push(f"t{i}")
    await queue.take("dead", 25, 100)
    seen = [w.thread_id for w in await eventually(lambda: queue.reclaim("alive", 10, 10))]  # idle 10 ms
    for _ in range(9):
        seen += [w.thread_id for w in await queue.reclaim("alive", 10, 10)]
    assert sorted(set(seen)) == sorted(f"t{i}" for i in range(25))


async def test_a_flushed_server_gets_its_group_back(queue, redis):
    await queue.push("t1")
    await queue.take("w1", 1, 50)
    await redis.flushdb()  # a server restarted without persistence
    await queue.push("t2")
    assert [w.thread_id for w in await queue.take("w1", 10, 100)] == ["t2"]
    assert [w.thread_id for w in await queue.reclaim("w1", 0, 10)] == ["t2"]  # t1 went with the flush


# --- retention: dead workers' consumers, lost work ----------------------------------------------


async def test_dead_workers_are_forgotten_once_they_hold_nothing(queue, redis):
    assert await queue.drop_dead(100) == []  # no group yet
    await queue.push("t1")
    await queue.take("dead-idle", 10, 50)  # took t1 and died holding it
    await queue.take("dead-empty", 10, 50)  # took nothing, died
    await eventually(lambda: queue.drop_dead(200, dry_run=True), message="never idle for 200 ms")
    await queue.take("alive", 10, 50)
    assert await queue.drop_dead(200, dry_run=True) == ["dead-empty"]
    assert await queue.drop_dead(200) == ["dead-empty"]
    names = {c["name"] for c in await redis.xinfo_consumers(queue.stream, "workers")}
    assert names == {b"dead-idle", b"alive"}
    [work] = await queue.reclaim("alive", 100, 10)  # its work goes to a live worker first
    await queue.done([work.entry])
    await queue.take("alive", 10, 50)
    assert await queue.drop_dead(200) == ["dead-idle"]  # idle for long, and now holding nothing


async def test_lost_work_older_than_the_limit_is_trimmed(queue):
    await queue.push("old-1")
    await queue.push("old-2")

    async def both_old() -> bool:
        return await queue.trim(150, dry_run=True) == 2

    await eventually(both_old, message="never 150 ms old")
    await queue.push("new")
    assert await queue.trim(150, dry_run=True) == 2
    assert await queue.backlog() == 3
    assert await queue.trim(150) == 2
    assert [w.thread_id for w in await queue.take("w", 10, 50)] == ["new"]
