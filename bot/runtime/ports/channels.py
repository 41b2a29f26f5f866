"""The channels: what tells people of new events, and a channel switched on with its routes."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from bot.core.events import Event
from bot.core.thread import Thread


class Notifier(Protocol):
    async def publish(self, thread: Thread, new: Sequence[Event]) -> None:
        """Tell the thread's channel about new events. Must not raise."""
        ...


Endpoint = Callable[[Any], Awaitable[Any]]  # an ASGI framework's endpoint: takes the request


@dataclass(frozen=True)
class Route:
    """An HTTP endpoint a channel answers on (POST). The front door reads no credentials for
    it: the channel proves who is speaking itself (a signature, a shared secret)."""

    path: str
    endpoint: Endpoint


class Channel(Protocol):
    """A way people reach the bot or hear from it (Slack, email, a webhook), switched on. The
    composition root (bot/wiring/channels.py) builds one per configured kind, serves its
    routes, adds its notifier to the fan-out and starts and stops it with the process."""

    def routes(self) -> Sequence[Route]:
        """What it answers over HTTP (none for a channel that only notifies, or that keeps a
        connection of its own, like Slack's Socket Mode)."""
        ...

    def notifier(self) -> Notifier | None:
        """What tells its people about new events; None for a channel that only listens."""
        ...

    async def start(self, receive: bool) -> None:
        """Start; take inbound messages only if `receive` (a worker process does not)."""
        ...

    async def stop(self) -> None:
        """Finish what it was sending and let go of its connections."""
        ...
