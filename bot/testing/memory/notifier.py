"""Notifier: what it was told, kept."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from bot.core.events import Event
from bot.core.thread import Thread


@dataclass
class RecordingNotifier:
    """Notifier that keeps what it was told: (thread id, event types) per publish."""

    published: list[tuple[str, list[str]]] = field(default_factory=list)

    async def publish(self, thread: Thread, new: Sequence[Event]) -> None:
        self.published.append((thread.id, [e.type for e in new]))
