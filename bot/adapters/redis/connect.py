"""The one place a Redis client is made: a single server, Sentinel or Cluster, from a
`RedisTarget` (bot/core/redis_target.py: built by bot/config/settings.py from REDIS_URL,
REDIS_SENTINELS, REDIS_CLUSTER...).

Every mode gets the same retry policy: a command whose connection broke (a restart, a
failover) is resent for about 3 s; the stores recognise their own first send. Through
Sentinel, a reconnect asks the Sentinels where the master is now, so the same resends carry
a command over to the promoted replica.

With the cluster client, every script and transaction the stores run touches keys of one
slot (per-thread keys share the hash tag `{id}`; see bot/adapters/redis/keys.py), so nothing here
differs by mode but the client itself. The cluster client is typed as `Redis`: it answers
every command the stores use (the contract tests run them against a real cluster), and the
stores need no union type for it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, cast

from redis.asyncio import Redis
from redis.asyncio.cluster import RedisCluster
from redis.asyncio.retry import Retry
from redis.asyncio.sentinel import Sentinel, SentinelManagedConnection
from redis.backoff import ExponentialWithJitterBackoff, NoBackoff
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from bot.core.redis_target import RedisTarget


def _retry() -> dict[str, Any]:
    return {
        "retry": Retry(ExponentialWithJitterBackoff(base=0.05, cap=1.0), 6),
        "retry_on_error": [RedisConnectionError, RedisTimeoutError],
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


class SentinelRedis(Redis):
    """The master's client through Sentinel; closing it also closes its Sentinel clients."""

    async def aclose(self, close_connection_pool: bool | None = None) -> None:
        await super().aclose(close_connection_pool)
        manager = getattr(self.connection_pool, "sentinel_manager", None)
        if manager is not None:
            await manager.aclose()


def client(target: RedisTarget, max_connections: int = 100) -> Redis:
    """A client for `target`. Nothing else in deploybot builds one."""
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
            max_connections=max_connections, **password, **_retry(),
        )
        return sentinel.master_for(target.master, redis_class=SentinelRedis, connection_class=MasterConnection)
    assert target.url, "single and cluster targets have a URL by now"
    if target.mode == "cluster":
        return cast(Redis, RedisCluster.from_url(target.url, max_connections=max_connections, **password, **_retry()))
    return Redis.from_url(target.url, max_connections=max_connections, **password, **_retry())


def server_time(redis: Redis) -> Callable[[], Awaitable[float]]:
    """Redis's own clock (TIME), in seconds since the epoch: the one clock every process of
    deploybot shares (bot/runtime/skew.py measures this process's against it)."""

    async def now() -> float:
        seconds, micros = await redis.time()
        return seconds + micros / 1_000_000

    return now
