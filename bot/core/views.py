"""Thread -> the JSON shapes the API and the CLI print.

Callers with a clock pass `now`, so that a thread whose approval request has expired shows
as "waiting_for_human" with no pending approval, and names the expired one instead.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from bot.core import standing, wording
from bot.core.events import ApprovalRequested, principal_of
from bot.core.people import ANYONE
from bot.core.policy import Policy
from bot.core.thread import Thread


def thread_json(thread: Thread, now: datetime | None = None, policy: Policy | None = None) -> dict[str, Any]:
    """`policy`: the rules in force, which say who may still decide on a pending approval."""
    pending = thread.pending_approval(now)
    expired = thread.expired_approval(now) if now is not None else None
    return {
        "id": thread.id,
        "status": thread.status(now),
        "version": thread.version,
        "origin": thread.origin.model_dump(mode="json", exclude_none=True),
        "pending_approval": _pending(thread, pending, policy) if pending else None,
        "expired_approval": expired.model_dump(mode="json") if expired else None,
        "events": [e.model_dump(mode="json") for e in thread.events],
    }


def _pending(thread: Thread, request: ApprovalRequested, policy: Policy | None) -> dict[str, Any]:
    """The request, with how far it got: approvals so far (one per person), how many it
    needs, whether (and to whom) it was escalated, and who may still decide (the authority's
    answer: never whoever asked, where they may not approve)."""
    found = standing.of(thread, request, policy)
    given = found.given
    return {
        **request.model_dump(mode="json"),
        "approvals": [{"by": principal_of(a), "via": a.via or a.channel, "at": a.at.isoformat()} for a in given],
        "progress": wording.approval_progress([principal_of(a) for a in given], found.required),
        "escalated_to": list(found.escalated_to),
        # `required` is what it was asked under; the rules in force may ask more since.
        "required_now": found.required,
        **({"who_may_decide": [shown_decider(policy, p) for p in found.deciders]}
           if policy is not None and found.deciders is not None else {}),
    }


def shown_decider(policy: Policy, principal: str) -> str:
    """One who may decide, as the answers name them: `anyone`, a person, an agent with its owner."""
    return "anyone" if principal == ANYONE else policy.directory.display(principal)


def summary_json(thread: Thread, now: datetime | None = None) -> dict[str, Any]:
    first = thread.events[0] if thread.events else None
    return {
        "id": thread.id,
        "status": thread.status(now),
        "version": thread.version,
        "updated_at": thread.events[-1].at.isoformat() if thread.events else None,
        "title": getattr(first, "text", "")[:100],
    }
