"""The one place a Redis client is made: a single server, Sentinel or Cluster, from a
`RedisTarget` (bot/core/redis_target.py: built by bot/config/settings.py from REDIS_URL,
REDIS_SENTINELS, REDIS_CLUSTER...).

Every mode gets the same retry policy: a command whose connection broke (a restart, a
failover) is resent for about 3 s; the stores recognise their own first send. Through
Sentinel, a reconnect asks the Sentinels where the master is now, so the same resends carry
a command over to the promoted replica.

Every socket has a timeout (TIMEOUT, CONNECT_TIMEOUT): a partition (packets dropped, no
connection closed) would otherwise hold a command, and the request waiting on it, for as long
as it lasts. A timed-out try is one try of the retry policy, and tries are bounded by a time
budget (BUDGET, `DeadlineRetry`) as well as by a count: counted alone, each try of a
partitioned server costs a whole timeout (redis-py's reconnect has tries of its own inside
each), so a command would fail only after tens of seconds. With the budget, a command fails
within BUDGET plus one try, and the web answers 503 "storage unavailable" well within the
10 s docs/operations.md promises.

With the cluster client, every script and transaction the stores run touches keys of one
slot (per-thread keys share the hash tag `{id}`; see bot/adapters/redis/keys.py), so nothing here
differs by mode but the client itself. The cluster client is typed as `Redis`: it answers
every command the stores use (the contract tests run them against a real cluster), and the
stores need no union type for it.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from typing import Any, TypeVar, cast

from redis.asyncio import Redis
from redis.asyncio.cluster import RedisCluster
from redis.asyncio.connection import BlockingConnectionPool
from redis.asyncio.retry import Retry
from redis.asyncio.sentinel import Sentinel, SentinelConnectionPool, SentinelManagedConnection
from redis.backoff import ExponentialWithJitterBackoff, NoBackoff
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from bot.core.redis_target import RedisTarget

T = TypeVar("T")

# Seconds. TIMEOUT is past every command's own wait (a worker's stream read blocks 0.5 s,
# WAIT for a replica REDIS_WAIT_MS, 0.5 s by default).
TIMEOUT = 2.0  # for any answer of the server, once connected
CONNECT_TIMEOUT = 2.0  # for the TCP connection
BUDGET = 4.0  # no try of a command starts after this much time since its first
POOL_WAIT = 2.0  # a command waits this long for a free connection of a full pool, then fails

# When the command being tried began its tries: the reconnect inside a try retries too, with
# the same Retry, and must spend the command's budget rather than start one of its own.
_began: ContextVar[float | None] = ContextVar("redis_command_began", default=None)


class DeadlineRetry(Retry):
    """redis-py's Retry, but no try starts once `budget` seconds have passed since the
    command's first (nested retries, a reconnect's inside a command's, share that start)."""

    def __init__(self, backoff: Any, retries: int, budget: float) -> None:
        super().__init__(backoff, retries)
        self.budget = budget

    async def call_with_retry(self, do: Callable[[], Awaitable[T]], fail: Callable[..., Any],
                              is_retryable: Callable[[Exception], bool] | None = None,
                              with_failure_count: bool = False) -> T:
        outermost = _began.get() is None
        token = _began.set(time.monotonic()) if outermost else None
        try:
            return await self._tries(do, fail, is_retryable, with_failure_count)
        finally:
            if token is not None:
                _began.reset(token)

    async def _tries(self, do: Callable[[], Awaitable[T]], fail: Callable[..., Any],
                     is_retryable: Callable[[Exception], bool] | None, with_failure_count: bool) -> T:
        """redis-py's loop (redis/asyncio/retry.py), with the budget: `fail` still runs on
        every failure (it disconnects the connection that failed), the last one included."""
        began = _began.get()
        assert began is not None
        self._backoff.reset()
        failures = 0
        while True:
            try:
                return await do()
            except self._supported_errors as error:
                if is_retryable and not is_retryable(error):
                    raise
                failures += 1
                await (fail(error, failures) if with_failure_count else fail(error))
                backoff = self._backoff.compute(failures)
                spent = time.monotonic() - began
                if failures > self._retries >= 0 or spent + backoff >= self.budget:
                    raise error
                if backoff > 0:
                    await asyncio.sleep(backoff)


def _retry(target: RedisTarget) -> dict[str, Any]:
    # A WAIT for a replica is answered after up to REDIS_WAIT_MS: the timeout lets it.
    timeout = max(TIMEOUT, target.wait_ms / 1000 + 1.0)
    return {
        "retry": DeadlineRetry(ExponentialWithJitterBackoff(base=0.05, cap=1.0), 6, BUDGET),
        "retry_on_error": [RedisConnectionError, RedisTimeoutError],
        "socket_timeout": timeout, "socket_connect_timeout": CONNECT_TIMEOUT,
    }


class MasterConnection(SentinelManagedConnection):
    """A connection to the master that asks the Sentinels where the master is on *every*
    connect. redis-py's own reconnects a dropped connection (a retried command) to the
    address it had (redis-py issues #3874, #3560): after a failover that is the old master,
    and if it is back by then (restarted, not yet turned into a replica by the Sentinels)
    it accepts writes that vanish when it becomes a replica. The chaos suite's --sentinel run
    lost threads that way."""

    async def connect_check_health(self, check_health: bool = True, retry_socket_connect: bool = True) -> None:
        if not self.is_connected:
            self.host, self.port = await self.connection_pool.get_master_address()
        # One try per lookup: trying again means asking the Sentinels again (the command's
        # own retry does), never knocking on the same address for seconds.
        await super().connect_check_health(check_health=check_health, retry_socket_connect=False)

    async def _connect_retry(self) -> None:
        if not self.is_connected:  # the address is looked up by connect_check_health
            await self.connect_check_health(check_health=self.connection_pool.check_connection,
                                            retry_socket_connect=False)


class BlockingSentinelPool(SentinelConnectionPool, BlockingConnectionPool):
    """The master's pool through Sentinel, waiting for a free connection when it is full, as
    the one server's does (BlockingConnectionPool): redis-py has no such pool of its own."""


class SentinelRedis(Redis):
    """The master's client through Sentinel; closing it also closes its Sentinel clients."""

    async def aclose(self, close_connection_pool: bool | None = None) -> None:
        await super().aclose(close_connection_pool)
        manager = getattr(self.connection_pool, "sentinel_manager", None)
        if manager is not None:
            await manager.aclose()


def client(target: RedisTarget, max_connections: int = 100) -> Redis:
    """A client for `target`, with at most `max_connections` open at once. Nothing else in
    deploybot builds one. A command finding them all busy waits for one up to POOL_WAIT (then
    fails as a connection error: 503 on the web) instead of failing at once: a burst of
    requests is slowed by a full pool, not refused. (The cluster client has no waiting pool:
    its pools, one per node, fail at once when full.)"""
    # A password in the URL wins over REDIS_PASSWORD (redis-py lets the URL's options win).
    password: dict[str, Any] = {"password": target.password} if target.password else {}
    if target.mode == "sentinel":
        assert target.master and target.sentinels, "a sentinel target names its master and Sentinels"
        sentinel = Sentinel(
            list(target.sentinels),
            # Asking a Sentinel is quick or it is down: then the next one is asked, at once.
            sentinel_kwargs={
                "password": target.sentinel_password, "socket_timeout": 1.0, "socket_connect_timeout": 1.0,
                "retry": Retry(NoBackoff(), 0),
            },
            max_connections=max_connections, **password, **_retry(target),
        )
        return sentinel.master_for(target.master, redis_class=SentinelRedis, connection_class=MasterConnection,
                                   connection_pool_class=BlockingSentinelPool, timeout=POOL_WAIT)
    assert target.url, "single and cluster targets have a URL by now"
    if target.mode == "cluster":
        # The cluster client reads only the count of its Retry (it resends at once, without
        # a backoff, to the node the slots now name): the count is what keeps it in the budget.
        options = {**_retry(target), "retry": DeadlineRetry(NoBackoff(), int(BUDGET // TIMEOUT), BUDGET)}
        return cast(Redis, RedisCluster.from_url(target.url, max_connections=max_connections, **password, **options))
    pool = BlockingConnectionPool.from_url(
        target.url, max_connections=max_connections, timeout=POOL_WAIT, **password, **_retry(target)
    )
    return Redis.from_pool(pool)


def server_time(redis: Redis) -> Callable[[], Awaitable[float]]:
    """Redis's own clock (TIME), in seconds since the epoch: the one clock every process of
    deploybot shares (bot/runtime/skew.py measures this process's against it)."""

    async def now() -> float:
        seconds, micros = await redis.time()
        return seconds + micros / 1_000_000

    return now
