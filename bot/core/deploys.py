"""A deploy's id: one deploy step of one thread, and the thread it belongs to. The id is the
step's idempotency key and the owner of its environment's lock; locks, the deploy line and the
history store it, so its format never changes. Pure."""

from __future__ import annotations

import re

from bot.core.events import DeployStarted
from bot.core.thread import Thread

# A thread id, then a step id (events.new_id: 16 hex digits); thread ids hold no '-'.
_DEPLOY_ID = re.compile(r"^(?P<thread>.+)-[0-9a-f]{16}$")


def deploy_id(thread_id: str, step_id: str) -> str:
    """The idempotency key of one deploy step; also the owner of its environment lock."""
    return f"{thread_id}-{step_id}"


def thread_of(deploy: str) -> str:
    """The thread a deploy id belongs to (ids hold no '-')."""
    return deploy.partition("-")[0]


def deploying(owner: str) -> str | None:
    """The thread whose deploy holds a lock, when its owner is a deploy id; else None."""
    found = _DEPLOY_ID.match(owner)
    return found["thread"] if found else None


def started_here(thread: Thread, started: DeployStarted) -> bool:
    """False for a deploy copied into a fork: it belongs to the thread it was started in,
    so the fork must never resume or repeat it."""
    return started.deploy_id.startswith(f"{thread.id}-")
