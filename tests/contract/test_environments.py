"""Locks and History: the same cases against MemoryEnvironments and RedisEnvironments."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

from bot.ports import DeployRecord, Lock

SINCE = datetime(2026, 11, 5, 9, 30, tzinfo=UTC)
TTL_MS = 300  # Redis variants sleep through TTLs: margins of 40% absorb a busy machine


def lock(owner: str, env: str = "production", reason: str = "deploying backend v1.2.3") -> Lock:
    return Lock(env, owner, reason, SINCE)


def record(n: int, env: str = "production", ok: bool = True, **kw) -> DeployRecord:
    return DeployRecord(env, "backend", f"v1.2.{n}", f"{n:040x}", ok, SINCE + timedelta(minutes=n),
                        kw.get("approved_by"), f"thread-{n}", f"thread-{n}-step", kw.get("url", ""))


# --- Locks ---------------------------------------------------------------------------


async def test_one_holder_at_a_time_and_the_holder_is_named(environments):
    assert await environments.holder("production") is None
    assert await environments.acquire(lock("d1"), TTL_MS) is None
    assert await environments.acquire(lock("d2", reason="other"), TTL_MS) == lock("d1")
    assert await environments.holder("production") == lock("d1")
    assert await environments.acquire(lock("d1"), TTL_MS) is None  # its owner has it already
    assert await environments.acquire(lock("d2", env="staging"), TTL_MS) is None  # per environment


async def test_only_the_owner_renews_or_releases(environments):
    await environments.acquire(lock("d1"), TTL_MS)
    assert not await environments.renew("production", "d2", TTL_MS)
    assert not await environments.release("production", "d2")
    assert await environments.holder("production") == lock("d1")
    assert await environments.renew("production", "d1", TTL_MS)
    assert await environments.release("production", "d1")
    assert await environments.holder("production") is None
    assert not await environments.release("production", "d1")  # gone already
    assert not await environments.renew("production", "d1", TTL_MS)


async def test_release_without_an_owner_lifts_whoever_holds_it(environments):
    await environments.acquire(lock("manual:alice"), None)
    assert await environments.release("production", None)
    assert await environments.holder("production") is None
    assert not await environments.release("production", None)


async def test_a_dead_holders_lock_expires(environments, backend):
    await environments.acquire(lock("d1"), TTL_MS)
    await backend.elapse(TTL_MS * 1.5 / 1000)
    assert await environments.holder("production") is None
    assert await environments.acquire(lock("d2"), TTL_MS) is None


async def test_renewing_keeps_the_lock(environments, backend):
    await environments.acquire(lock("d1"), TTL_MS)
    await backend.elapse(TTL_MS * 0.6 / 1000)
    assert await environments.renew("production", "d1", TTL_MS)
    await backend.elapse(TTL_MS * 0.6 / 1000)
    assert await environments.holder("production") == lock("d1")


async def test_taking_its_own_lock_again_extends_it(environments, backend):
    await environments.acquire(lock("d1"), TTL_MS)
    await backend.elapse(TTL_MS * 0.6 / 1000)
    assert await environments.acquire(lock("d1"), TTL_MS) is None
    await backend.elapse(TTL_MS * 0.6 / 1000)
    assert await environments.acquire(lock("d2"), TTL_MS) == lock("d1")


async def test_manual_locks_do_not_expire(environments, backend):
    assert await environments.acquire(lock("manual:alice", reason="freeze"), None) is None
    await backend.elapse(TTL_MS * 1.5 / 1000)
    assert await environments.holder("production") == lock("manual:alice", reason="freeze")
    assert await environments.acquire(lock("d1"), TTL_MS) == lock("manual:alice", reason="freeze")


async def test_racing_deploys_get_one_lock(environments):
    results = await asyncio.gather(*(environments.acquire(lock(f"d{i}"), TTL_MS) for i in range(10)))
    assert results.count(None) == 1
    winner = await environments.holder("production")
    assert all(r == winner for r in results if r is not None)


# --- History -------------------------------------------------------------------------


async def test_history_is_newest_first_per_environment(environments):
    for n in range(1, 4):
        await environments.record(record(n))
    await environments.record(record(9, env="staging", ok=False, approved_by="bob", url="https://ci/9"))
    assert await environments.recent("production", 10) == [record(3), record(2), record(1)]
    assert await environments.recent("production", 2) == [record(3), record(2)]
    assert await environments.recent("staging", 10) == [
        record(9, env="staging", ok=False, approved_by="bob", url="https://ci/9")]
    assert await environments.recent("development", 10) == []


async def test_history_keeps_the_newest_200(environments):
    for n in range(205):
        await environments.record(record(n))
    kept = await environments.recent("production", 1000)
    assert len(kept) == 200 and kept[0] == record(204) and kept[-1] == record(5)
