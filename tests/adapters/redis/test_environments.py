"""Environment locks and deploy history against a real Redis server."""

from __future__ import annotations

import asyncio
import json

import pytest

from bot.adapters.redis.environments import RedisEnvironments
from bot.runtime.clock import utcnow
from bot.runtime.ports import DeployRecord, Lock
from tests.helpers import eventually

pytestmark = pytest.mark.redis


@pytest.fixture
def envs(redis) -> RedisEnvironments:
    return RedisEnvironments(redis)


def lock(owner: str, env: str = "production") -> Lock:
    return Lock(env, owner, f"held by {owner}", utcnow().replace(microsecond=0))


async def test_one_holder_at_a_time_and_the_holder_is_named(envs):
    results = await asyncio.gather(*(envs.acquire(lock(f"t{i}"), 10_000) for i in range(10)))
    winners = [i for i, r in enumerate(results) if r is None]
    assert len(winners) == 1
    holder = await envs.holder("production")
    assert holder.owner == f"t{winners[0]}" and all(r == holder for r in results if r is not None)
    assert await envs.acquire(lock(holder.owner), 10_000) is None  # re-entrant for its owner


async def test_only_the_owner_renews_or_releases(envs, redis):
    await envs.acquire(lock("t1"), 1_000)
    assert not await envs.renew("production", "t2", 60_000)
    assert await envs.renew("production", "t1", 60_000)
    assert await redis.pttl(envs.keys.lock("production")) > 1_000
    assert not await envs.release("production", "t2")
    assert await envs.release("production", "t1")
    assert await envs.holder("production") is None


async def test_a_dead_holders_lock_expires(envs):
    await envs.acquire(lock("t1"), 50)

    async def expired() -> bool:
        return await envs.holder("production") is None

    await eventually(expired, message="the dead holder's lock never expired")
    assert await envs.acquire(lock("t2"), 1_000) is None


async def test_manual_locks_do_not_expire_and_force_release(envs, redis):
    await envs.acquire(lock("manual:alice"), None)
    assert await redis.pttl(envs.keys.lock("production")) == -1
    assert await envs.release("production", None)


async def test_history_is_newest_first_per_environment(envs):
    for i in range(3):
        await envs.record(DeployRecord("production", "backend", f"v{i}", "abc", True, utcnow(), "bob", "t", f"d{i}"))
    await envs.record(DeployRecord("staging", "backend", "v9", "abc", True, utcnow(), None, "t", "d9"))
    assert [r.tag for r in await envs.recent("production", 10)] == ["v2", "v1", "v0"]
    assert [r.tag for r in await envs.recent("staging", 10)] == ["v9"]


async def test_a_holder_letting_go_while_we_look_is_tried_again(envs, redis, monkeypatch):
    await envs.acquire(lock("t1"), 10_000)
    real_get, gets = redis.get, []

    async def let_go_first(key):
        gets.append(key)
        if len(gets) == 1:  # t1 releases between our SET NX and our GET
            await redis.delete(key)
            return None
        return await real_get(key)

    monkeypatch.setattr(redis, "get", let_go_first)
    assert await envs.acquire(lock("t2"), 10_000) is None
    assert len(gets) == 1
    monkeypatch.undo()
    assert (await envs.holder("production")).owner == "t2"


async def test_a_lock_that_keeps_vanishing_is_given_up_after_three_tries(envs, redis, monkeypatch):
    await envs.acquire(lock("t1"), 10_000)
    gets = []

    async def always_gone(key):
        gets.append(key)
        return None

    monkeypatch.setattr(redis, "get", always_gone)
    with pytest.raises(RuntimeError, match="could not read or take the lock on production"):
        await envs.acquire(lock("t2"), 10_000)
    assert len(gets) == 3


async def test_a_record_stored_before_the_verdict_fields_loads_and_takes_its_verdict(envs, redis):
    """A record as an older deploybot wrote it (no audit trail, no verification fields), with a
    verification skipped since: it loads, with what the marks say."""
    old = {"environment": "production", "service": "backend", "tag": "v1.2.3", "commit": "c" * 40, "ok": True,
           "at": "2026-11-01T10:00:00+00:00", "approved_by": "alice", "thread_id": "t1", "deploy_id": "d1"}
    await redis.lpush(envs.keys.history("production"), json.dumps(old))
    [loaded] = await envs.recent("production", 5)
    assert (loaded.deploy_id, loaded.verified_at, loaded.verification_skipped_by, loaded.requested_by) == (
        "d1", None, "", "")
    at = utcnow()
    await envs.mark_skipped("production", "d1", at, "alice", "checked by hand")
    [loaded] = await envs.recent("production", 5)
    assert (loaded.verification_skipped_at, loaded.verification_skipped_by, loaded.verification_skip_reason) == (
        at, "alice", "checked by hand")
