"""Listing threads takes a bounded number of Redis connections, whatever is stored: a page
loads its threads LOADS_AT_ONCE at a time, because redis-py refuses a connection past the
pool's size outright (MaxConnectionsError, outside its retry policy). Real Redis, real pools."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator

import httpx
import pytest
from redis.asyncio import Redis

from bot.adapters.redis.connect import client
from bot.adapters.redis.threads import RedisThreadStore
from bot.config.settings import Settings
from bot.core.people import Identity
from bot.core.policy import Policy
from bot.core.redis_target import RedisTarget
from bot.runtime.service import LOADS_AT_ONCE, ThreadService
from bot.testing.cluster import clean_env
from bot.wiring.app import App

pytestmark = [pytest.mark.redis, pytest.mark.processes, pytest.mark.network]

ASKER = Identity("alice", "name", "alice")


async def store_threads(service: ThreadService, count: int) -> None:
    for start in range(0, count, 8):
        await asyncio.gather(*(service.launch(f"hello {i}", ASKER) for i in range(start, min(start + 8, count))))


@pytest.fixture
async def small_pool(redis_url: str, redis: Redis) -> AsyncIterator[Redis]:
    """A client whose pool holds fewer connections than a page has threads."""
    small = client(RedisTarget(url=redis_url), max_connections=LOADS_AT_ONCE + 2)
    yield small
    await small.aclose()


async def test_thousands_of_threads_are_listed_through_a_small_pool(small_pool):
    service = ThreadService(RedisThreadStore(small_pool), Policy(), None)
    await store_threads(service, 3000)
    threads, cursor = await service.page(limit=2500)
    assert len(threads) == 2500 and len({t.id for t in threads}) == 2500 and cursor is not None
    rest, cursor = await service.page(limit=2500, cursor=cursor)
    assert len(rest) == 500 and cursor is None
    assert {t.events[0].text for t in threads + rest} == {f"hello {i}" for i in range(3000)}


@pytest.fixture
def settings(settings: Settings) -> Settings:
    """The smallest pool the app builds: 2 x WORKER_CONCURRENCY + 100."""
    return settings.model_copy(update={"worker_concurrency": 1})


async def test_the_largest_page_of_the_api_is_served_with_more_threads_stored_than_the_pool_holds(
    app: App, api: httpx.AsyncClient,
):
    await store_threads(app.service, 250)
    answer = await api.get("/threads", params={"limit": 200})
    assert answer.status_code == 200, answer.text
    assert len(answer.json()["threads"]) == 200


async def test_the_cli_lists_more_threads_than_the_pool_holds(small_pool, redis_url, git_repo, deploy_command,
                                                             tmp_path):
    service = ThreadService(RedisThreadStore(small_pool), Policy(), None)
    await store_threads(service, 300)
    env = clean_env(REDIS_URL=redis_url, GIT_REPO=str(git_repo), DEPLOY_COMMAND=deploy_command,
                    DATA_DIR=str(tmp_path / "data"), WORKER_CONCURRENCY="1")
    listing = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bot", "threads", "list", "--limit", "300", env=env,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )
    stdout, stderr = await asyncio.wait_for(listing.communicate(), 60)
    assert listing.returncode == 0, stderr.decode()
    listed = {t.id for t in (await service.page(limit=300))[0]}
    assert len(listed) == 300 and all(thread_id in stdout.decode() for thread_id in listed)
