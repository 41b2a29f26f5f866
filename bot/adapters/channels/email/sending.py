"""How one mail goes out: built, remembered (so replies find the thread and their new text is
read against it), and sent in the background. A mail that cannot be built or sent is a log
line and a delivery_failed event on its thread; it never stops the other mails of the same
event."""

from __future__ import annotations

import logging
from collections.abc import Callable
from email.message import EmailMessage

from bot.adapters.channels.email import names, render, reply
from bot.adapters.channels.email.mailbox import Mailbox
from bot.adapters.channels.email.render import short
from bot.core.thread import Thread

log = logging.getLogger(__name__)
SENT_TTL = 30 * 24 * 3600  # what a sent mail said is kept a month: replies are read against it


async def send(
    channel: Mailbox, thread: Thread | None, to: str, build: Callable[[], EmailMessage | None], link: bool = True
) -> None:
    """Build one mail and hand it to a sending task; with `link`, replies to it find the
    thread. A mail that cannot be built is recorded as not delivered."""
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
    channel.deliveries.spawn(_deliver(channel, thread, msg))


async def _deliver(channel: Mailbox, thread: Thread | None, msg: EmailMessage) -> None:
    try:
        await channel.smtp.send(msg)
    except Exception as e:  # the thread keeps its events; the failure is recorded beside them
        log.error("email to %s could not be delivered: %s", msg["To"], e)
        if thread is not None:
            await _failed(channel, thread, str(msg["To"]), f"{type(e).__name__}: {e}")


async def _failed(channel: Mailbox, thread: Thread, to: str, reason: str) -> None:
    await channel.deliveries.failed(thread.id, render.address(to), reason, f"an email to {short(to)}")
