"""A Redis that may evict is refused at start: `serve` and `worker` read maxmemory-policy on a
real server (and every primary of a real cluster) and stop with the setting named and what it
would delete; noeviction starts as before."""

from __future__ import annotations

import asyncio
import subprocess
import sys

import pytest

from bot.adapters.redis import eviction
from bot.testing.cluster import clean_env

pytestmark = [pytest.mark.redis, pytest.mark.processes, pytest.mark.network]


@pytest.fixture
async def evicting(redis):
    await redis.config_set("maxmemory-policy", "allkeys-lru")
    yield redis
    await redis.config_set("maxmemory-policy", "noeviction")


async def test_each_evicting_policy_is_a_problem_naming_what_it_deletes(redis):
    assert await eviction.problem(redis) == (None, None)  # noeviction, the default
    for policy, deletes in (("allkeys-lru", "threads, locks and leases"), ("volatile-ttl", "two deploys")):
        await redis.config_set("maxmemory-policy", policy)
        try:
            problem, warning = await eviction.problem(redis)
        finally:
            await redis.config_set("maxmemory-policy", "noeviction")
        assert problem is not None and f"maxmemory-policy is {policy}" in problem and deletes in problem
        assert "noeviction" in problem and warning is None


async def test_one_evicting_primary_of_a_cluster_is_a_problem(redis_cluster):
    assert await eviction.problem(redis_cluster) == (None, None)
    [node] = redis_cluster.get_primaries()[:1]
    await redis_cluster.config_set("maxmemory-policy", "allkeys-random", target_nodes=node)
    try:
        problem, _ = await eviction.problem(redis_cluster)
    finally:
        await redis_cluster.config_set("maxmemory-policy", "noeviction", target_nodes=node)
    assert problem is not None and "allkeys-random" in problem


async def test_a_worker_does_not_start_on_an_evicting_redis(evicting, redis_url, tmp_path):
    env = clean_env(REDIS_URL=redis_url, DATA_DIR=str(tmp_path / "data"))
    try:
        ran = await asyncio.to_thread(subprocess.run, [sys.executable, "-m", "bot", "worker"], env=env,
                                      capture_output=True, text=True, timeout=30)
    except subprocess.TimeoutExpired as e:
        raise AssertionError(f"the worker started: {e.stderr}") from e
    assert ran.returncode == 2, ran.stderr
    assert "configuration error: Redis's maxmemory-policy is allkeys-lru" in ran.stderr
    assert "Traceback" not in ran.stderr


async def test_a_policy_turned_evicting_while_running_makes_healthz_say_so_and_say_ok_again(api, redis):
    """A Redis restarted or failed over with another configuration is only met after the start:
    /healthz reads the policy each time it is asked."""
    assert (await api.get("/healthz")).status_code == 200
    await redis.config_set("maxmemory-policy", "volatile-lru")
    try:
        answer = await api.get("/healthz")
    finally:
        await redis.config_set("maxmemory-policy", "noeviction")
    assert answer.status_code == 503, answer.text
    assert answer.json()["ok"] is False
    assert answer.json()["redis"].startswith("evicting: Redis's maxmemory-policy is volatile-lru")
    assert (await api.get("/healthz")).json() == {"ok": True, "redis": "ok", "llm": "configured"}
