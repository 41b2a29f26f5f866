"""What was deployed: the deploy history with its audit trail, and the deploy counters every
process shares."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Protocol


@dataclass(frozen=True)
class DeployRecord:
    environment: str
    service: str
    tag: str
    commit: str
    ok: bool
    at: datetime
    approved_by: str | None
    thread_id: str
    deploy_id: str
    url: str = ""
    rollback_of: str | None = None  # the deploy this one rolled back
    force: str | None = None  # deployed past failing checks: why, and who said so
    forced_by: str | None = None
    faulty: bool = False  # rolled back since: never a rollback target again
    verified_at: datetime | None = None
    verified_by: str = ""  # who ended the bake early ("verify now"); "" when its checks held for all of it
    # A verification skipped ("skip verification: REASON"): when, by whom, why. Not verified:
    # promotion does not count it as passed.
    verification_skipped_at: datetime | None = None
    verification_skipped_by: str = ""
    verification_skip_reason: str = ""
    # The audit trail, kept here because the record outlives its thread (THREAD_RETENTION;
    # the history has DEPLOY_HISTORY_RETENTION). Empty in records older than these fields.
    requested_by: str = ""  # who asked: the person, else the channel's id for them
    request: str = ""  # what they wrote (or the feedback that led to the proposal)
    requested_via: str = ""  # slack, email, token, session, name
    requested_channel: str = ""
    request_evidence: str = ""  # the Slack user id, the address and Message-ID, the token id
    requested_at: datetime | None = None
    proposed_by: str = ""  # llm (the model), command (an exact command), bot
    proposal_reason: str = ""
    proposed_at: datetime | None = None
    approval_id: str = ""  # "": no approval was needed
    approval_asked_at: datetime | None = None
    approval_expires_at: datetime | None = None
    decided_by: str = ""
    decided_via: str = ""
    decided_channel: str = ""
    decision_evidence: str = ""
    decided_at: datetime | None = None
    started_at: datetime | None = None
    exit_code: int | None = None
    output_tail: str = ""  # the last lines of the deploy's output, secrets redacted


class History(Protocol):
    async def record(self, entry: DeployRecord) -> None: ...

    async def recent(self, environment: str, limit: int, service: str | None = None) -> list[DeployRecord]:
        """Newest first; with `service`, only its deploys (among the newest few thousand)."""
        ...

    async def page(
        self, environment: str, limit: int, cursor: str | None = None, service: str | None = None
    ) -> tuple[list[DeployRecord], str | None]:
        """Up to `limit` records after `cursor`, newest first, and the cursor of the next
        page (None: the last). A malformed cursor raises ValueError."""
        ...

    async def expire(self, environment: str, before: datetime, limit: int, dry_run: bool = False) -> int:
        """Drop up to `limit` of the oldest records older than `before`: how many went (would go)."""
        ...

    async def mark_faulty(self, environment: str, deploy_id: str) -> None:
        """The deploy was rolled back: `recent` shows it `faulty` from now on."""
        ...

    async def mark_verified(self, environment: str, deploy_id: str, at: datetime, by: str = "") -> None:
        """The deploy's checks held for its whole bake (bot/core/verification.py), or `by`
        ended it early with "verify now": `recent` shows it with `verified_at` (and
        `verified_by`) from now on."""
        ...

    async def mark_skipped(self, environment: str, deploy_id: str, at: datetime, by: str, reason: str) -> None:
        """`by` skipped the deploy's verification for `reason`: `recent` shows it with
        `verification_skipped_at`, `_by` and `verification_skip_reason` from now on."""
        ...

    async def since(self, environment: str, after: datetime, limit: int) -> list[DeployRecord]:
        """The records that finished at `after` or later, newest first, at most `limit`: read
        from the newest back, stopping at the first older one, so what it costs follows the
        window asked for, not the length of the history (delivery metrics)."""
        ...


@dataclass(frozen=True)
class Tally:
    """One labelled series of the deploy counters every process shares (GET /metrics):
    `kind` "deploy" (outcome "success" or "failure"; the histogram is its duration) or
    "approval_wait" (outcome ""; the histogram is the wait from the ask to the decision)."""

    kind: str
    service: str
    environment: str
    outcome: str
    count: int
    total: float  # the sum of the observed seconds
    buckets: tuple[tuple[float, int], ...]  # (upper bound in seconds, observations at or below), ascending


class DeployCounters(Protocol):
    async def tallies(self) -> list[Tally]:
        """Every series counted since the counters began, for all processes."""
        ...
