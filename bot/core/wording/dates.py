"""How a moment is told to people: always in UTC, to the minute."""

from __future__ import annotations

from datetime import datetime

__all__ = [
    "utc",
]


def utc(at: datetime) -> str:
    """A moment as people are told it, to the minute: `2026-12-24 18:00 UTC`."""
    return f"{at:%Y-%m-%d %H:%M} UTC"
