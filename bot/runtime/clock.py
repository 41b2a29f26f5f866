"""The wall clock, in one place. The core never reads it: the composition root hands it
to whoever records events, and tests hand in their own."""

from __future__ import annotations

from datetime import UTC, datetime


def utcnow() -> datetime:
    return datetime.now(UTC)
