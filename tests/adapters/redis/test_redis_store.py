"""The thread store against a real Redis server."""

from __future__ import annotations

import asyncio

import pytest

from bot.adapters.redis.threads import FACT_ATTEMPTS, RedisThreadStore
from bot.core.events import DeployBackend, Error, ListGitTags, UserMessage
from bot.core.thread import Origin, Thread
from bot.runtime.ports import Conflict, ThreadExists, ThreadNotFound

pytestmark = [pytest.mark.redis, pytest.mark.network]


@pytest.fixture
def store(redis) -> RedisThreadStore:
    return RedisThreadStore(redis)


async def test_create_load_roundtrip_keeps_types_and_origin(store):
    events = [UserMessage(text="hi", user="a"), DeployBackend(tag="v1", environment="staging")]
    created = await store.create(Origin(channel="api"), events)
    loaded = await store.load(created.id)
    assert loaded.events == tuple(events)
    assert isinstance(loaded.events[1], DeployBackend) and loaded.version == 2
    assert loaded.origin == Origin(channel="api")


async def test_append_is_compare_and_set_on_the_version(store):
    thread = await store.create(Origin(), [UserMessage(text="hi", user="a")])
    moved = await store.append(thread, [ListGitTags()])
    assert moved.version == 2
    with pytest.raises(Conflict) as lost:
        await store.append(thread, [Error(kind="llm", message="stale writer")])
    assert (lost.value.expected, lost.value.actual) == (1, 2)
    assert (await store.load(thread.id)).events == moved.events  # nothing overwritten


async def test_concurrent_appends_at_the_same_version_exactly_one_wins(store):
    thread = await store.create(Origin(), [UserMessage(text="hi", user="a")])
    writers = [ListGitTags() for _ in range(20)]
    results = await asyncio.gather(*(store.append(thread, [w]) for w in writers), return_exceptions=True)
    winners = [r for r in results if not isinstance(r, Exception)]
    assert len(winners) == 1
    assert all(isinstance(r, Conflict) for r in results if r not in winners)
    stored = await store.load(thread.id)
    assert stored.version == 2 and stored.events[1] in writers


async def test_racing_writers_that_reread_lose_nothing(store):
    thread = await store.create(Origin(), [UserMessage(text="start", user="a")])

    async def writer(n: int) -> None:
        mine, event = thread, UserMessage(text=f"m{n}", user="a")
        while True:
            try:
                await store.append(mine, [event])
                return
            except Conflict:
                mine = await store.refresh(mine)

    await asyncio.gather(*(writer(n) for n in range(30)))
    texts = [e.text for e in (await store.load(thread.id)).events[1:]]
    assert sorted(texts) == sorted(f"m{n}" for n in range(30))


async def test_refresh_reads_only_what_was_appended(store):
    thread = await store.create(Origin(), [UserMessage(text="hi", user="a")])
    other = await store.append(await store.load(thread.id), [ListGitTags(), ListGitTags()])
    refreshed = await store.refresh(thread)
    assert refreshed.events == other.events


async def test_unknown_thread(store):
    with pytest.raises(ThreadNotFound):
        await store.load("missing")
    with pytest.raises(ThreadNotFound):
        await store.append(Thread("missing"), [ListGitTags()])
    assert "missing" not in await store.recent(10)


async def test_recent_is_newest_first_and_a_released_thread_moves_up(store):
    a = await store.create(Origin(), [UserMessage(text="a", user="u")])
    b = await store.create(Origin(), [UserMessage(text="b", user="u")])
    assert (await store.recent(10))[:2] == [b.id, a.id]
    await store.release(await store.claim(a.id, "me", 1000), "me")
    assert (await store.recent(10))[:2] == [a.id, b.id]


async def test_claim_takes_the_lease_and_reads_the_thread_in_one_go(store, redis):
    thread = await store.create(Origin(channel="api"), [UserMessage(text="a", user="u")])
    claimed = await store.claim(thread.id, "me", 1000)
    assert claimed.events == thread.events and claimed.origin == Origin(channel="api")
    assert await store.claim(thread.id, "someone else", 1000) is None
    assert await store.claim(thread.id, "me", 1000) is not None  # the holder may extend it
    with pytest.raises(ThreadNotFound):
        await store.claim("missing", "me", 1000)
    assert await redis.get(store.keys.lease("missing")) is None  # no lease on nothing


async def test_release_returns_what_was_appended_while_held_and_frees_the_thread(store):
    thread = await store.create(Origin(), [UserMessage(text="a", user="u")])
    held = await store.claim(thread.id, "me", 1000)
    await store.append(held, [ListGitTags()])  # someone else, while we hold it
    assert await store.claim(thread.id, "other", 1000) is None
    released = await store.release(held, "me")
    assert [e.type for e in released.events] == ["user_message", "list_git_tags"]
    assert await store.claim(thread.id, "other", 1000) is not None
    await store.release(held, "me")  # not ours any more: the other's lease stays
    assert await store.claim(thread.id, "third", 1000) is None


async def test_the_append_script_is_reloaded_after_a_server_forgets_it(store, redis):
    thread = await store.create(Origin(), [UserMessage(text="a", user="u")])
    await redis.script_flush()
    assert (await store.append(thread, [ListGitTags()])).version == 2


async def test_creating_a_taken_id_writes_nothing(store):
    first = await store.create(Origin(channel="a"), [UserMessage(text="one", user="u")], "fixed-id")
    with pytest.raises(ThreadExists):
        await store.create(Origin(channel="b"), [UserMessage(text="two", user="u")], "fixed-id")
    assert await store.load("fixed-id") == first


async def test_a_fact_lands_whatever_was_appended_meanwhile(store):
    thread = await store.create(Origin(), [UserMessage(text="a", user="u")])
    moved = await store.append(thread, [ListGitTags()])
    fact = Error(kind="deployer", message="a result from an older read")
    landed = await store.append_fact(thread, [fact])  # `thread` is stale: version 1, not 2
    assert landed.events == moved.events + (fact,)
    assert (await store.load(thread.id)).events == landed.events


async def test_claim_and_release_survive_a_server_that_forgot_its_scripts(store, redis):
    thread = await store.create(Origin(), [UserMessage(text="a", user="u")])
    await redis.script_flush()
    held = await store.claim(thread.id, "me", 1000)
    await redis.script_flush()
    assert (await store.release(held, "me")).version == 1
    assert await store.claim(thread.id, "other", 1000) is not None


async def test_a_fact_gives_up_after_losing_every_race(store, monkeypatch):
    thread = await store.create(Origin(), [UserMessage(text="a", user="u")])
    tries = []

    async def always_beaten(t, events, holder=None):
        tries.append(t.version)
        raise Conflict(t.id, t.version, t.version + 1)

    monkeypatch.setattr(store, "append", always_beaten)
    with pytest.raises(RuntimeError, match=f"after {FACT_ATTEMPTS} conflicts"):
        await store.append_fact(thread, [Error(kind="deployer", message="x")])
    assert len(tries) == FACT_ATTEMPTS


async def test_a_fact_stops_at_once_on_anything_but_a_conflict(store):
    with pytest.raises(ThreadNotFound):
        await store.append_fact(Thread("missing"), [ListGitTags()])
