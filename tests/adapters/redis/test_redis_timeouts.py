"""Every Redis client deploybot builds (one server, Sentinel, Cluster) has socket and connect
timeouts and a pool that waits when full, and its retries stop on a time budget: counted
alone, each try of a partitioned server costs a whole timeout. Nothing here connects: the
clients are looked at as built, and the budget is run on a clock the test moves."""

from __future__ import annotations

import pytest
from redis.asyncio.connection import BlockingConnectionPool
from redis.exceptions import TimeoutError as RedisTimeoutError

from bot.adapters.redis import connect
from bot.core.redis_target import RedisTarget

TARGETS = {
    "single": RedisTarget("single", url="redis://127.0.0.1:1/0"),
    "sentinel": RedisTarget("sentinel", sentinels=(("127.0.0.1", 1),), master="main"),
}


@pytest.mark.parametrize("mode", sorted(TARGETS))
def test_a_client_has_timeouts_a_waiting_pool_and_a_budget(mode):
    client = connect.client(TARGETS[mode], max_connections=7)
    pool = client.connection_pool
    options = pool.connection_kwargs
    assert options["socket_timeout"] and options["socket_connect_timeout"]
    assert isinstance(pool, BlockingConnectionPool) and pool.max_connections == 7
    assert isinstance(options["retry"], connect.DeadlineRetry)


def test_a_cluster_client_has_timeouts_and_a_budget():
    client = connect.client(RedisTarget("cluster", url="redis://127.0.0.1:1/0"))
    options = client.connection_kwargs  # type: ignore[attr-defined]  (the cluster client's own)
    assert options["socket_timeout"] and options["socket_connect_timeout"]
    assert isinstance(client.retry, connect.DeadlineRetry)  # type: ignore[attr-defined]


async def test_tries_stop_when_the_budget_is_spent_not_only_at_the_count(monkeypatch):
    now = [0.0]
    monkeypatch.setattr(connect.time, "monotonic", lambda: now[0])
    retry = connect.DeadlineRetry(connect.NoBackoff(), 100, budget=connect.BUDGET)
    tries: list[float] = []
    failures: list[Exception] = []

    async def timed_out() -> None:  # a partitioned server: each try costs a whole timeout
        tries.append(now[0])
        now[0] += connect.TIMEOUT
        raise RedisTimeoutError("Timeout reading from socket")

    async def disconnect(error: Exception) -> None:
        failures.append(error)

    with pytest.raises(RedisTimeoutError):
        await retry.call_with_retry(timed_out, disconnect)
    assert all(t < connect.BUDGET for t in tries) and len(tries) == int(connect.BUDGET // connect.TIMEOUT)
    assert len(failures) == len(tries)  # each failed connection was let go, the last one too

    # a reconnect's tries inside a command's spend the command's budget, not one of their own
    tries.clear()

    async def reconnecting() -> None:
        await retry.call_with_retry(timed_out, disconnect)

    now[0] = 0.0
    with pytest.raises(RedisTimeoutError):
        await retry.call_with_retry(reconnecting, disconnect)
    assert all(t < connect.BUDGET for t in tries)
