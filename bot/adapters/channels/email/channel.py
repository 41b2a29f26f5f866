"""The email channel's face to the composition root: the HTTP endpoint, the notifier, and
draining the mails being sent. Each job is a module of the package (endpoint, proof, inbound,
confirmation, notifier, sending); they read the channel's settings and ports (Mailbox)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from starlette.requests import Request
from starlette.responses import Response

from bot.adapters.channels.email import endpoint, notifier
from bot.adapters.channels.email.answers import Answer
from bot.adapters.channels.email.mailbox import Mailbox
from bot.adapters.channels.email.parse import Inbound
from bot.core.events import Event
from bot.core.thread import Thread


@dataclass
class EmailChannel(Mailbox):
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
