"""A mail whose sender is known to be allowed (or proven by a token), recorded in its thread:
a new request, a reply to a thread, or a decision carried by an approval code."""

from __future__ import annotations

import re

from bot.adapters.channels.email import confirmation, names, proof, tokens
from bot.adapters.channels.email.answers import Answer, accepted, refuse, thread_of
from bot.adapters.channels.email.decision import decision
from bot.adapters.channels.email.kind import KIND
from bot.adapters.channels.email.mailbox import Mailbox
from bot.adapters.channels.email.parse import Inbound
from bot.core import authority, standing, wording
from bot.core.events import new_id
from bot.core.thread import Origin, Thread
from bot.runtime.service import Refused


async def handle(channel: Mailbox, mail: Inbound, approval_id: str | None, token_error: str | None) -> Answer:
    if approval_id:
        return await decide(channel, mail, approval_id)
    if token_error:
        return await refuse(channel, mail, token_error)
    thread_id = await thread_of(channel, mail)
    if thread_id is None:
        return await start(channel, mail)
    try:
        thread = await channel.service.get(thread_id)
    except Refused as e:
        return await refuse(channel, mail, e.message)
    pending = thread.pending_approval()
    if pending and decision(mail.text)[0]:
        return await refuse(channel, mail, "an approval needs the approval code: reply to the approval email itself")
    # Without a valid reply token the From header is a claim, and anyone can write it: an
    # unproven sender is nobody (see `proof.proven`).
    proven = await proof.proven(channel, mail)
    who = proof.sender(channel, mail) if proven else proof.unverified_identity(mail.sender)
    open_approval = thread.pending_approval(channel.service.clock())
    if open_approval and authority.why_not(channel.policy, who, authority.Decide(thread, open_approval)) is None:
        # Feedback from someone who may decide is a rejection (anyone may, where the
        # approvers are "*"): a forged From must not reject it. Once the approval has
        # lapsed, a reply only closes what can no longer be approved (see the service).
        return await refuse(
            channel, mail, "without the approval code a message cannot decide an approval: "
            "reply to the approval email itself", thread,
        )
    try:
        await channel.service.respond(thread_id, mail.text, who, channel="email", evidence=proof.evidence(mail))
    except Refused as e:
        return await refuse(channel, mail, e.message, thread)
    return await accepted(channel, mail, thread_id)


async def start(channel: Mailbox, mail: Inbound) -> Answer:
    if not (mail.text or mail.subject).strip():
        return await refuse(
            channel, mail, "the email has neither a subject nor any new text: say what should be deployed",
        )
    origin = Origin(
        channel=KIND, place={"from": mail.sender, "subject": mail.subject, "root": mail.message_id},
    )
    text = mail.text or mail.subject
    if not await proof.proven(channel, mail):
        return await confirmation.start_unconfirmed(channel, mail, origin, text)
    thread = await channel.service.launch(
        text, proof.sender(channel, mail), "email", origin, new_id(), proof.evidence(mail),
    )
    return await accepted(channel, mail, thread.id)


async def decide(channel: Mailbox, mail: Inbound, approval_id: str) -> Answer:
    # The token from the address the reply was sent to wins (the parser prefers it);
    # a code for another approval in the new text makes the message ambiguous.
    others = {code.partition(".")[0] for code in re.findall(rf"\b{tokens.TOKEN}\b", mail.text)} - {approval_id}
    if others:
        return await refuse(
            channel, mail, "it carries the approval code of another deploy: reply to each approval email on its own",
        )
    thread_id = await channel.inbox.lookup(names.email_approval(approval_id))
    if thread_id is None:
        return await refuse(channel, mail, "the approval code does not belong to any deploy")
    replied_to = await thread_of(channel, mail)
    if replied_to is not None and replied_to != thread_id:
        return await refuse(channel, mail, "the approval code is for another deploy than the email you replied to")
    if not mail.text.strip():  # only the quoted approval email, or HTML that shows nothing
        return await refuse(
            channel, mail, "the reply has no text of its own: reply approve, or say what should change",
        )
    approve, feedback = decision(mail.text)
    try:
        # The token proved the address: its person decides.
        await channel.service.respond(
            thread_id, feedback, proof.sender(channel, mail), approval_id, approve, "email",
            evidence=proof.evidence(mail),
        )
    except Refused as e:  # the valid code proves the address: they are told, whoever they are
        return await refuse(channel, mail, e.message, await channel.service.get(thread_id), tell=True)
    return await accepted(channel, mail, thread_id)


async def too_late(channel: Mailbox, mail: Inbound, approval_id: str, token_error: str) -> Answer:
    """A reply with a lapsed approval code: the sender is told the request is closed (it
    expired, nothing was deployed; or who decided it), never recorded."""
    thread_id = await channel.inbox.lookup(names.email_approval(approval_id))
    thread = None
    if thread_id is not None:
        try:
            thread = await channel.service.get(thread_id)
        except Refused:
            thread = None
    why = closed(thread, approval_id) if thread is not None else None
    return await refuse(channel, mail, why or token_error, thread, tell=True)


def closed(thread: Thread, approval_id: str) -> str | None:
    """Why an approval can no longer be decided, for someone whose approval code lapsed:
    it was decided, or it expired (the code lapses when the request does)."""
    found = standing.find(thread, approval_id)
    if found is None:
        return None
    if found.decision is not None:
        return wording.already_decided(bool(found.decision.approve), found.decision.user, found.decision.at)
    return wording.expired_not_deployed(found.expiry.expires_at if found.expiry is not None else found.expires_at)
