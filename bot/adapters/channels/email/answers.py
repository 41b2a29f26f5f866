"""How the channel answers a mail it took or refused, and which thread a reply belongs to."""

from __future__ import annotations

import logging

from bot.adapters.channels.email import names, proof, render, sending
from bot.adapters.channels.email.mailbox import Mailbox
from bot.adapters.channels.email.parse import Inbound
from bot.adapters.channels.email.render import short
from bot.core.thread import Thread

log = logging.getLogger(__name__)
Answer = tuple[str, str]  # (status, detail): what the endpoint answers the inbound-mail service


async def accepted(channel: Mailbox, mail: Inbound, thread_id: str) -> Answer:
    """`mail` was recorded in `thread_id`: replies to it find the thread, and a worker takes it."""
    await channel.inbox.link(names.email_message(mail.message_id), thread_id, thread_id)
    await channel.kick(thread_id)
    return "accepted", thread_id


async def refuse(
    channel: Mailbox, mail: Inbound, why: str, thread: Thread | None = None, tell: bool = False
) -> Answer:
    """Nothing is appended; an allowed sender (or, with `tell`, one whose approval code
    proved the address) is told why, anyone else only logged."""
    log.warning("email: refused %s from %s: %s", short(mail.message_id), short(mail.sender), why)
    if tell or proof.is_allowed(channel, mail.sender) or proof.is_approver(channel, mail.sender):
        await sending.send(channel, thread, mail.sender, lambda: render.message(
            channel.sender, mail.sender, render.reply_subject(mail.subject),
            f"I did not act on your message: {why}.", in_reply_to=mail.message_id,
        ), link=False)
    return "refused", why


async def thread_of(channel: Mailbox, mail: Inbound) -> str | None:
    """The thread of the newest referenced message the bot knows, In-Reply-To first: at
    most parse.MAX_REFERENCES lookups (the parser keeps no more)."""
    for ref in mail.references:
        if thread_id := await channel.inbox.lookup(names.email_message(ref)):
            return thread_id
    return None
