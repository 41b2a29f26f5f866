"""Personal API tokens, one-time sign-in links and signed-out sessions against a real Redis:
only hashes are stored, a link signs in once, and revoked or expired credentials do nothing."""

from __future__ import annotations

import asyncio
import hashlib
import secrets
import time
from datetime import UTC, datetime, timedelta

import pytest
from redis.asyncio import Redis

from bot.adapters.redis.credentials import RedisCredentials, TokenInfo
from bot.adapters.redis.keys import Keys

pytestmark = pytest.mark.redis

T0 = datetime(2026, 11, 5, 12, 0, tzinfo=UTC)


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> datetime:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def credentials(redis, clock) -> RedisCredentials:
    return RedisCredentials(redis, clock=clock)


async def everything_stored(redis) -> bytes:
    """Every key and every value in the database, as one blob to search."""
    blob = b""
    async for key in redis.scan_iter(match="*"):
        kind = (await redis.type(key)).decode()
        value = {
            "string": redis.get, "hash": redis.hgetall, "set": redis.smembers,
        }[kind](key)
        blob += key + b"\n" + repr(await value).encode() + b"\n"
    return blob


# --- personal API tokens ----------------------------------------------------------------------------


async def test_create_verify_revoke(credentials, clock):
    token_id, token = await credentials.create("alice", "laptop")
    assert token.startswith(f"dbt_{token_id}_")
    clock.now = T0 + timedelta(minutes=5)
    assert await credentials.verify(token) == TokenInfo(token_id, "alice", "laptop", T0, clock.now)
    assert await credentials.revoke(token_id) is True
    assert await credentials.verify(token) is None
    assert await credentials.revoke(token_id) is False
    assert await credentials.list() == []


async def test_only_a_hash_is_stored(credentials, redis):
    token_id, token = await credentials.create("alice", "laptop")
    await credentials.verify(token)
    code = await credentials.issue_link("alice")
    blob = await everything_stored(redis)
    assert token_id.encode() in blob and b"alice" in blob  # the search does see the store
    secret = token.split("_", 2)[2]
    assert token.encode() not in blob and secret.encode() not in blob
    assert code.encode() not in blob


async def test_wrong_or_forged_tokens_do_not_verify(credentials):
    token_id, token = await credentials.create("alice", "laptop")
    other_id, _ = await credentials.create("bob", "ci")
    forged = f"dbt_{other_id}_{token.split('_', 2)[2]}"  # alice's secret under bob's id
    tampered = token[:-1] + ("A" if token[-1] != "A" else "B")
    for wrong in (forged, tampered, "", "dbt_", token + "x", f"dbt_{token_id}", "Bearer " + token, "nonsense"):
        assert await credentials.verify(wrong) is None, wrong
    assert (await credentials.verify(f"  {token}\n")).person == "alice"  # surrounding blanks are forgiven


async def commands(redis) -> dict[str, int]:
    """Commands the Redis server ran so far, by name (INFO commandstats)."""
    stats = await redis.info("commandstats")
    return {name.removeprefix("cmdstat_"): int(v["calls"]) for name, v in stats.items()}


async def ran(redis, before: dict[str, int]) -> dict[str, int]:
    """Commands run since `before`, but INFO itself."""
    now = await commands(redis)
    return {k: n - before.get(k, 0) for k, n in now.items() if n != before.get(k, 0) and k != "info"}


async def test_a_made_up_token_costs_no_redis_command(credentials, redis):
    token_id, token = await credentials.create("alice", "laptop")
    assert await credentials.verify(token) is not None
    # The first token of the format before checksums reads their hashes, once.
    assert await credentials.verify(f"dbt_{secrets.token_hex(8)}_{secrets.token_urlsafe(32)}") is None
    before = await commands(redis)
    secret = token[21:64]  # dbt_<id>_<secret>_<checksum>
    for made_up in (
        token[:-1] + ("A" if token[-1] != "A" else "B"),  # a wrong checksum
        f"dbt_{token_id}_{secrets.token_urlsafe(32)}_{token[-11:]}",  # a real checksum on another secret
        f"dbt_{secrets.token_hex(8)}_{secrets.token_urlsafe(32)}",  # the format of tokens made before checksums
        f"dbt_{token_id}_{secret}",  # alice's id and secret without their checksum
    ):
        assert await credentials.verify(made_up) is None, made_up
    assert await ran(redis, before) == {}


async def test_tokens_made_before_checksums_still_verify(redis, clock):
    token_id = secrets.token_hex(8)
    token = f"dbt_{token_id}_{secrets.token_urlsafe(32)}"  # as the version before stored it
    keys = Keys()
    await redis.hset(keys.api_token(token_id), mapping={
        "hash": hashlib.sha256(token.encode()).hexdigest(), "person": "bob", "name": "old",
        "created": T0.isoformat(), "last_used": "",
    })
    await redis.sadd(keys.api_tokens(), token_id)
    credentials = RedisCredentials(redis, clock=clock)
    assert (await credentials.verify(token)).person == "bob"
    before = await commands(redis)
    assert await credentials.verify(f"dbt_{token_id}_{secrets.token_urlsafe(32)}") is None  # its id, another secret
    assert await ran(redis, before) == {}
    assert await credentials.revoke(token_id)
    assert await credentials.verify(token) is None


async def test_a_revoked_token_is_looked_up_once(credentials, redis):
    token_id, token = await credentials.create("alice", "laptop")
    assert await credentials.revoke(token_id)
    assert await credentials.verify(token) is None
    before = await commands(redis)
    for _ in range(10):
        assert await credentials.verify(token) is None
    assert await ran(redis, before) == {}


async def test_token_lookups_at_once_are_bounded(redis_url, clock):
    """Many real tokens verified at once take at most LOOKUPS-worth of the pool."""
    name = f"lookups-{secrets.token_hex(4)}"
    client = Redis.from_url(redis_url, client_name=name)
    try:
        credentials = RedisCredentials(client, clock=clock, lookups=2)
        tokens = [(await credentials.create("alice", f"t{i}"))[1] for i in range(20)]
        found = await asyncio.gather(*(credentials.verify(t) for t in tokens * 5))
        assert all(f is not None and f.person == "alice" for f in found)
        clients = await client.client_list()
        assert 1 <= sum(1 for c in clients if c["name"] == name) <= 3  # 2 lookups, and this listing
    finally:
        await client.aclose()


async def test_last_used_follows_each_use(credentials, clock, redis):
    token_id, token = await credentials.create("alice", "laptop")
    assert (await credentials.list("alice"))[0].last_used is None
    for minutes in (1, 7):
        clock.now = T0 + timedelta(minutes=minutes)
        assert (await credentials.verify(token)).last_used == clock.now
        assert (await credentials.list("alice"))[0].last_used == clock.now


async def test_a_token_revoked_while_being_verified_leaves_nothing(credentials, redis):
    token_id, token = await credentials.create("alice", "laptop")
    real_hgetall = redis.hgetall

    async def hgetall_then_revoke(key):
        fields = await real_hgetall(key)
        await credentials.revoke(token_id)
        return fields

    redis.hgetall = hgetall_then_revoke
    try:
        assert await credentials.verify(token) is None
    finally:
        del redis.hgetall
    assert not await redis.exists(credentials.keys.api_token(token_id))


async def test_listing_tokens(credentials, clock):
    a1, _ = await credentials.create("alice", "laptop")
    clock.now = T0 + timedelta(seconds=1)
    b1, _ = await credentials.create("bob", "ci")
    clock.now = T0 + timedelta(seconds=2)
    a2, _ = await credentials.create("alice", "phone")
    assert [(t.token_id, t.name) for t in await credentials.list()] == [(a1, "laptop"), (b1, "ci"), (a2, "phone")]
    assert [t.token_id for t in await credentials.list("alice")] == [a1, a2]
    assert await credentials.list("carol") == []


async def test_a_token_needs_a_person_and_a_name(credentials):
    for person, name in (("", "laptop"), ("alice", " ")):
        with pytest.raises(ValueError):
            await credentials.create(person, name)


# --- one-time sign-in links ----------------------------------------------------------------------


async def test_a_link_signs_in_once(credentials):
    code = await credentials.issue_link("alice")
    assert await credentials.consume_link(code) == "alice"
    assert await credentials.consume_link(code) is None
    assert await credentials.consume_link("") is None and await credentials.consume_link("made-up") is None


async def test_a_link_expires(credentials, redis):
    code = await credentials.issue_link("alice", ttl_seconds=1)
    fresh = await credentials.issue_link("bob", ttl_seconds=600)
    deadline = time.monotonic() + 5
    # Redis drops the expired link (at most a second or two); keys counted on every node
    while len([key async for key in redis.scan_iter()]) > 1:
        assert time.monotonic() < deadline, "the link did not expire"
        await asyncio.sleep(0.1)
    assert await credentials.consume_link(code) is None
    assert await credentials.consume_link(fresh) == "bob"


async def test_two_clicks_racing_on_one_link_sign_in_once(credentials, redis):
    code = await credentials.issue_link("alice")
    results = await asyncio.gather(*(credentials.consume_link(code) for _ in range(20)))
    assert results.count("alice") == 1 and results.count(None) == 19


# --- signed-out sessions ---------------------------------------------------------------------------


async def test_an_ended_session_is_remembered_for_the_rest_of_its_cookie_s_life(credentials, redis):
    assert await credentials.session_ended("s1") is False
    await credentials.end_session("s1", ttl_seconds=3600)
    assert await credentials.session_ended("s1") is True and await credentials.session_ended("s2") is False
    assert 3590 < await redis.ttl(credentials.keys.ended_session("s1")) <= 3600
