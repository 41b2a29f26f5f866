"""Locks and History: the same cases against MemoryEnvironments and RedisEnvironments."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from datetime import UTC, datetime, timedelta

from bot.runtime.ports import DeployRecord, Lock

SINCE = datetime(2026, 11, 5, 9, 30, tzinfo=UTC)
TTL_MS = 300  # Redis variants sleep through TTLs: margins of 40% absorb a busy machine


def lock(owner: str, env: str = "production", reason: str = "deploying backend v1.2.3") -> Lock:
    return Lock(env, owner, reason, SINCE)


def record(n: int, env: str = "production", ok: bool = True, **kw) -> DeployRecord:
    return DeployRecord(env, "backend", f"v1.2.{n}", f"{n:040x}", ok, SINCE + timedelta(minutes=n),
                        kw.get("approved_by"), f"thread-{n}", f"thread-{n}-step", kw.get("url", ""))


# --- Locks ---------------------------------------------------------------------------


async def test_one_holder_at_a_time_and_the_holder_is_named(environments):
    assert await environments.holder("production") is None
    assert await environments.acquire(lock("d1"), TTL_MS) is None
    assert await environments.acquire(lock("d2", reason="other"), TTL_MS) == lock("d1")
    assert await environments.holder("production") == lock("d1")
    assert await environments.acquire(lock("d1"), TTL_MS) is None  # its owner has it already
    assert await environments.acquire(lock("d2", env="staging"), TTL_MS) is None  # per environment


async def test_only_the_owner_renews_or_releases(environments):
    await environments.acquire(lock("d1"), TTL_MS)
    assert not await environments.renew("production", "d2", TTL_MS)
    assert not await environments.release("production", "d2")
    assert await environments.holder("production") == lock("d1")
    assert await environments.renew("production", "d1", TTL_MS)
    assert await environments.release("production", "d1")
    assert await environments.holder("production") is None
    assert not await environments.release("production", "d1")  # gone already
    assert not await environments.renew("production", "d1", TTL_MS)


async def test_release_without_an_owner_lifts_whoever_holds_it(environments):
    await environments.acquire(lock("manual:alice"), None)
    assert await environments.release("production", None)
    assert await environments.holder("production") is None
    assert not await environments.release("production", None)


async def test_a_dead_holders_lock_expires(environments, backend):
    await environments.acquire(lock("d1"), TTL_MS)
    await backend.elapse(TTL_MS * 1.5 / 1000)
    assert await environments.holder("production") is None
    assert await environments.acquire(lock("d2"), TTL_MS) is None


async def test_renewing_keeps_the_lock(environments, backend):
    await environments.acquire(lock("d1"), TTL_MS)
    await backend.elapse(TTL_MS * 0.6 / 1000)
    assert await environments.renew("production", "d1", TTL_MS)
    await backend.elapse(TTL_MS * 0.6 / 1000)
    assert await environments.holder("production") == lock("d1")


async def test_taking_its_own_lock_again_extends_it(environments, backend):
    await environments.acquire(lock("d1"), TTL_MS)
    await backend.elapse(TTL_MS * 0.6 / 1000)
    assert await environments.acquire(lock("d1"), TTL_MS) is None
    await backend.elapse(TTL_MS * 0.6 / 1000)
    assert await environments.acquire(lock("d2"), TTL_MS) == lock("d1")


async def test_manual_locks_do_not_expire(environments, backend):
    assert await environments.acquire(lock("manual:alice", reason="freeze"), None) is None
    await backend.elapse(TTL_MS * 1.5 / 1000)
    assert await environments.holder("production") == lock("manual:alice", reason="freeze")
    assert await environments.acquire(lock("d1"), TTL_MS) == lock("manual:alice", reason="freeze")


async def test_racing_deploys_get_one_lock(environments):
    results = await asyncio.gather(*(environments.acquire(lock(f"d{i}"), TTL_MS) for i in range(10)))
    assert results.count(None) == 1
    winner = await environments.holder("production")
    assert all(r == winner for r in results if r is not None)


# --- History -------------------------------------------------------------------------


async def test_history_is_newest_first_per_environment(environments):
    for n in range(1, 4):
        await environments.record(record(n))
    await environments.record(record(9, env="staging", ok=False, approved_by="bob", url="https://ci/9"))
    assert await environments.recent("production", 10) == [record(3), record(2), record(1)]
    assert await environments.recent("production", 2) == [record(3), record(2)]
    assert await environments.recent("staging", 10) == [
        record(9, env="staging", ok=False, approved_by="bob", url="https://ci/9")]
    assert await environments.recent("development", 10) == []


async def test_history_keeps_every_record_until_it_expires(environments):
    """No cap on the number (DEPLOY_HISTORY_RETENTION, default forever): expire() takes the
    oldest off, by age, a batch at a time, and a dry run only counts them."""
    for n in range(1005):
        await environments.record(record(n))
    kept = await environments.recent("production", 2000)
    assert len(kept) == 1005 and kept[0] == record(1004) and kept[-1] == record(0)
    cutoff = record(10).at  # records 0..9 are older
    assert await environments.expire("production", cutoff, 4, dry_run=True) == 4
    assert len(await environments.recent("production", 2000)) == 1005
    assert await environments.expire("production", cutoff, 4) == 4
    assert await environments.expire("production", cutoff, 100) == 6
    assert await environments.expire("production", cutoff, 100) == 0
    kept = await environments.recent("production", 2000)
    assert len(kept) == 995 and kept[-1] == record(10)


async def test_history_pages_with_a_cursor_without_duplicates_or_gaps(environments):
    for n in range(23):
        await environments.record(record(n))
    seen, cursor, pages = [], None, 0
    while True:
        page, cursor = await environments.page("production", 5, cursor)
        seen += page
        pages += 1
        if cursor is None:
            break
        await environments.record(record(100 + pages))  # pushed meanwhile: not in this walk
    assert [r.tag for r in seen] == [f"v1.2.{n}" for n in range(22, -1, -1)] and pages == 5
    newest, cursor = await environments.page("production", 5)
    await environments.expire("production", record(2).at, 100)  # the oldest go meanwhile
    rest = []
    while cursor is not None:
        page, cursor = await environments.page("production", 5, cursor)
        rest += page
    assert [r.tag for r in newest + rest][-1] == "v1.2.2"
    assert len({r.deploy_id for r in newest + rest}) == len(newest + rest)


async def test_history_pages_by_service_and_a_foreign_cursor_is_refused(environments):
    import pytest

    for n in range(10):
        await environments.record(replace(record(n), service=("api", "web")[n % 2], deploy_id=f"d{n}"))
    first, cursor = await environments.page("production", 3, service="web")
    second, cursor2 = await environments.page("production", 3, cursor, service="web")
    assert [r.deploy_id for r in first + second] == ["d9", "d7", "d5", "d3", "d1"] and cursor2 is None
    with pytest.raises(ValueError):
        await environments.page("production", 3, "not-a-cursor")


async def test_history_per_service_and_faulty_marks(environments):
    api = [replace(record(n), service="api", deploy_id=f"api-{n}") for n in range(3)]
    web = [replace(record(n), service="web", deploy_id=f"web-{n}") for n in range(3, 5)]
    for r in (api[0], web[0], api[1], web[1], api[2]):
        await environments.record(r)
    assert await environments.recent("production", 10, service="api") == api[::-1]
    assert await environments.recent("production", 1, service="web") == [web[1]]
    assert await environments.recent("production", 2) == [api[2], web[1]]
    await environments.mark_faulty("production", "api-1")
    assert [r.faulty for r in await environments.recent("production", 10, service="api")] == [False, True, False]
    assert await environments.recent("staging", 10, service="api") == []


async def test_verified_marks_show_when_the_verification_passed_in_every_listing(environments):
    records = [replace(record(n), deploy_id=f"d{n}") for n in range(3)]
    for r in records:
        await environments.record(r)
    assert [r.verified_at for r in await environments.recent("production", 10)] == [None, None, None]
    at = SINCE + timedelta(minutes=10)
    await environments.mark_verified("production", "d1", at)
    assert [r.verified_at for r in await environments.recent("production", 10)] == [None, at, None]
    assert [r.verified_at for r in await environments.recent("production", 10, service="backend")] == [None, at, None]
    page, _ = await environments.page("production", 2, None)
    assert [(r.deploy_id, r.verified_at) for r in page] == [("d2", None), ("d1", at)]
    await environments.mark_faulty("production", "d1")  # both marks hold side by side
    [d1] = [r for r in await environments.recent("production", 10) if r.deploy_id == "d1"]
    assert d1.faulty and d1.verified_at == at
    assert [r.verified_at for r in await environments.recent("staging", 10)] == []


async def test_a_skipped_verification_and_who_verified_early_show_on_the_record(environments):
    records = [replace(record(n), deploy_id=f"d{n}") for n in range(3)]
    for r in records:
        await environments.record(r)
    at = SINCE + timedelta(minutes=10)
    await environments.mark_skipped("production", "d1", at, "alice", "the dashboard is down, checked by hand")
    await environments.mark_verified("production", "d2", at, by="erin")  # "verify now"
    await environments.mark_verified("production", "d0", at)  # its checks held for the whole bake
    listings = [await environments.recent("production", 10), await environments.recent("production", 10, "backend"),
                (await environments.page("production", 10))[0], await environments.since("production", SINCE, 10)]
    for listing in listings:
        d2, d1, d0 = listing
        assert (d1.verification_skipped_at, d1.verification_skipped_by, d1.verification_skip_reason) == (
            at, "alice", "the dashboard is down, checked by hand")
        assert d1.verified_at is None  # skipped is not verified: promotion must not count it
        assert (d2.verified_at, d2.verified_by, d2.verification_skipped_at) == (at, "erin", None)
        assert (d0.verified_at, d0.verified_by, d0.verification_skipped_by) == (at, "", "")


async def test_a_service_lock_and_the_environment_lock(environments):
    api = Lock("production", "d-api", "deploying api v1", SINCE, "api")
    web = Lock("production", "d-web", "deploying web v2", SINCE, "web")
    assert await environments.acquire(api, TTL_MS) is None
    assert await environments.acquire(web, TTL_MS) is None  # services deploy side by side
    assert await environments.acquire(replace(api, owner="d-api-2"), TTL_MS) == api
    assert await environments.holder("production") is None  # nobody holds the environment itself
    assert await environments.holder("production", "api") == api
    manual = Lock("production", "manual:alice", "incident", SINCE)
    assert await environments.acquire(manual, None) is None  # may lock while services deploy
    assert await environments.holder("production", "api") == manual  # in the way of every service
    worker = Lock("production", "d-worker", "deploying worker", SINCE, "worker")
    assert await environments.acquire(worker, TTL_MS) == manual
    assert await environments.held("production", ["api", "web", "worker"]) == [manual, api, web]
    assert not await environments.release("production", "d-api")  # the environment's: not its owner
    assert await environments.release("production", "d-api", "api")
    assert await environments.renew("production", "d-web", TTL_MS, "web")
    assert await environments.release("production", None)
    assert await environments.acquire(worker, TTL_MS) is None
    assert await environments.held("production", ["api", "web", "worker"]) == [web, worker]


async def test_history_since_a_time_reads_back_to_the_window_edge(environments):
    """Delivery metrics read a window of time: newest first, down to `after` (inclusive),
    faulty marks included, at most `limit`; other environments and older records are not read."""
    for n in range(30):
        await environments.record(record(n))
    await environments.record(record(40, env="staging"))
    await environments.mark_faulty("production", "thread-27-step")
    found = await environments.since("production", record(25).at, 100)
    assert [r.tag for r in found] == [f"v1.2.{n}" for n in range(29, 24, -1)]
    assert [r.faulty for r in found] == [False, False, True, False, False]
    assert [r.tag for r in await environments.since("production", record(25).at, 2)] == ["v1.2.29", "v1.2.28"]
    assert await environments.since("production", record(30).at, 100) == []
    assert await environments.since("development", SINCE, 100) == []
