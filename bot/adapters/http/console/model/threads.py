"""The threads page: a row per thread, and the search by text or person."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from bot.core import outcomes, people
from bot.core.events import ApprovalRequested, HumanResponse, UserMessage, principal_of
from bot.core.thread import Thread


@dataclass(frozen=True)
class Row:
    id: str
    status: str
    title: str
    people: tuple[str, ...]
    updated: datetime | None
    version: int
    forked_from: str | None
    outcome: outcomes.Outcome = outcomes.Outcome("running")


def row(thread: Thread, now: datetime) -> Row:
    first = thread.events[0] if thread.events else None
    return Row(
        id=thread.id, status=thread.status(now), title=" ".join(str(getattr(first, "text", "")).split())[:140],
        people=tuple(sorted(_people(thread))), updated=thread.events[-1].at if thread.events else None,
        version=thread.version, forked_from=thread.origin.forked_from, outcome=outcomes.outcome(thread, now),
    )


def _people(thread: Thread) -> set[str]:
    """Everyone who wrote, each by one name whichever channel they came by (people.shown)."""
    found = set()
    for e in thread.events:
        if isinstance(e, UserMessage | HumanResponse):
            found.add(people.shown(principal_of(e)).name)
    return found


def matches(thread: Thread, query: str) -> bool:
    """Search by text or person: every word of `query` is in something a person wrote or in
    the name of someone who wrote in the thread (case-insensitive)."""
    words = query.lower().split()
    if not words:
        return True
    haystack = [thread.id]
    for e in thread.events:
        if isinstance(e, UserMessage | HumanResponse):
            haystack += [e.text, e.user, e.person or ""]
        elif isinstance(e, ApprovalRequested):
            haystack += [e.service, e.tag, e.environment, e.requested_by]
    text = "\n".join(haystack).lower()
    return all(w in text for w in words)
