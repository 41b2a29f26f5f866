"""Notices: what channels say as events are recorded ("{who}": the channel names them)."""

from __future__ import annotations

__all__ = [
    "cancelled_by_who", "deploying", "deploying_something",
]


def deploying(what: str) -> str:
    return f"Deploying {what}…"


def deploying_something() -> str:
    return "Deploying…"


def cancelled_by_who(reason: str) -> str:
    return "Cancelled by {who}" + (f": {reason}" if reason else ".")
