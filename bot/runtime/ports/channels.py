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


@dataclass(frozen=True)
class Outgoing:
    """A message that must go out (an approval request's mail), kept until it is sent."""

    key: str  # its own id (a mail's Message-ID)
    thread_id: str
    to: str
    raw: bytes  # the message as built, sent as it is
    attempts: int = 0  # tries that failed so far
    reason: str = ""  # why the last one failed


class Outbox(Protocol):
    """Messages that must go out, shared by every process: written before the first try,
    removed once sent, so a process that dies while trying leaves its messages to the next.
    Times are the store's own (seconds from now), so no process's clock moves them."""

    async def put(self, message: Outgoing, hold: float) -> None:
        """Keep `message`; no other process takes it for `hold` seconds (it is being tried)."""
        ...

    async def hold(self, key: str, seconds: float) -> None:
        """Still being tried: no other process takes it for `seconds` more."""
        ...

    async def due(self, hold: float, count: int) -> list[Outgoing]:
        """Up to `count` messages nobody holds whose next try is due, each held for `hold` seconds."""
        ...

    async def again(self, message: Outgoing, after: float) -> None:
        """Keep `message` as it is now (attempts, reason), due again in `after` seconds."""
        ...

    async def sent(self, key: str) -> None:
        """Sent (or given up): removed."""
        ...
