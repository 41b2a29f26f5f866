"""Thread -> the JSON shapes the API and the CLI print."""

from __future__ import annotations

from typing import Any

from bot.thread import Thread


def thread_json(thread: Thread) -> dict[str, Any]:
    pending = thread.pending_approval()
    return {
        "id": thread.id,
        "status": thread.status(),
        "version": thread.version,
        "origin": thread.origin.model_dump(exclude_none=True),
        "pending_approval": pending.model_dump(mode="json") if pending else None,
        "events": [e.model_dump(mode="json") for e in thread.events],
    }


def summary_json(thread: Thread) -> dict[str, Any]:
    first = thread.events[0] if thread.events else None
    return {
        "id": thread.id,
        "status": thread.status(),
        "version": thread.version,
        "updated_at": thread.events[-1].at.isoformat() if thread.events else None,
        "title": getattr(first, "text", "")[:100],
    }
