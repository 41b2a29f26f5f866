"""Inbox: the same cases against MemoryInbox and RedisInbox."""

from __future__ import annotations

import asyncio
import sys

import pytest

SCOPE = "slack:C1:1700000000.000100"


async def test_a_message_that_may_not_start_a_thread_leaves_its_conversation_unbound(inbox):
    assert await inbox.receive(SCOPE, "Ev1", 60, None) == (True, None, False)
    assert await inbox.receive(SCOPE, "Ev1", 60, None) == (False, None, False)  # a repeat, still unbound
    assert await inbox.receive(SCOPE, "Ev2", 60, "t1") == (True, "t1", True)  # a later one may start it


async def test_the_first_message_binds_its_conversation_once(inbox):
    assert await inbox.receive(SCOPE, "Ev1", 60, "t1") == (True, "t1", True)
    assert await inbox.receive(SCOPE, "Ev2", 60, "t2") == (True, "t1", False)  # a reply: bound already
    assert await inbox.receive(SCOPE, "Ev3", 60, None) == (True, "t1", False)
    assert await inbox.receive("slack:C1:other", "Ev1", 60, "t3") == (True, "t3", True)  # per conversation


async def test_a_repeat_delivery_is_not_fresh_but_still_names_the_thread(inbox):
    assert await inbox.receive(SCOPE, "Ev1", 60, "t1") == (True, "t1", True)
    assert await inbox.receive(SCOPE, "Ev1", 60, "t9") == (False, "t1", False)
    assert await inbox.receive(SCOPE, "Ev1", 60, None) == (False, "t1", False)


async def test_forget_lets_a_retry_of_the_same_message_count(inbox):
    assert await inbox.receive(SCOPE, "Ev1", 60, "t1") == (True, "t1", True)
    await inbox.forget(SCOPE, "Ev1")
    # Storing the message failed after receive(): the binding stays, the delivery counts again.
    assert await inbox.receive(SCOPE, "Ev1", 60, "t2") == (True, "t1", False)
    await inbox.forget(SCOPE, "never-seen")  # forgetting what was never marked is fine


async def test_a_delivery_mark_expires(inbox, backend):
    assert await inbox.receive(SCOPE, "Ev1", 1, "t1") == (True, "t1", True)
    await backend.elapse(1.2)
    assert await inbox.receive(SCOPE, "Ev1", 1, "t2") == (True, "t1", False)


async def test_first_messages_racing_start_one_thread(inbox):
    results = await asyncio.gather(*(inbox.receive(SCOPE, f"Ev{i}", 60, f"t{i}") for i in range(10)))
    assert all(fresh for fresh, _, _ in results)
    assert len({thread for _, thread, _ in results}) == 1
    assert sum(started for *_, started in results) == 1


async def test_a_call_sent_again_is_fresh_but_a_redelivery_is_not(inbox, monkeypatch):
    """Each call marks the delivery with its own token: the same call sent again (after a
    broken connection; its first send ran) finds its own token and is still fresh."""
    adapter = sys.modules[type(inbox).__module__]
    monkeypatch.setattr(adapter, "new_id", lambda: "call-1")
    assert await inbox.receive(SCOPE, "Ev1", 60, "t1") == (True, "t1", True)
    assert await inbox.receive(SCOPE, "Ev1", 60, "t1") == (True, "t1", True)  # resent
    monkeypatch.setattr(adapter, "new_id", lambda: "call-2")
    assert await inbox.receive(SCOPE, "Ev1", 60, "t2") == (False, "t1", False)  # redelivered


async def test_a_resent_call_that_found_the_conversation_bound_did_not_start_it(inbox, monkeypatch):
    assert await inbox.receive(SCOPE, "Ev1", 60, "t1") == (True, "t1", True)
    monkeypatch.setattr(sys.modules[type(inbox).__module__], "new_id", lambda: "call-7")
    assert await inbox.receive(SCOPE, "Ev2", 60, "t2") == (True, "t1", False)
    assert await inbox.receive(SCOPE, "Ev2", 60, "t2") == (True, "t1", False)  # resent


async def test_links_keep_the_first_binding(inbox):
    assert await inbox.lookup("approval:a1") is None
    assert await inbox.link("approval:a1", "C1:1.0") == "C1:1.0"
    assert await inbox.link("approval:a1", "C1:2.0") == "C1:1.0"
    assert await inbox.lookup("approval:a1") == "C1:1.0"
    assert await inbox.lookup("approval:a2") is None


async def test_racing_links_agree_on_one_winner(inbox):
    results = await asyncio.gather(*(inbox.link("slack:C1:1.0", f"t{i}") for i in range(10)))
    assert len(set(results)) == 1 and await inbox.lookup("slack:C1:1.0") == results[0]


@pytest.mark.parametrize("name", ["plain", "with:colons:and{braces}"])
async def test_names_are_kept_apart(inbox, name):
    await inbox.link(name, "v1")
    await inbox.link(name + "x", "v2")
    assert (await inbox.lookup(name), await inbox.lookup(name + "x")) == ("v1", "v2")


# --- what goes with a thread ------------------------------------------------------------------


async def test_drop_deletes_what_was_bound_to_the_thread_and_nothing_else(inbox):
    _, bound, started = await inbox.receive("slack:C1:1.0", "m1", 60, "thread-a")
    assert started and bound == "thread-a"
    await inbox.link("email:msg:<a@x>", "thread-a", "thread-a")
    await inbox.link("slack:approval-message:ap1", "1.5", "thread-a")
    await inbox.link("email:msg:<shared@x>", "thread-b", "thread-b")
    assert await inbox.link("email:msg:<shared@x>", "thread-a", "thread-a") == "thread-b"  # b's, not a's
    await inbox.receive("slack:C2:2.0", "m1", 60, "thread-b")
    await inbox.link("unowned", "x")
    assert await inbox.drop("thread-a") == 3
    for name in ("email:msg:<a@x>", "slack:approval-message:ap1"):
        assert await inbox.lookup(name) is None
    assert await inbox.lookup("email:msg:<shared@x>") == "thread-b"
    assert await inbox.lookup("unowned") == "x"
    # the conversation is unbound: a new message there may start a new thread
    fresh, bound, started = await inbox.receive("slack:C1:1.0", "m2", 60, "thread-c")
    assert fresh and bound == "thread-c" and started
    assert (await inbox.receive("slack:C2:2.0", "m2", 60, None))[1] == "thread-b"
    assert await inbox.drop("thread-a") == 0


async def test_a_kept_value_is_read_until_it_expires_and_a_new_one_replaces_it(inbox, backend):
    await inbox.keep("email:sent:<a@x>", "first", 60)
    assert await inbox.lookup("email:sent:<a@x>") == "first"
    await inbox.keep("email:sent:<a@x>", "second", 1)  # sent again: the newer text wins
    assert await inbox.lookup("email:sent:<a@x>") == "second"
    assert await inbox.link("email:sent:<a@x>", "linked") == "second"  # bound, as link sees it
    await backend.elapse(1.2)
    assert await inbox.lookup("email:sent:<a@x>") is None
    assert await inbox.lookup("email:sent:<never@x>") is None
