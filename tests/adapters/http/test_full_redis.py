"""A full Redis (maxmemory reached, noeviction) is an outage like a lost one: a launch answers
503 with Retry-After and stores nothing, /healthz says it is full; once there is room again,
everything answers as before."""

from __future__ import annotations

import pytest

from bot.adapters.http.api.errors import FULL

pytestmark = [pytest.mark.redis, pytest.mark.network]


async def test_a_full_redis_answers_503_and_stores_nothing_then_recovers(api, redis):
    before = await redis.dbsize()
    async with full_redis(redis):
        for body, headers in (({"message": "list tags"}, {}),  # the fast launch
                              ({"message": "list tags"}, {"Idempotency-Key": "k"})):  # the route
            r = await api.post("/threads", json=body, headers=headers)
            assert (r.status_code, r.json()["detail"], r.headers["retry-after"]) == (503, FULL, "5"), r.text
        health = await api.get("/healthz")
        assert health.status_code == 503 and health.json()["redis"].startswith("full")
        assert await redis.dbsize() == before
    assert (await api.get("/healthz")).status_code == 200
    assert (await api.post("/threads", json={"message": "list tags"})).status_code == 201


class full_redis:  # noqa: N801 (reads as a phrase)
    def __init__(self, redis) -> None:
        self.redis = redis

    async def __aenter__(self) -> None:
        await self.redis.config_set("maxmemory", "1")  # below what it holds: every write is refused (OOM)

    async def __aexit__(self, *_: object) -> None:
        await self.redis.config_set("maxmemory", "0")


def test_full_reads_one_server_s_info_or_a_cluster_s():
    from bot.adapters.redis.threads import full

    assert not full({"used_memory": 10, "maxmemory": 0})  # no limit
    assert full({"used_memory": 10, "maxmemory": 10}) and not full({"used_memory": 9, "maxmemory": 10})
    assert full({"a:1": {"used_memory": 5, "maxmemory": 100}, "b:2": {"used_memory": 100, "maxmemory": 100}})
