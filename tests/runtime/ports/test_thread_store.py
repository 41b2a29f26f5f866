"""ThreadStore: the same cases against MemoryThreadStore and RedisThreadStore."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import pytest

from bot.core.events import DeployBackend, DoneForNow, Error, HumanResponse, ListGitTags, UserMessage, stamped
from bot.core.thread import Origin, Thread
from bot.runtime.ports import Conflict, LeaseLost, ThreadExists, ThreadNotFound

AT = datetime(2026, 11, 5, 9, 30, tzinfo=UTC)
TTL_MS = 300  # Redis variants sleep through TTLs: margins of 40% absorb a busy machine


def hello(text: str = "hi") -> UserMessage:
    return UserMessage(text=text, user="alice")


async def stored(store, thread: Thread) -> list[str]:
    return [e.id for e in (await store.load(thread.id)).events]


# --- create, load, refresh ---------------------------------------------------------------


async def test_create_and_load_keep_events_their_types_times_and_the_origin(store):
    origin = Origin(channel="slack", slack_channel="C1", slack_thread_ts="1.0")
    events = stamped([hello(), DeployBackend(tag="v1.2.3", environment="staging")], AT)
    created = await store.create(origin, events)
    loaded = await store.load(created.id)
    assert loaded == created and loaded.version == 2
    assert loaded.events == tuple(events) and isinstance(loaded.events[1], DeployBackend)
    assert loaded.events[0].at == AT and loaded.origin == origin


async def test_a_thread_id_can_be_chosen_and_is_never_taken_twice(store):
    mine = await store.create(Origin(), [hello("first")], "chosen-id")
    assert mine.id == "chosen-id"
    with pytest.raises(ThreadExists):
        await store.create(Origin(channel="email"), [hello("second")], "chosen-id")
    again = await store.load("chosen-id")
    assert [e.text for e in again.events] == ["first"] and again.origin == Origin()


async def test_a_create_sent_again_returns_the_thread_it_made(store):
    events = [hello()]
    first = await store.create(Origin(), events, "resent")
    assert await store.create(Origin(), events, "resent") == first
    assert (await store.load("resent")).version == 1


class Pushed:
    """A WorkQueue that only remembers what was pushed (the memory backend's)."""

    def __init__(self) -> None:
        self.ids: list[str] = []

    async def push(self, thread_id: str) -> None:
        self.ids.append(thread_id)


async def handed_off(backend, queue) -> list[str]:
    """What was pushed since the last look (a worker's take)."""
    if isinstance(queue, Pushed):
        taken, queue.ids = queue.ids, []
        return taken
    return [w.thread_id for w in await queue.take("w1", 10, 10)]


@pytest.fixture
def queue(backend):
    if backend.name == "memory":
        return Pushed()
    from bot.adapters.redis.work import RedisWorkQueue

    return RedisWorkQueue(backend.store.redis)


async def test_a_thread_created_with_a_handoff_is_queued_once_it_is_stored(backend, store, queue):
    # On one Redis server the push rides in the creation's pipeline, behind it; on a cluster
    # it is sent after (another node could run it first): either way a worker finds the thread.
    events = [hello()]
    thread = await store.create(Origin(), events, handoff=queue)
    assert await handed_off(backend, queue) == [thread.id]
    assert (await store.load(thread.id)).version == 1
    plain = await store.create(Origin(), [hello()])
    assert plain.id != thread.id and await handed_off(backend, queue) == []  # no handoff, no push
    # A create sent again (its connection broke after the first send ran) is handed off again:
    # whether the first push went out is not known, and a second run finds nothing to do.
    assert await store.create(Origin(), events, thread.id, handoff=queue) == thread
    assert await handed_off(backend, queue) == [thread.id]


async def test_an_unknown_thread_is_not_found(store):
    with pytest.raises(ThreadNotFound):
        await store.load("nope")
    with pytest.raises(ThreadNotFound):
        await store.append(Thread("nope", (hello(),)), [ListGitTags()])
    with pytest.raises(ThreadNotFound):
        await store.claim("nope", "runner", TTL_MS)


async def test_a_thread_starts_with_an_event(store):
    with pytest.raises(ValueError):
        await store.create(Origin(), [])


async def test_refresh_adds_only_what_was_appended_after_the_version_read(store):
    thread = await store.create(Origin(), [hello()])
    moved = await store.append(thread, [ListGitTags()])
    moved = await store.append(moved, [hello("more")])
    refreshed = await store.refresh(thread)
    assert refreshed == moved and refreshed.events[0] is thread.events[0]
    assert await store.refresh(moved) == moved


# --- append: compare-and-set ---------------------------------------------------------


async def test_append_is_compare_and_set_on_the_version(store):
    thread = await store.create(Origin(), [hello()])
    moved = await store.append(thread, [ListGitTags()])
    assert moved.version == 2 and moved.events[:1] == thread.events
    with pytest.raises(Conflict) as lost:
        await store.append(thread, [Error(kind="llm", message="a stale writer")])
    assert (lost.value.expected, lost.value.actual) == (1, 2)
    assert await stored(store, thread) == [e.id for e in moved.events]  # nothing overwritten


async def test_appending_nothing_changes_nothing(store):
    thread = await store.create(Origin(), [hello()])
    assert await store.append(thread, []) == thread
    assert (await store.load(thread.id)).version == 1


async def test_of_writers_racing_at_one_version_exactly_one_wins(store):
    thread = await store.create(Origin(), [hello()])
    writers = [ListGitTags() for _ in range(10)]
    results = await asyncio.gather(*(store.append(thread, [w]) for w in writers), return_exceptions=True)
    winners = [r for r in results if isinstance(r, Thread)]
    assert len(winners) == 1
    assert all(isinstance(r, Conflict) for r in results if not isinstance(r, Thread))
    assert await stored(store, thread) == [e.id for e in winners[0].events]


async def test_an_append_sent_again_is_not_recorded_twice(store):
    thread = await store.create(Origin(), [hello()])
    events = [ListGitTags(), hello("two")]
    once = await store.append(thread, events)
    again = await store.append(thread, events)  # as after a broken connection: the first send ran
    assert again == once and await stored(store, thread) == [e.id for e in once.events]


async def test_a_fact_lands_whatever_was_appended_meanwhile(store):
    thread = await store.create(Origin(), [hello()])
    meanwhile = await store.append(thread, [hello("meanwhile")])
    fact = Error(kind="deployer", message="the deploy could not run")
    landed = await store.append_fact(thread, [fact])
    assert landed.events == meanwhile.events + (fact,)
    assert await stored(store, thread) == [e.id for e in landed.events]


# --- leases --------------------------------------------------------------------------


async def test_one_lease_holder_at_a_time_and_the_holder_extends_it(store, backend):
    assert await store.lease("t1", "a", TTL_MS)
    assert not await store.lease("t1", "b", TTL_MS)
    await backend.elapse(TTL_MS * 0.6 / 1000)
    assert await store.lease("t1", "a", TTL_MS)  # extended from now
    await backend.elapse(TTL_MS * 0.6 / 1000)
    assert not await store.lease("t1", "b", TTL_MS)  # past the first TTL, within the second
    assert await store.lease("t2", "b", TTL_MS)  # leases are per thread


async def test_a_lease_nobody_renews_lapses(store, backend):
    assert await store.lease("t1", "a", TTL_MS)
    await backend.elapse(TTL_MS * 1.5 / 1000)
    assert await store.lease("t1", "b", TTL_MS)
    assert not await store.lease("t1", "a", TTL_MS)


async def test_claim_takes_the_lease_and_reads_the_thread(store):
    thread = await store.create(Origin(channel="email"), [hello()])
    claimed = await store.claim(thread.id, "a", TTL_MS)
    assert claimed == thread
    assert await store.claim(thread.id, "b", TTL_MS) is None
    assert not await store.lease(thread.id, "b", TTL_MS)
    assert await store.claim(thread.id, "a", TTL_MS) == thread  # its holder may claim again


async def test_claim_waits_for_a_lapsed_lease_only(store, backend):
    thread = await store.create(Origin(), [hello()])
    assert await store.lease(thread.id, "dead-runner", TTL_MS)
    assert await store.claim(thread.id, "b", TTL_MS) is None
    await backend.elapse(TTL_MS * 1.5 / 1000)
    assert await store.claim(thread.id, "b", TTL_MS) == thread


async def test_release_returns_what_was_appended_while_held_and_frees_the_thread(store):
    thread = await store.create(Origin(), [hello()])
    held = await store.claim(thread.id, "a", TTL_MS)
    meanwhile = await store.append(thread, [hello("while you were busy")])  # a person: no lease needed
    released = await store.release(held, "a")
    assert released == meanwhile
    assert await store.claim(thread.id, "b", TTL_MS) == meanwhile


async def test_only_the_holder_releases_the_lease(store):
    thread = await store.create(Origin(), [hello()])
    await store.claim(thread.id, "a", TTL_MS)
    assert await store.release(thread, "b") == thread
    assert await store.claim(thread.id, "b", TTL_MS) is None


async def test_a_run_that_lost_its_lease_cannot_append_a_decision(store, backend):
    thread = await store.create(Origin(), [hello()])
    await store.claim(thread.id, "run-a", TTL_MS)
    assert (await store.append(thread, [ListGitTags()], "run-a")).version == 2  # holder decides
    thread = await store.load(thread.id)
    await backend.elapse(TTL_MS * 1.5 / 1000)  # run-a stalled; its lease lapsed
    assert await store.claim(thread.id, "run-b", TTL_MS) == thread
    with pytest.raises(LeaseLost):
        await store.append(thread, [hello("too late")], "run-a")
    assert (await store.load(thread.id)).version == 2  # nothing appended
    # Facts and people need no lease; the new holder decides.
    assert (await store.append_fact(thread, [Error(kind="deployer", message="a fact")])).version == 3
    later = await store.append(await store.load(thread.id), [ListGitTags()], "run-b")
    assert later.version == 4


async def test_a_holder_may_decide_when_nobody_holds_the_thread(store):
    thread = await store.create(Origin(), [hello()])
    assert (await store.append(thread, [ListGitTags()], "run-a")).version == 2


async def test_a_stale_version_is_a_conflict_before_it_is_a_lost_lease(store):
    thread = await store.create(Origin(), [hello()])
    await store.append(thread, [hello("moved")])
    await store.lease(thread.id, "run-b", TTL_MS)
    with pytest.raises(Conflict):
        await store.append(thread, [ListGitTags()], "run-a")


# --- recent --------------------------------------------------------------------------


async def test_recent_is_newest_first_and_a_released_thread_moves_up(store):
    ids = []
    for n in range(3):
        ids.append((await store.create(Origin(), [hello(f"t{n}")])).id)
        await asyncio.sleep(0.002)  # Redis orders by wall time: keep the creations apart
    assert await store.recent(10) == ids[::-1]
    assert await store.recent(2) == [ids[2], ids[1]]
    first = await store.load(ids[0])
    await store.claim(first.id, "a", TTL_MS)
    await store.release(first, "a")
    assert await store.recent(10) == [ids[0], ids[2], ids[1]]


async def test_releasing_an_unknown_thread_does_not_list_it(store):
    ghost = Thread("ghost", (hello(),))
    assert await store.release(ghost, "a") == ghost
    assert await store.recent(10) == []


async def test_a_people_answer_reaches_a_held_thread_via_release(store):
    """The pattern the loop relies on: what a person appends while a run holds the thread
    comes back from release(), so the run looks again instead of missing it."""
    thread = await store.create(Origin(), [hello()])
    held = await store.claim(thread.id, "run", TTL_MS)
    decided = await store.append(held, [ListGitTags()], "run")
    answer = HumanResponse(text="and frontend?", user="bob")
    await store.append(decided, [answer])
    latest = await store.release(decided, "run")
    assert latest.version == decided.version + 1 and latest.events[-1] == answer


# --- finish: a run's last events and its release at once -----------------------------------


async def test_finish_appends_lets_go_and_lists_the_thread_under_its_new_status(store):
    thread = await store.create(Origin(), [hello()])
    held = await store.claim(thread.id, "run", TTL_MS)
    done = stamped([ListGitTags(), DoneForNow(message="v1.2.3")], AT)
    finished = await store.finish(held, done, "run")
    assert finished == held.extended(done) and await store.load(thread.id) == finished
    assert await store.claim(thread.id, "another-run", TTL_MS) == finished  # let go
    assert await store.listed(["done"], 10) == ([thread.id], None)
    assert await store.listed(["running"], 10) == ([], None)
    assert (await store.recent(1)) == [thread.id]


async def test_finish_after_a_person_wrote_is_a_conflict_and_keeps_the_lease(store):
    thread = await store.create(Origin(), [hello()])
    held = await store.claim(thread.id, "run", TTL_MS)
    answer = await store.append(held, [hello("and frontend?")])  # a person: no lease needed
    with pytest.raises(Conflict):
        await store.finish(held, stamped([DoneForNow(message="v1.2.3")], AT), "run")
    assert await store.load(thread.id) == answer  # nothing of the run's appended
    assert await store.claim(thread.id, "another-run", TTL_MS) is None  # still the run's to decide again
    assert await store.listed(["done"], 10) == ([], None)


async def test_finish_by_a_run_that_lost_its_lease_stores_nothing_and_frees_nothing(store, backend):
    thread = await store.create(Origin(), [hello()])
    await store.claim(thread.id, "run-a", TTL_MS)
    await backend.elapse(TTL_MS * 1.5 / 1000)
    assert await store.claim(thread.id, "run-b", TTL_MS) == thread
    with pytest.raises(LeaseLost):
        await store.finish(thread, stamped([DoneForNow(message="too late")], AT), "run-a")
    assert await store.load(thread.id) == thread
    assert await store.claim(thread.id, "run-c", TTL_MS) is None  # run-b holds it still


async def test_finish_of_an_unknown_thread_is_not_found(store):
    with pytest.raises(ThreadNotFound):
        await store.finish(Thread("ghost", (hello(),)), [DoneForNow(message="x")], "run")


async def test_finish_sent_again_is_not_recorded_twice(store):
    thread = await store.create(Origin(), [hello()])
    held = await store.claim(thread.id, "run", TTL_MS)
    done = stamped([DoneForNow(message="v1.2.3")], AT)
    first = await store.finish(held, done, "run")
    assert await store.finish(held, done, "run") == first  # redis-py resent it: it recognises itself
    assert (await store.load(thread.id)).version == 2
