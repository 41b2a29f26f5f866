"""Stop-the-line freezes: the same cases against MemoryFreezes and RedisFreezes, both on a
clock moved by hand (the store, not Redis, decides what has expired)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from bot.adapters.redis.keys import Keys
from bot.core.freeze_windows import ALL, active, stop_the_line, weekly
from bot.testing.memory import MemoryFreezes

SINCE = datetime(2026, 11, 5, 9, 30, tzinfo=UTC)


class Clock:
    def __init__(self) -> None:
        self.now = SINCE

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **delta: float) -> None:
        self.now += timedelta(**delta)


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture(params=["memory", pytest.param("redis", marks=pytest.mark.redis)])
def freezes(request: pytest.FixtureRequest, clock: Clock) -> Any:
    if request.param == "memory":
        return MemoryFreezes(clock)
    from bot.adapters.redis.freezes import RedisFreezes

    return RedisFreezes(request.getfixturevalue("redis"), Keys(), clock)


def stop(scope: str = "production", until: datetime | None = None, reason: str = "incident 4711", by: str = "alice"):
    return stop_the_line(scope, reason=reason, set_by=by, since=SINCE, until=until)


async def test_set_read_and_lift(freezes):
    assert await freezes.current() == []
    await freezes.set(stop())
    assert await freezes.current() == [stop()]
    assert await freezes.lift("production")
    assert await freezes.current() == []
    assert not await freezes.lift("production")  # nothing left to lift


async def test_one_freeze_per_scope_and_all_is_its_own_scope(freezes):
    await freezes.set(stop("staging"))
    await freezes.set(stop("production"))
    await freezes.set(stop(ALL, reason="bad release"))
    await freezes.set(stop("production", reason="db migration", by="bob"))  # replaces alice's
    assert await freezes.current() == [
        stop(ALL, reason="bad release"), stop("production", reason="db migration", by="bob"), stop("staging"),
    ]
    assert await freezes.lift(ALL)  # lifts the one for all, not those for single environments
    assert [f.scope for f in await freezes.current()] == ["production", "staging"]
    assert not await freezes.lift("qa")


async def test_a_freeze_past_its_until_is_gone(freezes, clock):
    until = SINCE + timedelta(hours=2)
    await freezes.set(stop("production", until=until))
    await freezes.set(stop("staging"))
    clock.advance(hours=1, minutes=59)
    assert await freezes.current() == [stop("production", until=until), stop("staging")]
    clock.advance(minutes=1)
    assert await freezes.current() == [stop("staging")]
    clock.now = SINCE  # cleaned up when read: not back even if the clock were
    assert await freezes.current() == [stop("staging")]


async def test_lifting_an_expired_freeze_lifts_nothing(freezes, clock):
    await freezes.set(stop(until=SINCE + timedelta(minutes=5)))
    clock.advance(minutes=5)
    assert not await freezes.lift("production")
    assert await freezes.current() == []


async def test_what_is_read_back_freezes_deploys(freezes, clock):
    await freezes.set(stop(ALL, until=SINCE + timedelta(hours=1)))
    hit = active(await freezes.current(), "production", clock())
    assert hit is not None
    assert (hit.reason, hit.set_by, hit.until) == ("incident 4711", "alice", SINCE + timedelta(hours=1))
    assert hit.until.tzinfo is not None


async def test_only_stop_the_line_freezes_are_stored(freezes):
    weekend = weekly(["production"], "Fri 16:00", "Mon 08:00", reason="weekend")
    with pytest.raises(ValueError, match="only stop-the-line freezes are stored"):
        await freezes.set(weekend)
    assert await freezes.current() == []


async def test_the_hash_holds_json_by_scope(redis, clock):
    from bot.adapters.redis.freezes import RedisFreezes

    keys = Keys("other")
    store = RedisFreezes(redis, keys, clock)
    await store.set(stop(until=SINCE + timedelta(hours=1)))
    assert await redis.hkeys("other:freezes") == [b"production"]
    assert await RedisFreezes(redis, Keys(), clock).current() == []  # the prefix is kept apart
    # A freeze set again while an expired one is read is not cleaned up with it.
    clock.advance(hours=2)
    raw = await redis.hget("other:freezes", "production")
    await store.set(stop(reason="again"))
    from bot.adapters.redis.freezes import _DROP_IF_SAME

    assert await redis.eval(_DROP_IF_SAME, 1, "other:freezes", "production", raw) == 0
    assert await store.current() == [stop(reason="again")]
