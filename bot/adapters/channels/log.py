"""The notifier for threads with no chat channel (API, CLI): one log line per event."""

from __future__ import annotations

import logging
from collections.abc import Sequence

from bot.core import transcript
from bot.core.events import Event
from bot.core.prompt import redact
from bot.core.thread import Thread

log = logging.getLogger("deploybot.thread")


class LogNotifier:
    def __init__(self, secrets: tuple[str, ...] = ()) -> None:
        self.secrets = secrets

    async def publish(self, thread: Thread, new: Sequence[Event]) -> None:
        if not log.isEnabledFor(logging.INFO):
            return
        for event in new:
            log.info("thread %s: %s", thread.id, transcript.one_line(redact(transcript.line(event), self.secrets)))
