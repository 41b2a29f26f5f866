"""The outbox and the store's clock against a real server and a three-master cluster: each
script keeps to one slot, and a message taken is held from the next taker until its hold lapses."""

from __future__ import annotations

import asyncio
import time

from bot.adapters.redis.connect import server_time
from bot.adapters.redis.outbox import RedisOutbox
from bot.runtime.ports import Outgoing

MAIL = Outgoing("<m1@example.com>", "t1", "bob@example.com", "Subject: hi\r\n\r\n\xe9t\xe9\r\n".encode())


async def test_a_message_is_held_while_tried_then_due_to_the_next_taker(redis):
    outbox = RedisOutbox(redis)
    await outbox.put(MAIL, hold=0.2)
    assert await outbox.due(hold=5, count=10) == []  # being tried by whoever put it
    await asyncio.sleep(0.3)  # its sender died: the hold lapsed
    assert await outbox.due(hold=5, count=10) == [MAIL]
    assert await outbox.due(hold=5, count=10) == []  # taken: held from another taker


async def test_a_message_tried_again_keeps_its_attempts_and_reason_and_a_sent_one_is_gone(redis):
    outbox = RedisOutbox(redis)
    await outbox.put(MAIL, hold=5)
    failed = Outgoing(MAIL.key, MAIL.thread_id, MAIL.to, MAIL.raw, attempts=2, reason="SMTPConnectError: refused")
    await outbox.again(failed, after=0)
    assert await outbox.due(hold=5, count=10) == [failed]
    await outbox.hold(MAIL.key, 0)
    await outbox.sent(MAIL.key)
    assert await outbox.due(hold=5, count=10) == []
    await outbox.hold(MAIL.key, 0)  # a hold on a message already sent brings nothing back
    assert await outbox.due(hold=5, count=10) == []


async def test_the_store_tells_its_time(redis):
    now = await server_time(redis)()
    assert abs(now - time.time()) < 5  # the same host's clock, here
