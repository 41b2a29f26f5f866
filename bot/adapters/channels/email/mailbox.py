"""What every job of the email channel reads: its settings and ports, and the mails being sent."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from bot.adapters.channels.deliveries import Deliveries
from bot.adapters.channels.email.smtp import Smtp
from bot.core.policy import Policy
from bot.runtime.ports import Inbox, Outbox
from bot.runtime.service import ThreadService


@dataclass
class Mailbox:
    service: ThreadService
    inbox: Inbox
    kick: Callable[[str], Awaitable[None]]
    smtp: Smtp
    sender: str  # EMAIL_FROM
    inbound_secret: str
    reply_secret: str
    allowed: frozenset[str]  # addresses and @domains that may start threads
    policy: Policy  # the rules the authority answers by: whose addresses to ask
    max_bytes: int = 1_000_000
    trusted_authserv_ids: frozenset[str] = frozenset()  # EMAIL_TRUSTED_AUTHSERV_IDS
    mailbox_authenticated_domains: frozenset[str] = frozenset()  # EMAIL_MAILBOX_AUTHENTICATED_DOMAINS
    public_url: str | None = None  # PUBLIC_URL: approval mails link to the thread in the console
    outbox: Outbox | None = None  # approval mails, kept until sent (sending.py); None: sent once, as others
    deliveries: Deliveries = field(init=False)  # the mails being sent, in the background

    def __post_init__(self) -> None:
        self.deliveries = Deliveries("email", self.service.record)
