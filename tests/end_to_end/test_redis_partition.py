"""A partition between the web and Redis (a real TCP proxy that holds the connections open
and forwards nothing): requests answer 503 "storage unavailable" with Retry-After within the
promised 10 s, while the partition lasts, and work again once it heals, without a restart.
The proxy itself (bot/testing/fault_proxy.py) is checked here too, on the same real Redis."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import AsyncIterator
from urllib.parse import urlsplit

import httpx
import pytest
import uvicorn
from redis.asyncio import Redis
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff

from bot.config.settings import Settings
from bot.testing.cluster import free_port
from bot.testing.fault_proxy import FaultProxy
from bot.wiring.app import build, http_app
from tests.helpers import eventually

pytestmark = [pytest.mark.redis, pytest.mark.network]

PROMISE = 10.0  # seconds: docs/operations.md, a partition answers 503 within this


@pytest.fixture
async def proxy(redis_url: str, redis: Redis) -> AsyncIterator[FaultProxy]:
    where = urlsplit(redis_url)
    proxy = await FaultProxy(where.hostname or "127.0.0.1", where.port or 6379).start()
    yield proxy
    await proxy.stop()


@pytest.fixture
async def web(settings: Settings, proxy: FaultProxy) -> AsyncIterator[httpx.AsyncClient]:
    """The web (no worker in it), its Redis behind the proxy, served by uvicorn."""
    behind = settings.model_copy(update={"redis_url": f"redis://127.0.0.1:{proxy.port}/0"})
    app = build(behind)
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(http_app(app, worker=False), host="127.0.0.1", port=port,
                                           log_level="warning"))
    task = asyncio.create_task(server.serve())
    await eventually(lambda: server.started, every=0.01, message="uvicorn is not serving")
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=20) as client:
        yield client
    proxy.heal()
    server.should_exit = True
    await task
    await app.close()


async def _answers(web: httpx.AsyncClient) -> tuple[httpx.Response, httpx.Response]:
    return await asyncio.gather(
        web.get("/threads"), web.post("/threads", json={"message": "list tags", "user": "alice"}),
    )


async def test_a_partition_answers_503_within_the_promise_and_heals_without_a_restart(web, proxy):
    listed, launched = await _answers(web)
    assert (listed.status_code, launched.status_code) == (200, 201), (listed.text, launched.text)

    proxy.blackhole()
    began = time.monotonic()
    listed, launched = await _answers(web)
    answered_within = time.monotonic() - began
    assert [r.status_code for r in (listed, launched)] == [503, 503], (listed.text, launched.text)
    for r in (listed, launched):
        assert r.headers["Retry-After"] and "storage unavailable" in r.json()["detail"]
    assert answered_within < PROMISE, f"answered after {answered_within:.1f} s of partition"

    proxy.heal()
    await eventually_ok(web)
    listed, launched = await _answers(web)
    assert (listed.status_code, launched.status_code) == (200, 201), (listed.text, launched.text)
    assert launched.json()["id"] in {t["id"] for t in (await web.get("/threads")).json()["threads"]}


async def eventually_ok(web: httpx.AsyncClient) -> None:
    async def ok() -> bool:
        return (await web.get("/threads")).status_code == 200

    for _ in range(100):
        if await ok():
            return
        await asyncio.sleep(0.1)
    raise AssertionError("the web did not recover after the partition healed")


async def test_the_proxy_holds_cuts_and_delays_then_heals(proxy, redis_url):
    client = Redis(port=proxy.port, socket_timeout=1, single_connection_client=True, retry=Retry(NoBackoff(), 0))
    try:
        assert await client.ping()
        proxy.blackhole()
        with pytest.raises(Exception, match="Timeout"):
            await client.ping()  # held open, unanswered
        proxy.heal()
        assert await client.ping()
        proxy.cut()
        with pytest.raises(Exception, match="Connection|closed"):
            await Redis(port=proxy.port, socket_timeout=1, retry=Retry(NoBackoff(), 0)).ping()
        with pytest.raises(Exception, match="Connection|closed"):
            await client.ping()  # its connection was cut under it
        proxy.latency(50)
        assert await client.ping()  # a new connection, slow but whole
    finally:
        proxy.heal()
        await client.aclose()


def test_the_proxy_is_driven_from_plain_threads_too(redis_url):
    import redis as sync_redis

    where = urlsplit(redis_url)
    with FaultProxy(where.hostname or "127.0.0.1", where.port or 6379) as proxy:
        client = sync_redis.Redis(port=proxy.port, socket_timeout=1, retry=None)
        assert client.ping()
        seen: list[object] = []
        proxy.blackhole()
        worker = threading.Thread(target=lambda: seen.append(_try(client.ping)))
        worker.start()
        worker.join()
        proxy.heal()
        assert isinstance(seen[0], sync_redis.TimeoutError) and client.ping()
        client.close()


def _try(call):
    try:
        return call()
    except Exception as e:  # the outcome is what the test looks at
        return e
