"""The Redis adapters' own tests run twice: against one server and against a three-master
Redis Cluster through deploybot's cluster client, so a script or transaction whose keys
span slots fails here (CROSSSLOT) before it fails in production."""

from __future__ import annotations

import pytest
from redis.asyncio import Redis


@pytest.fixture(params=["single", "cluster"])
def redis(request: pytest.FixtureRequest, redis: Redis) -> Redis:
    """The one server (tests/conftest.py's `redis`), or the cluster's client."""
    return redis if request.param == "single" else request.getfixturevalue("redis_cluster")
