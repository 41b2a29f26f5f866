"""A worker cut off from Redis while its deploy runs keeps the deploy: another worker, with
Redis all along, does not declare it "outcome unknown" meanwhile, and once Redis is back
the deploy's real result is recorded and said. Real Redis behind a TCP proxy
(bot/testing/fault_proxy.py) for the partitioned worker, the other worker straight on it."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from urllib.parse import urlsplit, urlunsplit

import pytest

from bot.adapters.redis.work import RedisWorkQueue
from bot.runtime.worker import Worker
from bot.testing.fault_proxy import FaultProxy
from bot.wiring.app import build
from tests.helpers import eventually, ledger_lines

pytestmark = [pytest.mark.redis, pytest.mark.processes, pytest.mark.network]

PARTITION = 8  # seconds: longer than the 4 s run lease that used to decide "outcome unknown"


@pytest.fixture
def proxy(redis_url: str) -> Iterator[FaultProxy]:
    where = urlsplit(redis_url)
    proxy = FaultProxy(where.hostname or "127.0.0.1", where.port or 6379).start_in_thread()
    yield proxy
    proxy.stop_in_thread()


@pytest.fixture
async def partitioned(settings, proxy, redis):
    """A second process's worth of the bot (store, runner, worker) whose Redis is behind the proxy."""
    where = urlsplit(settings.redis_url)
    behind = urlunsplit(where._replace(netloc=where.netloc.replace(f":{where.port}", f":{proxy.port}")))
    app = build(settings.model_copy(update={"redis_url": behind}))
    yield app
    await app.close()


@pytest.fixture
async def workers():
    started: list[Worker] = []
    yield started
    await asyncio.gather(*(w.stop(0) for w in started))


def worker(app, name: str) -> Worker:
    return Worker(app.runner, RedisWorkQueue(app.redis), app.store, 4, name)


@pytest.mark.parametrize("fault", ["cut", "blackhole"])
async def test_a_worker_cut_off_from_redis_keeps_its_deploy_and_records_it_when_back(
    app, partitioned, proxy, workers, ledger, monkeypatch, fault
):
    monkeypatch.setenv("FAKE_DEPLOY_SECONDS", "3")  # it ends while Redis is out of reach
    workers.append(worker(partitioned, "partitioned"))
    workers[0].start()
    thread = await app.service.launch("deploy backend v1.2.3 to staging", app.service.unproven("alice"))
    await app.queue.push(thread.id)
    await eventually(lambda: ledger_lines(ledger), within=10)  # the deploy command is running

    getattr(proxy, fault)()
    workers.append(worker(app, "other"))  # with Redis all along: it looks at the thread meanwhile
    workers[1].start()
    await asyncio.sleep(PARTITION)
    assert [e.type for e in (await app.store.load(thread.id)).events if e.type in ("deploy_result", "error")] == []
    proxy.heal()

    async def settled():
        loaded = await app.store.load(thread.id)
        return loaded if loaded.status() not in ("running",) else None

    done = await eventually(settled, within=60)
    kinds = [(e.type, getattr(e, "kind", None)) for e in done.events]
    assert ("error", "interrupted") not in kinds
    [result] = [e for e in done.events if e.type == "deploy_result"]
    assert result.ok and done.status() == "done"
    assert "Deployed backend v1.2.3 to staging" in done.events[-1].message
    assert len(ledger_lines(ledger)) == 1


async def test_a_result_recorded_after_outcome_unknown_replaces_the_question(
    app, partitioned, proxy, workers, ledger, monkeypatch
):
    """Cut off for longer than its lease: the other worker says the outcome is unknown, as it
    must for a worker that may be gone; the result, recorded once Redis is back, answers it."""
    partitioned.runner.deploying.deploy_lease_ms = 3_000  # shorter than the partition here
    monkeypatch.setenv("FAKE_DEPLOY_SECONDS", "3")
    workers.append(worker(partitioned, "partitioned"))
    workers[0].start()
    thread = await app.service.launch("deploy backend v1.2.3 to staging", app.service.unproven("alice"))
    await app.queue.push(thread.id)
    await eventually(lambda: ledger_lines(ledger), within=10)

    proxy.cut()
    workers.append(worker(app, "other"))
    workers[1].start()

    async def asked():
        loaded = await app.store.load(thread.id)
        return loaded if loaded.status() == "waiting_for_human" else None

    question = await eventually(asked, within=PARTITION)
    assert "do not know whether it finished" in question.events[-1].message
    proxy.heal()

    async def answered():
        loaded = await app.store.load(thread.id)
        return loaded if loaded.status() == "done" else None

    done = await eventually(answered, within=60)
    [result] = [e for e in done.events if e.type == "deploy_result"]
    assert result.ok and done.events.index(result) > done.events.index(question.events[-1])
    assert "finished after all" in done.events[-1].message
    assert "Deployed backend v1.2.3 to staging." in done.events[-1].message
    assert len(ledger_lines(ledger)) == 1
