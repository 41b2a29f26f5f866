"""Where an approval request stands: one derivation for every channel that shows one (Slack's
approval message, the approval emails, the console, the API and the CLI, MCP). Pure.

For a request of a thread, at `now` (or as recorded, for a caller without a clock): whether it
is open, approved, rejected, expired or withdrawn, the approvals it got (one per person,
under the rules it follows now) and how many it needs, who may still decide (the authority's
answer, bot/core/authority.py `deciders`), whom it was escalated to, its reminders and expiry.
Who may decide is only ever asked of the authority; what is here is what the events say.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from bot.core import authority
from bot.core.events import ApprovalEscalated, ApprovalExpired, ApprovalRequested, HumanResponse
from bot.core.policy import Policy
from bot.core.thread import ApprovalRules, Thread

State = Literal["open", "approved", "rejected", "expired", "withdrawn"]
"""open: waiting for decisions; expired: its expiry is recorded, or it lapsed by `now`
undecided; withdrawn: it no longer waits but nobody decided it (the thread was cancelled, or
went on to another step)."""


@dataclass(frozen=True)
class Standing:
    request: ApprovalRequested
    state: State
    decision: HumanResponse | None  # what decided it: the first rejection, or the approval that made the number
    given: tuple[HumanResponse, ...]  # the approvals that count under its rules now, one per person, oldest first
    rules: ApprovalRules  # what it follows now: those it was asked under, or newer ones recorded since
    deciders: tuple[str, ...] | None  # who may still decide (principals, `*`: anyone); None: no policy to ask
    escalation: ApprovalEscalated | None
    expiry: ApprovalExpired | None  # its recorded expiry, when nothing decided it first
    reminders: int  # reminders sent so far

    @property
    def approval_id(self) -> str:
        return self.request.approval_id

    @property
    def required(self) -> int:
        """How many approvals from different people it needs under the rules in force."""
        return self.rules.required

    @property
    def expires_at(self) -> datetime:
        return self.request.expires_at

    @property
    def escalated_to(self) -> tuple[str, ...]:
        return tuple(self.escalation.to) if self.escalation is not None else ()

    @property
    def closed(self) -> bool:
        """Decided, or its expiry recorded: nobody can decide it any more."""
        return self.decision is not None or self.expiry is not None


def of(thread: Thread, request: ApprovalRequested, policy: Policy | None = None,
       now: datetime | None = None) -> Standing:
    """Where `request` of `thread` stands at `now` (None: as recorded, a lapse not seen);
    `policy`: the rules in force, which say who may still decide (None: not asked)."""
    approval_id = request.approval_id
    decision = thread.decision_for(approval_id)
    expiry = thread.expiry(approval_id) if decision is None else None
    return Standing(
        request=request,
        state=_state(thread, request, decision, expiry, now),
        decision=decision,
        given=tuple(thread.approvals_for(approval_id)),
        rules=thread.approval_rules(approval_id),
        deciders=tuple(authority.deciders(policy, thread, request)) if policy is not None else None,
        escalation=thread.escalation(approval_id),
        expiry=expiry,
        reminders=thread.reminded(approval_id),
    )


def find(thread: Thread, approval_id: str, policy: Policy | None = None,
         now: datetime | None = None) -> Standing | None:
    """`of` for the request named `approval_id`; None when the thread has none by that id."""
    request = thread.approval(approval_id)
    return of(thread, request, policy, now) if request is not None else None


def _state(thread: Thread, request: ApprovalRequested, decision: HumanResponse | None,
           expiry: ApprovalExpired | None, now: datetime | None) -> State:
    if decision is not None:
        return "approved" if decision.approve else "rejected"
    if expiry is not None:
        return "expired"
    waiting = thread.pending_approval()
    if waiting is None or waiting.approval_id != request.approval_id:
        return "withdrawn"
    return "expired" if now is not None and now > request.expires_at else "open"
