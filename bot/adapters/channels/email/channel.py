"""The email channel: its settings and ports, and its face to the composition root (the HTTP
endpoint, the notifier, draining the mails being sent). Each job is a module of the package:
endpoint, proof, inbound, confirmation, notifier, smtp."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field

from starlette.requests import Request
from starlette.responses import Response

from bot.adapters.channels.deliveries import Deliveries
from bot.adapters.channels.email import endpoint, notifier
from bot.adapters.channels.email.answers import Answer
from bot.adapters.channels.email.parse import Inbound
from bot.adapters.channels.email.smtp import Smtp
from bot.core.events import Event
from bot.core.policy import Policy
from bot.core.thread import Thread
from bot.runtime.ports import Inbox
from bot.runtime.service import ThreadService


@dataclass
class EmailChannel:
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
    deliveries: Deliveries = field(init=False)  # the mails being sent, in the background

    def __post_init__(self) -> None:
        self.deliveries = Deliveries("email", self.service.record)

    async def endpoint(self, request: Request) -> Response:
        return await endpoint.serve(self, request)

    async def receive(self, mail: Inbound) -> Answer:
        return await endpoint.receive(self, mail)

    async def publish(self, thread: Thread, new: Sequence[Event]) -> None:
        await notifier.publish(self, thread, new)

    def text_for(self, thread: Thread, event: Event) -> str | None:
        return notifier.text_for(self, thread, event)

    async def drain(self) -> None:
        await self.deliveries.drain()
