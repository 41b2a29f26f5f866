"""How long ago something happened, and how long is left: the words every page prints for a time."""

from __future__ import annotations

from datetime import datetime


def ago(then: datetime, now: datetime) -> str:
    """`then` as an age: "just now", "5 min ago", "3 h 4 min ago", "2 d ago"."""
    seconds = int((now - then).total_seconds())
    if seconds < 60:
        return "just now" if seconds >= -60 else "in the future"
    minutes = seconds // 60
    if minutes < 60:
        return f"{minutes} min ago"
    hours, minutes = divmod(minutes, 60)
    if hours < 48:
        return f"{hours} h {minutes} min ago" if minutes else f"{hours} h ago"
    return f"{hours // 24} d ago"


def left(until: datetime, now: datetime) -> str:
    """Time left until `until`: "59 min left", "expired"."""
    seconds = int((until - now).total_seconds())
    if seconds <= 0:
        return "expired"
    minutes, seconds = divmod(seconds, 60)
    return f"{minutes} min {seconds:02d} s left" if minutes < 60 else f"{minutes // 60} h {minutes % 60} min left"
