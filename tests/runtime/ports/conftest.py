"""One backend per run of each contract test: the in-memory fakes (bot/testing/memory/)
and the Redis adapters against a real server, and against a three-master Redis Cluster
through deploybot's cluster client. The same cases run against all, so a unit test that
passes against a fake means what it would against Redis, and no script or transaction
spans cluster slots."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import pytest

from bot.testing.memory import ManualClock, MemoryEnvironments, MemoryInbox, MemoryLiveOutput, MemoryThreadStore


@dataclass
class Backend:
    name: str
    store: Any  # ThreadStore
    inbox: Any  # Inbox
    environments: Any  # Locks and History
    output: Any  # LiveOutput
    elapse: Callable[[float], Awaitable[None]]  # let this many seconds pass, for TTLs


@pytest.fixture(params=["memory", *(pytest.param(name, marks=pytest.mark.redis) for name in ("redis", "cluster"))])
def backend(request: pytest.FixtureRequest) -> Backend:
    if request.param == "memory":
        clock = ManualClock()

        async def advance(seconds: float) -> None:
            clock.advance(seconds)

        return Backend(
            "memory", MemoryThreadStore(clock), MemoryInbox(clock), MemoryEnvironments(clock), MemoryLiveOutput(),
            advance,
        )

    from bot.adapters.redis.environments import RedisEnvironments
    from bot.adapters.redis.inbox import RedisInbox
    from bot.adapters.redis.live_output import RedisLiveOutput
    from bot.adapters.redis.threads import RedisThreadStore

    # A real server, or the cluster's client; flushed for this test.
    redis = request.getfixturevalue("redis" if request.param == "redis" else "redis_cluster")
    return Backend(
        request.param, RedisThreadStore(redis), RedisInbox(redis), RedisEnvironments(redis), RedisLiveOutput(redis),
        asyncio.sleep,
    )


@pytest.fixture
def store(backend: Backend) -> Any:
    return backend.store


@pytest.fixture
def inbox(backend: Backend) -> Any:
    return backend.inbox


@pytest.fixture
def environments(backend: Backend) -> Any:
    return backend.environments
