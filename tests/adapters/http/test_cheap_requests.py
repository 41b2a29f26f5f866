"""Cheap requests stay cheap, served as `serve` serves it (bot.wiring.app.http_app) on a real Redis: a
flood of made-up personal tokens costs Redis nothing and takes no pooled connection from real
users, and live console streams are capped per person and in all."""

from __future__ import annotations

import asyncio
import secrets
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack
from pathlib import Path

import httpx
import pytest
from redis.asyncio import Redis

from bot.wiring.app import App
from tests.helpers import eventually

pytestmark = [pytest.mark.redis, pytest.mark.network]

TOKEN = "shared-api-token-cheap"
PEOPLE = """
[people.alice]
email = "alice@example.com"

[people.bob]
email = "bob@example.com"

[people.erin]
email = "erin@example.com"

[environments.production]
protected = true
approvers = ["bob"]
"""
FLOOD = 300  # forged tokens at once: more only measures the kernel's listen backlog (it resets connections)


@pytest.fixture
def settings(settings, tmp_path: Path):
    """alice, bob and erin; one agent run at once, so the Redis pool is its smallest
    (2 * WORKER_CONCURRENCY + 100 connections); at most 2 live streams a person, 3 in all."""
    config = tmp_path / "deploybot.toml"
    config.write_text(PEOPLE)
    return settings.model_copy(update={
        "deploybot_config": config, "api_token": TOKEN, "data_dir": tmp_path / "data", "worker_concurrency": 1,
        "console_streams_per_person": 2, "console_streams": 3,
    })


@pytest.fixture
async def bare(api: httpx.AsyncClient) -> AsyncIterator[httpx.AsyncClient]:
    """A client of the same server without the shared token: it brings its own credentials."""
    async with httpx.AsyncClient(base_url=api.base_url, timeout=60) as client:
        yield client


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


async def commands(redis: Redis) -> Counter[str]:
    """Commands the Redis server ran so far, by name (INFO commandstats)."""
    stats = await redis.info("commandstats")
    return Counter({name.removeprefix("cmdstat_"): int(v["calls"]) for name, v in stats.items()})


async def legacy_token(redis: Redis, app: App, person: str) -> str:
    """A token as the version before checksums made and stored it (dbt_<id>_<secret>)."""
    import hashlib

    token_id = secrets.token_hex(8)
    token = f"dbt_{token_id}_{secrets.token_urlsafe(32)}"
    keys = app.credentials.keys
    await redis.hset(keys.api_token(token_id), mapping={
        "hash": hashlib.sha256(token.encode()).hexdigest(), "person": person, "name": "old laptop",
        "created": "2026-11-01T12:00:00+00:00", "last_used": "",
    })
    await redis.sadd(keys.api_tokens(), token_id)
    return token


def forged(i: int, known_ids: list[str]) -> str:
    """Well-formed made-up tokens, of both formats, some under ids that exist."""
    token_id = known_ids[i % len(known_ids)] if i % 2 else secrets.token_hex(8)
    secret = secrets.token_urlsafe(32)
    return f"dbt_{token_id}_{secret}" if i % 4 < 2 else f"dbt_{token_id}_{secret}_{secrets.token_urlsafe(8)}"


async def test_forged_personal_tokens_cost_redis_nothing_and_real_users_are_served(app, bare, redis):
    alice_id, alice = await app.credentials.create("alice", "laptop")
    old = await legacy_token(redis, app, "bob")
    known = [alice_id, old.split("_")[1]]
    # Both formats verify (the first of each also reads what later checks need, once).
    assert (await bare.get("/threads", headers=bearer(alice))).status_code == 200
    assert (await bare.get("/threads", headers=bearer(old))).status_code == 200
    assert (await bare.get("/threads", headers=bearer(forged(0, known)))).status_code == 401

    # Each request on a connection of its own, all at once (a pool of fewer queued them, and
    # under load the queue outlived the test's event loop).
    async with httpx.AsyncClient(base_url=bare.base_url, timeout=120,
                                 limits=httpx.Limits(max_connections=None)) as flood:
        # 1. A real token is looked up (HGETALL, then last_used is set by a script)...
        before = await commands(redis)
        assert (await bare.get("/threads", headers=bearer(alice))).status_code == 200
        assert (await commands(redis) - before)["hgetall"] == 1
        # ...a flood of forged ones alone is not (the worker's own commands go on meanwhile).
        before = await commands(redis)
        answers = await asyncio.gather(*(flood.get("/threads", headers=bearer(forged(i, known)))
                                         for i in range(FLOOD)))
        ran = await commands(redis) - before
        assert Counter(a.status_code for a in answers) == {401: FLOOD}
        assert ran["hgetall"] == ran["hget"] == ran["smembers"] == ran["get"] == 0, ran

        # 2. Another flood while alice works: every one of her requests is served.
        async def alice_works() -> list[int]:
            return [(await bare.get("/threads", headers=bearer(alice))).status_code for _ in range(20)]

        refused, served = await asyncio.gather(
            asyncio.gather(*(flood.get("/threads", headers=bearer(forged(i, known))) for i in range(FLOOD))),
            alice_works(),
        )
    assert Counter(a.status_code for a in refused) == {401: FLOOD}
    assert served == [200] * 20


async def test_live_streams_are_capped_per_person_and_in_all(app, bare):
    tokens = {p: (await app.credentials.create(p, "laptop"))[1] for p in ("alice", "bob", "erin")}

    async with AsyncExitStack() as held:

        async def stream(person: str) -> httpx.Response:
            """A live stream, held open until the test ends (or closed by the caller)."""
            return await held.enter_async_context(
                bare.stream("GET", "/console/changes?watch=board", headers=bearer(tokens[person])))

        first, second = await stream("alice"), await stream("alice")
        assert first.status_code == second.status_code == 200
        assert first.headers["content-type"].startswith("text/event-stream")
        third = await stream("alice")  # a third of hers: over her 2
        assert third.status_code == 429
        assert "2 live streams open already" in (await third.aread()).decode()
        assert (await stream("bob")).status_code == 200  # bob's first: 3 in all
        over = await stream("erin")  # erin has none, but the server has its 3
        assert over.status_code == 429
        assert "3 live streams open already" in (await over.aread()).decode()

        # A stream that ends gives its slot back: alice closes a tab, erin gets in.
        await first.aclose()

        async def erin_gets_in() -> bool:
            async with bare.stream("GET", "/console/changes?watch=board", headers=bearer(tokens["erin"])) as answer:
                return answer.status_code == 200

        assert await eventually(erin_gets_in, within=30, every=0.2)
