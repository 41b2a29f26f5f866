"""The status index and paging (ThreadStore.index / listed), and retention (Retention:
finished, remove, unindex, compact): the same cases against MemoryThreadStore and
RedisThreadStore, on one server and on a cluster."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from bot.core.events import (
    ApprovalRequested,
    Cancelled,
    DeployBackend,
    DoneForNow,
    HumanResponse,
    ListGitTags,
    UserMessage,
    stamped,
)
from bot.core.thread import Origin, Thread
from bot.runtime.ports import ThreadNotFound

AT = datetime(2026, 11, 5, 9, 30, tzinfo=UTC)


def hello(text: str = "hi") -> UserMessage:
    return UserMessage(text=text, user="alice")


def waiting_events() -> list:
    step = DeployBackend(tag="v1", environment="production")
    request = ApprovalRequested(
        step_id=step.id, thread_id="t", args_hash="h", service="backend", tag="v1", commit="c" * 40,
        environment="production", requested_by="alice", expires_at=datetime.now(UTC) + timedelta(days=1),
    )
    return stamped([hello(), step, request], AT)


async def listed_all(store, statuses, page: int = 100) -> list[str]:
    ids, cursor = await store.listed(statuses, page)
    while cursor is not None:
        more, cursor = await store.listed(statuses, page, cursor)
        ids += more
    return ids


async def finish(store, thread: Thread) -> Thread:
    """What a run does: append the last step, release."""
    claimed = await store.claim(thread.id, "run", 2000)
    done = await store.append(claimed, stamped([DoneForNow(message="ok")], AT), "run")
    return await store.release(done, "run")


# --- the index follows create, release and a person's word --------------------------------


async def test_create_and_release_keep_each_thread_under_its_status(store):
    running = await store.create(Origin(), [hello()])
    waiting = await store.create(Origin(), waiting_events())
    assert await listed_all(store, ["running"]) == [running.id]
    assert await listed_all(store, ["waiting_for_approval"]) == [waiting.id]
    await finish(store, running)
    assert await listed_all(store, ["running"]) == []
    assert await listed_all(store, ["done"]) == [running.id]
    assert set(await listed_all(store, ["done", "waiting_for_approval"])) == {running.id, waiting.id}
    assert set(await listed_all(store, None)) == {running.id, waiting.id}


async def test_a_cancel_is_indexed_by_whoever_appends_it(store):
    thread = await store.create(Origin(), waiting_events())
    cancelled = await store.append(thread, stamped([Cancelled(user="bob")], AT))
    assert await listed_all(store, ["cancelled"]) == []  # an append alone leaves the index behind
    await store.index(cancelled)
    assert await listed_all(store, ["cancelled"]) == [thread.id]
    assert await listed_all(store, ["waiting_for_approval"]) == []


async def test_an_older_version_never_moves_a_thread_back(store):
    """Index updates may arrive out of order (on a cluster the index is another shard):
    the newest version wins whatever the order."""
    thread = await store.create(Origin(), waiting_events())
    request = thread.events[-1]
    approved = await store.append(thread, stamped([HumanResponse(user="bob", approval_id=request.approval_id,
                                                                 approve=True)], AT))
    await store.index(approved)  # running
    await store.index(thread)  # late: the version before the approval
    assert await listed_all(store, ["running"]) == [thread.id]
    assert await listed_all(store, ["waiting_for_approval"]) == []


async def test_a_crash_between_an_append_and_the_index_leaves_it_where_the_sweep_looks(store):
    """A person's approval stored, then the process died before indexing or kicking: the
    thread is still listed as waiting (active), where the sweep loads it and finds it running."""
    thread = await store.create(Origin(), waiting_events())
    request = thread.events[-1]
    await store.append(thread, stamped([HumanResponse(user="bob", approval_id=request.approval_id,
                                                      approve=True)], AT))
    [listed] = await listed_all(store, ["waiting_for_approval"])
    assert (await store.load(listed)).status() == "running"


async def test_a_release_that_finds_more_appended_indexes_what_it_ran(store):
    """The run re-runs a thread whose release returned more events; its next release
    indexes the newer version."""
    thread = await store.create(Origin(), [hello()])
    claimed = await store.claim(thread.id, "run", 2000)
    await store.append(thread, stamped([hello("more")], AT))  # a person, while it is held
    latest = await store.release(claimed, "run")
    assert latest.version == 2
    assert await listed_all(store, ["running"]) == [thread.id]
    await finish(store, latest)
    assert await listed_all(store, ["done"]) == [thread.id] and await listed_all(store, ["running"]) == []


# --- paging ---------------------------------------------------------------------------------


async def test_pages_have_no_duplicates_no_gaps_and_no_cursor_on_the_last(store, backend):
    ids = []
    for n in range(23):
        ids.append((await store.create(Origin(), [hello(f"t{n}"), DoneForNow(message="ok")])).id)
        await backend.elapse(0.002)  # Redis orders by wall time
    for statuses in (None, ["done"]):
        seen, cursor, pages = [], None, 0
        while True:
            page, cursor = await store.listed(statuses, 5, cursor)
            assert len(page) <= 5
            seen += page
            pages += 1
            if cursor is None:
                break
        assert seen == ids[::-1] and pages == 5


async def test_a_thread_that_moves_while_paging_is_not_listed_twice(store, backend):
    ids = []
    for n in range(10):
        ids.append((await store.create(Origin(), [hello(f"t{n}")])).id)
        await backend.elapse(0.002)
    first, cursor = await store.listed(None, 4)
    await store.release(await store.load(first[0]), "someone")  # moves to the top meanwhile
    await store.release(await store.load(ids[0]), "someone")  # the oldest, not seen yet: moves up
    rest = []
    while cursor is not None:
        page, cursor = await store.listed(None, 4, cursor)
        rest += page
    seen = first + rest
    assert len(seen) == len(set(seen)) and set(seen) == set(ids) - {ids[0]}


async def test_a_cursor_that_is_not_one_is_refused(store):
    with pytest.raises(ValueError):
        await store.listed(None, 5, "!!not a cursor")


async def test_an_exact_page_has_no_next(store):
    for n in range(4):
        await store.create(Origin(), [hello(f"t{n}")])
    page, cursor = await store.listed(["running"], 4)
    assert len(page) == 4 and cursor is None
    assert await store.listed(["done"], 4) == ([], None)


# --- retention ------------------------------------------------------------------------------


async def test_finished_threads_are_found_by_age_and_removed_with_their_keys(store, backend):
    old = await finish(store, await store.create(Origin(), [hello("old")]))
    # Real seconds on Redis: "young" must stay younger than the cut until it is asked (a
    # loaded machine takes a while between two commands), "old" older.
    await backend.elapse(1.5)
    young = await finish(store, await store.create(Origin(), [hello("young")]))
    active = await store.create(Origin(), waiting_events())
    assert await store.finished(1.0, 10) == [(old.id, old.version)]
    assert {i for i, _ in await store.finished(0, 10)} == {old.id, young.id}
    assert await store.remove(old.id, old.version) == "removed"
    with pytest.raises(ThreadNotFound):
        await store.load(old.id)
    await store.unindex(old.id)
    assert await listed_all(store, None) == [active.id, young.id]
    assert await store.finished(1.0, 10) == []
    assert await store.remove(old.id, old.version) == "gone"


async def test_a_thread_that_moved_on_or_is_held_is_kept_and_indexed_again(store, backend):
    thread = await finish(store, await store.create(Origin(), [hello()]))
    late = await store.append(thread, stamped([hello("a late reply")], AT))  # not indexed yet
    assert await store.remove(thread.id, thread.version) == "kept"
    assert (await store.load(thread.id)).version == late.version
    assert await listed_all(store, ["running"]) == [thread.id]  # indexed again from what is stored
    done = await finish(store, late)
    await store.lease(thread.id, "a run", 2000)
    assert await store.remove(thread.id, done.version) == "kept"


async def test_a_compacted_thread_reads_the_same_and_takes_a_late_reply(store, backend):
    origin = Origin(channel="slack", slack_channel="C1", slack_thread_ts="1.5")
    thread = await store.create(origin, stamped([hello("ship it"), ListGitTags()], AT))
    thread = await finish(store, thread)
    await backend.elapse(0.3)
    assert await store.compactable(0.25, 10) == [thread.id]
    assert await store.compact(thread.id)
    assert await store.compactable(0, 10) == []
    assert not await store.compact(thread.id)  # once
    assert await store.load(thread.id) == thread
    assert await store.refresh(thread) == thread
    claimed = await store.claim(thread.id, "run", 2000)
    assert claimed == thread
    assert await store.release(claimed, "run") == thread
    later = await store.append(thread, stamped([hello("one more thing")], AT))
    assert await store.load(thread.id) == later and later.version == thread.version + 1
    assert [e.type for e in (await store.refresh(thread)).events] == [e.type for e in later.events]


async def test_compaction_leaves_active_and_held_threads_alone(store, backend):
    thread = await finish(store, await store.create(Origin(), [hello()]))
    await store.lease(thread.id, "a run", 2000)
    assert not await store.compact(thread.id)
    assert await store.compactable(0, 10) == [thread.id]  # another time
    running = await store.append(thread, stamped([hello("again")], AT))
    await store.index(running)
    assert await store.compactable(0, 10) == []
    assert await store.load(thread.id) == running


async def test_a_compacted_thread_is_removed_like_any_other(store, backend):
    thread = await finish(store, await store.create(Origin(), [hello()]))
    assert await store.compact(thread.id)
    assert await store.remove(thread.id, thread.version) == "removed"
    with pytest.raises(ThreadNotFound):
        await store.load(thread.id)


async def test_a_compacted_thread_is_expanded_when_a_run_finishes_it(store, backend):
    thread = await finish(store, await store.create(Origin(), [hello()]))
    await backend.elapse(0.3)
    assert await store.compact(thread.id)
    claimed = await store.claim(thread.id, "run", 2000)
    again = await store.finish(claimed, stamped([DoneForNow(message="again")], AT), "run")
    assert again.version == thread.version + 1 and await store.load(thread.id) == again
    assert await store.claim(thread.id, "another-run", 2000) == again  # let go
    assert await listed_all(store, ["done"]) == [thread.id]
