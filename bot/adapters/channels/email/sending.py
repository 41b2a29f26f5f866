"""How one mail goes out: built, remembered (so replies find the thread and their new text is
read against it), and sent in the background. A mail that cannot be built or sent is a log
line and a delivery_failed event on its thread; it never stops the other mails of the same
event.

A mail that must go out (an approval request: without it nobody is asked) is kept in the
outbox before it is first tried, held there while a process tries it, and removed once sent:
every process running the channel sends what is due there, at start and every FLUSH_EVERY
seconds, so a mail whose process died (SMTP down, the worker killed while it retried) is sent
by the next one. It is tried ATTEMPTS times (each with the SMTP client's own retries), the last
reason kept; then the thread says it could not be sent."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import replace
from email import message_from_bytes, policy
from email.message import EmailMessage

from bot.adapters.channels.email import names, render, reply
from bot.adapters.channels.email.mailbox import Mailbox
from bot.adapters.channels.email.render import short
from bot.core import wording
from bot.core.thread import Thread
from bot.runtime.ports import Outgoing

log = logging.getLogger(__name__)
SENT_TTL = 30 * 24 * 3600  # what a sent mail said is kept a month: replies are read against it
ATTEMPTS = 5  # tries of a kept mail before its thread is told it could not be sent
HOLD = 10.0  # seconds a kept mail being tried is held from other processes (renewed meanwhile)
AGAIN_AFTER = 30.0  # seconds between tries of a kept mail
FLUSH_EVERY = 5.0  # seconds between looks at the outbox


async def send(
    channel: Mailbox, thread: Thread | None, to: str, build: Callable[[], EmailMessage | None], link: bool = True,
    must: bool = False,
) -> None:
    """Build one mail and hand it to a sending task; with `link`, replies to it find the
    thread; with `must`, it is kept in the outbox until sent. A mail that cannot be built is
    recorded as not delivered."""
    try:
        msg = build()
    except Exception as e:
        log.exception("email to %s could not be built", short(to))
        if thread is not None:
            await _failed(channel, thread, to, f"could not build the email: {type(e).__name__}: {e}")
        return
    if msg is None:
        return
    if link and thread is not None:
        try:
            await channel.inbox.link(names.email_message(str(msg["Message-ID"])), thread.id, thread.id)
        except Exception:  # still worth sending: a reply also names the thread's root or a token
            log.exception("thread %s: could not remember the email to %s", thread.id, short(to))
        try:  # what it says, so a reply's new text is found by it
            await channel.inbox.keep(names.email_sent(str(msg["Message-ID"])), reply.Sent.of(msg).dumps(), SENT_TTL)
        except Exception:  # a reply is still read, by the language-independent rules
            log.exception("thread %s: could not keep the text of the email to %s", thread.id, short(to))
    kept = await _keep(channel, thread, to, msg) if must else None
    channel.deliveries.spawn(_deliver(channel, thread, msg) if kept is None else _deliver_kept(channel, kept, msg))


async def _deliver(channel: Mailbox, thread: Thread | None, msg: EmailMessage) -> None:
    try:
        await channel.smtp.send(msg)
    except Exception as e:  # the thread keeps its events; the failure is recorded beside them
        log.error("email to %s could not be delivered: %s", msg["To"], e)
        if thread is not None:
            await _failed(channel, thread, str(msg["To"]), f"{type(e).__name__}: {e}")


async def _keep(channel: Mailbox, thread: Thread | None, to: str, msg: EmailMessage) -> Outgoing | None:
    """The mail as kept in the outbox, or None (no outbox, or it could not be written: the
    mail is still sent now, as any other)."""
    if channel.outbox is None or thread is None:
        return None
    kept = Outgoing(str(msg["Message-ID"]), thread.id, render.address(to), bytes(msg))
    try:
        await channel.outbox.put(kept, HOLD)
    except Exception:
        log.exception("thread %s: could not keep the email to %s in the outbox", thread.id, short(to))
        return None
    return kept


async def flush(channel: Mailbox) -> int:
    """Send the kept mails that are due (their process died, or their next try came); how many."""
    if channel.outbox is None:
        return 0
    due = await channel.outbox.due(HOLD, 20)
    for kept in due:
        msg = message_from_bytes(kept.raw, policy=policy.default)
        assert isinstance(msg, EmailMessage)  # the default policy parses into one
        channel.deliveries.spawn(_deliver_kept(channel, kept, msg))
    return len(due)


async def flushing(channel: Mailbox) -> None:
    """`flush` now and every FLUSH_EVERY seconds, for as long as the channel runs."""
    while True:
        try:
            await flush(channel)
        except Exception as e:  # the store away: the mails wait in it
            log.warning("looking at the outbox failed: %s", e)
        await asyncio.sleep(FLUSH_EVERY)


async def _deliver_kept(channel: Mailbox, kept: Outgoing, msg: EmailMessage) -> None:
    assert channel.outbox is not None
    holding = asyncio.create_task(_hold(channel, kept.key))
    try:
        await channel.smtp.send(msg)
    except Exception as e:
        holding.cancel()
        await _not_yet(channel, replace(kept, attempts=kept.attempts + 1, reason=f"{type(e).__name__}: {e}"))
        return
    holding.cancel()
    try:
        await channel.outbox.sent(kept.key)
    except Exception:  # it may go out once more: better twice than never
        log.exception("thread %s: the email to %s was sent but is still in the outbox", kept.thread_id, short(kept.to))


async def _hold(channel: Mailbox, key: str) -> None:
    assert channel.outbox is not None
    while True:
        await asyncio.sleep(HOLD / 3)
        try:
            await channel.outbox.hold(key, HOLD)
        except Exception as e:  # another process may try it too: sent twice at worst
            log.warning("holding an email in the outbox failed: %s", e)


async def _not_yet(channel: Mailbox, kept: Outgoing) -> None:
    """A kept mail's try failed: tried again later, or, after ATTEMPTS, the thread is told."""
    assert channel.outbox is not None
    try:
        if kept.attempts < ATTEMPTS:
            log.warning("%s", wording.mail_retrying(short(kept.to), kept.attempts, kept.reason))
            await channel.outbox.again(kept, AGAIN_AFTER)
            return
        log.error("%s", wording.mail_given_up(short(kept.to), kept.attempts, kept.reason))
        await channel.outbox.sent(kept.key)
    except Exception:  # still kept: tried again when its hold lapses
        log.exception("thread %s: keeping the email to %s in the outbox failed", kept.thread_id, short(kept.to))
        return
    reason = f"after {kept.attempts} attempts: {kept.reason}"  # first: a long reason is cut short
    await channel.deliveries.failed(kept.thread_id, kept.to, reason, f"an email to {short(kept.to)}")


async def _failed(channel: Mailbox, thread: Thread, to: str, reason: str) -> None:
    await channel.deliveries.failed(thread.id, render.address(to), reason, f"an email to {short(to)}")
