"""POST /threads with an `Idempotency-Key` header: a retried launch returns the first thread
instead of making a second (bot/runtime/launch_once.py, shared with the CLI and MCP)."""

from __future__ import annotations

from bot.core.people import Identity
from bot.core.thread import Thread
from bot.runtime import launch_once
from bot.runtime.ports import WorkQueue
from bot.runtime.service import ThreadService

HEADER = "idempotency-key"
NAMED = "Idempotency-Key"


def key_of(given: str | None) -> str | None:
    """The header's key, or None without one; Invalid when it is no key."""
    return launch_once.key_of(given, NAMED)


async def launch(service: ThreadService, text: str, who: Identity, key: str, handoff: WorkQueue) -> tuple[Thread, bool]:
    """(the thread, whether it is new): the first launch of `key` by `who`, or the thread it made."""
    return await launch_once.launch_once(service, text, who, key, NAMED, channel="api", handoff=handoff)
