"""Personal API tokens, one-time sign-in links and signed-out sessions against a real Redis:
only hashes are stored, a link signs in once, and revoked or expired credentials do nothing."""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime, timedelta

import pytest

from bot.stores.credentials import RedisCredentials, TokenInfo
from bot.stores.keys import Keys

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


def test_stored_names_are_unchanged():
    """Data stored by earlier versions must still be found: these strings never change."""
    keys = Keys("deploybot")
    assert keys.api_token("ab12") == "deploybot:{api-tokens}:ab12"
    assert keys.api_tokens() == "deploybot:{api-tokens}"
    assert keys.sign_in_link("f00") == "deploybot:sign-in:f00"
    assert keys.ended_session("s1") == "deploybot:session-ended:s1"
