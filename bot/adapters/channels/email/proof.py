"""Who sent a mail, and what proves it: a reply token (an approval code, or a confirmation
code signed as one), the receiving server's verdict for a mailbox-authenticated domain, or
nothing (the From is a claim). Also whose addresses approval emails go to."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from datetime import UTC, datetime

from bot.adapters.channels.email import tokens
from bot.adapters.channels.email.auth import proven_by
from bot.adapters.channels.email.kind import KIND, normalise_address
from bot.adapters.channels.email.mailbox import Mailbox
from bot.adapters.channels.email.parse import Inbound
from bot.core.people import Identity
from bot.runtime.clock import utcnow


def check_token(channel: Mailbox, mail: Inbound) -> tuple[str | None, str | None]:
    """(approval id, None) for a valid reply token; (None, why) for an invalid one."""
    if not mail.token:
        return None, None
    try:
        return tokens.check_token(channel.reply_secret, mail.token, mail.sender, utcnow()), None
    except tokens.TokenError as e:
        return None, str(e)


def confirmation(channel: Mailbox, mail: Inbound) -> tuple[str | None, str | None]:
    """(confirmation id, None) when `mail`'s token is a valid confirmation code (signed for
    this sender, not expired); (None, why) for a genuine one that expired; else (None, None)."""
    try:
        return tokens.check_token(
            channel.reply_secret, mail.token or "", mail.sender, utcnow(), tokens.CONFIRMATION,
        ), None
    except tokens.TokenError as e:
        return None, str(e) if str(e).endswith("has expired") else None


def lapsed(channel: Mailbox, mail: Inbound) -> str | None:
    """The approval id of `mail`'s token when it is genuine (signed for this sender) and
    only past its expiry; else None."""
    if not mail.token:
        return None
    expires = mail.token.partition(".")[2].partition(".")[0]
    if not (expires.isascii() and expires.isdigit() and len(expires) <= 12):
        return None
    try:
        at = datetime.fromtimestamp(int(expires), UTC)
        return tokens.check_token(channel.reply_secret, mail.token, mail.sender, at)
    except (tokens.TokenError, ValueError, OverflowError, OSError):
        return None


async def proven(channel: Mailbox, mail: Inbound) -> bool:
    """Whether the receiving mail server proved that `mail` comes from its From's mailbox:
    its verdict (an Authentication-Results header of EMAIL_TRUSTED_AUTHSERV_IDS) proves
    the domain, which is the mailbox only where the domain lets nobody send as another
    (EMAIL_MAILBOX_AUTHENTICATED_DOMAINS); elsewhere a colleague, a relay or a SaaS sender
    signs for the domain as well. Else the From is a claim: anyone who can send mail can
    write any address there. In a thread, as the MIME parse: the header parser is
    superlinear, and the event loop serves everyone."""
    if mail.sender.rpartition("@")[2] not in channel.mailbox_authenticated_domains:
        return False
    server = await asyncio.to_thread(proven_by, mail.auth_results, mail.sender, channel.trusted_authserv_ids)
    return server is not None


def is_allowed(channel: Mailbox, address: str) -> bool:
    return address in channel.allowed or f"@{address.rpartition('@')[2]}" in channel.allowed


def sender(channel: Mailbox, mail: Inbound) -> Identity:
    """The person whose address sent `mail` (unknown: `email:<address>`): who the From
    claims. Only a valid reply token, a trusted server's verdict (`proven`) or a confirmed
    round trip proves it; never good for deciding without a token."""
    return channel.service.directory.by(KIND, mail.sender)


def addresses(channel: Mailbox, principals: Iterable[str]) -> list[str]:
    """The addresses of people (principals): a person's own, or an `email:<address>`."""
    found: set[str] = set()
    for principal in principals:
        person = channel.policy.directory.people.get(principal)
        if person is not None:
            found |= set(person.ids.get(KIND, ()))
        elif principal.startswith(f"{KIND}:"):
            found.add(normalise_address(principal.removeprefix(f"{KIND}:")))
    return sorted(found)


def _approver_addresses(channel: Mailbox) -> frozenset[str]:
    return frozenset(
        address for environment in channel.policy.environments
        for address in addresses(channel, channel.policy.rules_for(environment).approvers)
    )


def is_approver(channel: Mailbox, address: str) -> bool:
    """Whether approval emails go to `address`, for any environment."""
    return normalise_address(address) in _approver_addresses(channel)


def unverified(address: str) -> str:
    """Who a message from `address` is recorded as when nothing but its From header says
    so: a name no approver entry can be (an address or a chat user id has no spaces)."""
    return f"unverified sender <{address}>"


def evidence(mail: Inbound) -> str:
    """What an event records of the email it came by: the sender's address and its Message-ID."""
    return f"{mail.sender} {mail.message_id}"


def unverified_identity(address: str) -> Identity:
    """Nobody, whatever person the address is: its principal (`email:unverified sender
    <...>`) matches no person and no address an approver list names, only `*`."""
    return Identity(None, KIND, unverified(address))
