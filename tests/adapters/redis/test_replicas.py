"""WAIT after a thread's writes: against a real master with a real replica, a write the
store acknowledged is on the replica; a replica that does not answer costs the timeout and
a warning, never an error; without a replica no WAIT is sent at all."""

from __future__ import annotations

import logging
import os
import signal
import time
from collections.abc import AsyncIterator, Iterator

import pytest
from redis.asyncio import Redis

from bot.adapters.redis.replicas import Replicas
from bot.adapters.redis.threads import RedisThreadStore
from bot.core.events import ListGitTags, UserMessage
from bot.core.thread import Origin
from bot.testing.cluster import RedisServer

pytestmark = pytest.mark.redis


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[RedisServer, RedisServer]]:
    """A master and its replica, from the shipped binary."""
    import redis as sync_redis

    quick = ("--repl-diskless-sync-delay", "0")
    root = tmp_path_factory.mktemp("replicated")
    master = RedisServer(root / "master", "everysec", args=quick)
    replica = RedisServer(root / "replica", "everysec", args=(*quick, "--replicaof", "127.0.0.1", str(master.port)))
    try:
        deadline = time.monotonic() + 20
        with sync_redis.Redis(port=replica.port, decode_responses=True) as r:
            while r.info("replication")["master_link_status"] != "up":
                assert time.monotonic() < deadline, "the replica did not sync"
                time.sleep(0.05)
        yield master, replica
    finally:
        replica.kill()
        master.kill()


@pytest.fixture
async def clients(pair) -> AsyncIterator[tuple[Redis, Redis]]:
    master, replica = pair
    m, r = Redis(port=master.port), Redis(port=replica.port)
    await m.flushdb()
    yield m, r
    await m.aclose()
    await r.aclose()


async def waits(redis: Redis) -> int:
    stats = await redis.info("commandstats")
    return int(stats.get("cmdstat_wait", {}).get("calls", 0))


async def test_what_the_store_acknowledged_is_on_the_replica(clients):
    master, replica = clients
    store = RedisThreadStore(master, replicas=Replicas(master, wait_ms=2000))
    thread = await store.create(Origin(), [UserMessage(text="deploy it", user="alice")])
    assert await replica.llen(store.keys.events(thread.id)) == 1  # no sleep: WAIT saw to it
    thread = await store.append(thread, [ListGitTags()])  # the append script is cached from now on
    before = await waits(master)
    for n in range(3, 6):
        thread = await store.append(thread, [ListGitTags()])
        assert await replica.llen(store.keys.events(thread.id)) == n
    thread = await store.append_fact(thread, [UserMessage(text="a fact", user="bot")])
    assert await replica.llen(store.keys.events(thread.id)) == 6
    assert await waits(master) - before == 4  # one WAIT per write, in the write's own round trip


async def test_a_replica_that_does_not_answer_is_logged_and_the_write_stands(clients, pair, caplog):
    master, replica = clients
    store = RedisThreadStore(master, replicas=Replicas(master, wait_ms=200))
    thread = await store.create(Origin(), [UserMessage(text="hi", user="alice")])
    stopped = pair[1].proc
    os.kill(stopped.pid, signal.SIGSTOP)  # still connected, never acknowledging
    try:
        began = time.monotonic()
        thread = await store.append(thread, [ListGitTags()])
        assert 0.15 < time.monotonic() - began < 2
    finally:
        os.kill(stopped.pid, signal.SIGCONT)
    assert thread.version == 2 and (await store.load(thread.id)).version == 2
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any("no replica acknowledged" in w and "list_git_tags" in w for w in warnings), warnings


async def test_scripts_the_server_forgot_are_loaded_again(clients):
    master, _ = clients
    store = RedisThreadStore(master, replicas=Replicas(master))
    thread = await store.create(Origin(), [UserMessage(text="hi", user="alice")])
    await master.script_flush()  # as on a freshly promoted replica
    assert (await store.append(thread, [ListGitTags()])).version == 2


async def test_without_a_replica_no_wait_is_sent(redis_url):
    redis = Redis.from_url(redis_url)
    try:
        store = RedisThreadStore(redis, replicas=Replicas(redis))
        before = await waits(redis)
        thread = await store.create(Origin(), [UserMessage(text="hi", user="alice")])
        await store.append(thread, [ListGitTags()])
        assert await waits(redis) == before
    finally:
        await redis.aclose()


async def test_role_is_looked_at_once_a_period(clients):
    master, _ = clients
    now = [0.0]
    replicas = Replicas(master, wait_ms=300, every=1.0, clock=lambda: now[0])
    roles = int((await master.info("commandstats")).get("cmdstat_role", {}).get("calls", 0))
    assert [await replicas.timeout_ms() for _ in range(5)] == [300] * 5
    now[0] = 1.5
    assert await replicas.timeout_ms() == 300
    after = int((await master.info("commandstats"))["cmdstat_role"]["calls"])
    assert after - roles == 2
