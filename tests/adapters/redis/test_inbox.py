"""The inbox (delivery dedupe, conversation bindings, channel pointers) against a real Redis."""

from __future__ import annotations

import asyncio

import pytest
from redis.asyncio import Redis
from redis.exceptions import ConnectionError as RedisConnectionError

from bot.adapters.redis.inbox import _RECEIVE, RedisInbox
from bot.testing.cluster import free_port

pytestmark = pytest.mark.redis


@pytest.fixture
def inbox(redis) -> RedisInbox:
    return RedisInbox(redis)


async def test_receive_dedupes_deliveries_and_binds_a_conversation_once(inbox):
    assert await inbox.receive("slack:C1:1.0", "Ev1", 60, None) == (True, None, False)  # may not start
    assert await inbox.receive("slack:C1:1.0", "Ev2", 60, "t1") == (True, "t1", True)
    assert await inbox.receive("slack:C1:1.0", "Ev2", 60, "t9") == (False, "t1", False)  # a repeat
    assert await inbox.receive("slack:C1:1.0", "Ev3", 60, "t9") == (True, "t1", False)  # a reply
    await inbox.forget("slack:C1:1.0", "Ev3")
    assert await inbox.receive("slack:C1:1.0", "Ev3", 60, None) == (True, "t1", False)
    keys = inbox.keys
    assert keys.delivery("s", "m").split("}")[0] == keys.conversation("s").split("}")[0]  # one slot


async def test_first_messages_racing_start_one_thread(inbox):
    results = await asyncio.gather(*(inbox.receive("slack:C1:2.0", f"Ev{i}", 60, f"t{i}") for i in range(10)))
    assert len({thread for _, thread, _ in results}) == 1 and sum(started for *_, started in results) == 1


async def test_links_keep_the_first_binding(inbox):
    assert await inbox.lookup("slack:C1:1.0") is None
    results = await asyncio.gather(*(inbox.link("slack:C1:1.0", f"t{i}") for i in range(10)))
    assert len(set(results)) == 1 and await inbox.lookup("slack:C1:1.0") == results[0]


async def test_a_receive_resent_after_a_broken_connection_is_not_taken_for_a_repeat(inbox, redis):
    # What the first send of a resent call leaves behind: the marker with that call's token.
    keys = [inbox.keys.delivery("slack:C1:3.0", "Ev1"), inbox.keys.conversation("slack:C1:3.0")]
    assert await redis.eval(_RECEIVE, 2, *keys, 60, "t1", "call-1") == [1, b"t1", 1]
    assert await redis.eval(_RECEIVE, 2, *keys, 60, "t1", "call-1") == [1, b"t1", 1]  # resent
    assert await redis.eval(_RECEIVE, 2, *keys, 60, "t2", "call-2") == [0, b"t1", 0]  # a redelivery


async def test_the_receive_script_is_reloaded_after_a_server_forgets_it(inbox, redis):
    await redis.script_flush()
    assert await inbox.receive("slack:C1:4.0", "Ev1", 60, "t1") == (True, "t1", True)


async def test_ping_answers_while_the_server_is_up_and_raises_when_it_is_unreachable(inbox):
    await inbox.ping()  # up: answers
    down = RedisInbox(Redis(host="127.0.0.1", port=free_port(), socket_connect_timeout=1))
    try:
        with pytest.raises(RedisConnectionError):
            await down.ping()
    finally:
        await down.redis.aclose()
