"""The email channel's face to the composition root: the HTTP endpoint, the notifier, and
draining the mails being sent. Each job is a module of the package (endpoint, proof, inbound,
confirmation, notifier, sending); they read the channel's settings and ports (Mailbox)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field

from starlette.requests import Request
from starlette.responses import Response

from bot.adapters.channels.email import endpoint, notifier, sending
from bot.adapters.channels.email.answers import Answer
from bot.adapters.channels.email.mailbox import Mailbox
from bot.adapters.channels.email.parse import Inbound
from bot.core.events import Event
from bot.core.thread import Thread


@dataclass
class EmailChannel(Mailbox):
    _flushing: list[asyncio.Task[None]] = field(default_factory=list, init=False)

    async def start(self, receive: bool) -> None:
        """Send what the outbox holds (mails a process that died left), now and periodically."""
        if self.outbox is not None and not self._flushing:
            self._flushing.append(asyncio.create_task(sending.flushing(self)))

    async def endpoint(self, request: Request) -> Response:
        return await endpoint.serve(self, request)

    async def receive(self, mail: Inbound) -> Answer:
        return await endpoint.receive(self, mail)

    async def publish(self, thread: Thread, new: Sequence[Event]) -> None:
        await notifier.publish(self, thread, new)

    def text_for(self, thread: Thread, event: Event) -> str | None:
        return notifier.text_for(self, thread, event)

    async def drain(self) -> None:
        for task in self._flushing:
            task.cancel()
        self._flushing.clear()
        await self.deliveries.drain()
