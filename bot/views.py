"""Thread -> the JSON shapes the API and the CLI print.

Callers with a clock pass `now`, so that a thread whose approval request has expired shows
as "waiting_for_human" with no pending approval, and names the expired one instead.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from bot.thread import Thread


def thread_json(thread: Thread, now: datetime | None = None) -> dict[str, Any]:
    pending = thread.pending_approval(now)
    expired = thread.expired_approval(now) if now is not None else None
    return {
        "id": thread.id,
        "status": thread.status(now),
        "version": thread.version,
        "origin": thread.origin.model_dump(exclude_none=True),
        "pending_approval": pending.model_dump(mode="json") if pending else None,
        "expired_approval": expired.model_dump(mode="json") if expired else None,
        "events": [e.model_dump(mode="json") for e in thread.events],
    }


def summary_json(thread: Thread, now: datetime | None = None) -> dict[str, Any]:
    first = thread.events[0] if thread.events else None
    return {
        "id": thread.id,
        "status": thread.status(now),
        "version": thread.version,
        "updated_at": thread.events[-1].at.isoformat() if thread.events else None,
        "title": getattr(first, "text", "")[:100],
    }
