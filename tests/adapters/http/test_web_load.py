"""Many requests at once on one web process (no worker in it), built as `serve --no-worker`
builds it, on a real Redis that is idle otherwise: none is answered 5xx. A full pool of Redis
connections makes a command wait for a free one, rather than fail as "storage unavailable"."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import AsyncIterator

import httpx
import pytest
import uvicorn

from bot.adapters.redis import connect
from bot.config.settings import Settings
from bot.testing.cluster import free_port
from bot.wiring.app import build, http_app, redis_connections
from tests.helpers import eventually

pytestmark = [pytest.mark.redis, pytest.mark.network]

AT_ONCE = 500


@pytest.fixture
async def web(settings: Settings, redis, monkeypatch) -> AsyncIterator[httpx.AsyncClient]:
    # A machine busy with other tests may starve the loop past the 2 s a command waits for a
    # connection: what is tested is that a full pool waits at all (the old one failed at once).
    monkeypatch.setattr(connect, "POOL_WAIT", 30.0)
    app = build(settings, connections=redis_connections(settings, web=True, worker=False))
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(http_app(app, worker=False), host="127.0.0.1", port=port,
                                           log_level="warning", backlog=AT_ONCE * 2))
    task = asyncio.create_task(server.serve())
    await eventually(lambda: server.started, every=0.01, message="uvicorn is not serving")
    limits = httpx.Limits(max_connections=AT_ONCE, max_keepalive_connections=AT_ONCE)
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", limits=limits, timeout=120) as client:
        yield client
    server.should_exit = True
    await task
    await app.close()


async def test_many_requests_at_once_get_no_5xx(web):
    first = await web.post("/threads", json={"message": "list tags", "user": "alice"})
    assert first.status_code == 201, first.text
    thread = first.json()["id"]

    def one(i: int):
        if i % 5 == 0:
            return web.post("/threads", json={"message": f"list tags #{i}", "user": "alice"})
        return web.get(f"/threads/{thread}" if i % 2 else "/threads")

    answers = await asyncio.gather(*(one(i) for i in range(AT_ONCE)))
    statuses = Counter(r.status_code for r in answers)
    assert statuses == {201: AT_ONCE // 5, 200: AT_ONCE - AT_ONCE // 5}, statuses
