"""Approvals: a deploy's approval asked for, reminded, escalated, its rules changed, expired."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import Field

from bot.core.events.base import _Event, new_id
from bot.core.events.results import Change


class ApprovalRequested(_Event):
    """Guards exactly one deploy step: its id, a hash of its arguments and the commit."""

    type: Literal["approval_requested"] = "approval_requested"
    approval_id: str = Field(default_factory=new_id)
    step_id: str
    thread_id: str
    args_hash: str
    service: str
    tag: str
    commit: str
    environment: str
    requested_by: str  # the principal who asked (old threads: the raw user)
    requesters: list[str] = Field(default_factory=list)  # principals of everyone who gave instructions
    reason: str | None = None
    expires_at: datetime
    change: Change | None = None  # what it changes against what is deployed there now
    required: int = 1  # approvals from different people it needs (bound when asked)
    approvers: list[str] = Field(default_factory=list)  # who could decide when it was asked (principals)
    rollback_of: str | None = None  # the deploy it rolls back
    force: str | None = None  # why it goes ahead past failing checks, and who said so
    forced_by: str | None = None
    # How people see who asked, when that is more than the principal: an agent with its
    # owner ("claude-code (agent of alice)"). Only words: the rules read `requested_by`.
    asked_by: str = ""

    @property
    def asker(self) -> str:
        return self.asked_by or self.requested_by


class ApprovalReminded(_Event):
    """A pending approval was reminded (the `count`-th time) to whoever may decide."""

    type: Literal["approval_reminded"] = "approval_reminded"
    approval_id: str
    count: int


class ApprovalEscalated(_Event):
    """Nobody decided in time: `to` (people, as principals) are asked too, and may decide."""

    type: Literal["approval_escalated"] = "approval_escalated"
    approval_id: str
    to: list[str]


class ApprovalRulesChanged(_Event):
    """The rules for approval `approval_id` are not those it was asked under (the settings
    changed since): from here on it needs `required` approvals from different people among
    `approvers` (principals; `*`: anyone), or whoever it was escalated to, and an approval
    given by anyone else no longer counts. Recorded just before the decision taken under
    them, or right before the deploy runs: a decision always follows the rules of its time,
    and what applied to it is the newest of these before it (else the request's own)."""

    type: Literal["approval_rules_changed"] = "approval_rules_changed"
    approval_id: str
    required: int
    approvers: list[str]


class ApprovalExpired(_Event):
    """Nobody decided before `expires_at`: not a rejection, not a human's decision. It closes
    the deploy step; nothing was deployed."""

    type: Literal["approval_expired"] = "approval_expired"
    approval_id: str
    step_id: str
    expires_at: datetime
