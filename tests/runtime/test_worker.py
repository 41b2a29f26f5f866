"""Workers sharing one queue in one process (the multi-process versions are in scenarios/)."""

from __future__ import annotations

import asyncio

import pytest

from bot.adapters.redis.work import RedisWorkQueue
from bot.core.events import HumanResponse, stamped
from bot.core.thread import Origin
from bot.runtime.loop import LEASE_TTL_MS
from bot.runtime.worker import Worker
from tests.helpers import eventually, ledger_lines, reply
from tests.runtime.ports.test_status_index import finish, hello, waiting_events

pytestmark = [pytest.mark.redis, pytest.mark.network]


def worker(app, name: str, concurrency: int = 4) -> Worker:
    return Worker(app.runner, RedisWorkQueue(app.redis), app.store, concurrency, name)


async def launch(app, text: str) -> str:
    thread = await app.service.launch(text, app.service.unproven("alice"), channel="api")
    await app.queue.push(thread.id)
    return thread.id


@pytest.fixture
async def workers(app):
    started: list[Worker] = []
    yield started
    await asyncio.gather(*(w.stop(0) for w in started))


async def test_two_workers_share_the_work_and_each_thread_is_answered_once(app, workers, fake_llm):
    fake_llm.delay = 0.2
    fake_llm.default = reply(intent="done_for_now", message="hi")
    ids = [await launch(app, f"hello {i}") for i in range(8)]
    workers += [worker(app, "w1", 2), worker(app, "w2", 2)]
    for w in workers:
        w.start()
    await workers[0].idle()
    for thread_id in ids:
        assert [e.type for e in (await app.store.load(thread_id)).events] == ["user_message", "done_for_now"]
    assert sorted(p.split("hello ")[1][0] for p in fake_llm.prompts) == [str(i) for i in range(8)]


async def test_handoffs_that_arrive_during_a_run_are_folded_into_one_more_run(app, workers, fake_llm):
    fake_llm.delay = 0.3
    fake_llm.script(reply(intent="done_for_now", message="hi"))
    thread_id = await launch(app, "hello")
    workers.append(worker(app, "w1"))
    workers[0].start()
    await eventually(lambda: fake_llm.prompts)  # the run is under way: waiting for the model
    for _ in range(5):
        await app.queue.push(thread_id)
    await workers[0].idle()
    thread = await app.store.load(thread_id)
    assert [e.type for e in thread.events] == ["user_message", "done_for_now"]
    assert len(fake_llm.prompts) == 1 and await app.queue.backlog() == 0


async def test_a_stopping_worker_hands_its_thread_to_another_and_nothing_is_lost(app, workers, fake_llm):
    fake_llm.delay = 1.0
    fake_llm.default = reply(intent="done_for_now", message="hi")
    thread_id = await launch(app, "hello")
    first, second = worker(app, "w1"), worker(app, "w2")
    first.start()
    await eventually(lambda: app.redis.get(app.store.keys.lease(thread_id)))  # the run holds the thread
    await first.stop(grace=0)  # mid-call to the model: the run is cancelled, its lease released
    assert await app.redis.get(app.store.keys.lease(thread_id)) is None
    workers.append(second)
    second.start()
    await second.idle()
    thread = await app.store.load(thread_id)
    assert [e.type for e in thread.events] == ["user_message", "done_for_now"]
    assert len(fake_llm.prompts) == 2  # asked again by the second worker, answered once


async def test_a_dead_workers_thread_is_taken_over_once_its_lease_expires(app, workers, fake_llm):
    fake_llm.script(reply(intent="done_for_now", message="hi"))
    thread_id = await launch(app, "hello")
    # What a worker killed mid-run leaves: its entry pending under its name, its lease held.
    [taken] = await app.queue.take("killed", 1, 100)
    assert await app.store.lease(thread_id, "killed-runner", LEASE_TTL_MS)
    workers.append(worker(app, "survivor"))
    workers[0].start()
    await workers[0].idle()
    assert (await app.store.load(thread_id)).status() == "done"
    assert len(fake_llm.prompts) == 1
    assert await app.redis.xpending(app.queue.stream, "workers") == {
        "pending": 0, "min": None, "max": None, "consumers": []
    }


async def test_a_deploy_in_progress_finishes_and_is_recorded_when_its_worker_stops(app, workers, ledger, monkeypatch):
    monkeypatch.setenv("FAKE_DEPLOY_SECONDS", "1")
    thread_id = await launch(app, "deploy backend v1.2.3 to staging")
    first, second = worker(app, "w1"), worker(app, "w2")
    first.start()
    await eventually(lambda: ledger_lines(ledger), within=10)  # the deploy command is running
    await first.stop(grace=0)  # SIGTERM with no grace left: the deploy is not abandoned
    thread = await app.store.load(thread_id)
    assert [e.ok for e in thread.events if e.type == "deploy_result"] == [True]
    workers.append(second)
    second.start()
    await second.idle()
    thread = await app.store.load(thread_id)
    assert thread.status() == "done" and len(ledger_lines(ledger)) == 1
    assert [e.type for e in thread.events].count("deploy_result") == 1


async def test_a_thread_recorded_but_never_handed_over_is_found_by_a_worker(app, workers, fake_llm):
    fake_llm.script(reply(intent="done_for_now", message="found you"))
    # the process died before the push
    thread = await app.service.launch("hello", app.service.unproven("alice"), channel="api")
    workers.append(worker(app, "w1"))
    workers[0].start()
    await workers[0].idle()

    async def not_running() -> bool:
        return (await app.store.load(thread.id)).status() != "running"

    await eventually(not_running)
    assert (await app.store.load(thread.id)).events[-1].message == "found you"


# --- the sweep reads the active threads of the status index only ------------------------------


class CountingStore:
    """The app's store, counting loads."""

    def __init__(self, store) -> None:
        self.store, self.loaded = store, []

    def __getattr__(self, name: str):
        return getattr(self.store, name)

    async def load(self, thread_id: str):
        self.loaded.append(thread_id)
        return await self.store.load(thread_id)


async def test_the_sweep_loads_active_threads_only_and_finds_an_answered_one_never_handed_over(app):
    for n in range(30):
        await finish(app.store, await app.store.create(Origin(), [hello(f"old {n}")]))
    waiting = await app.store.create(Origin(), waiting_events())
    other = await app.store.create(Origin(), waiting_events())
    request = waiting.events[-1]
    # A person's approval stored; the process died before it indexed or handed it over.
    await app.store.append(waiting, stamped([HumanResponse(user="bob", approval_id=request.approval_id,
                                                           approve=True)], request.at))
    store = CountingStore(app.store)
    queue = RedisWorkQueue(app.redis)
    sweeper = Worker(app.runner, queue, store, 1, "sweeper")
    assert await sweeper.recover() == [waiting.id]
    assert sorted(store.loaded) == sorted([waiting.id, other.id])
    assert await queue.backlog() == 1
    assert (await app.store.listed(["running"], 10))[0] == [waiting.id]  # indexed again
