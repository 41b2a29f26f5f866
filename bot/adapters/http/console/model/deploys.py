"""Deploys: what runs now, waits in line, is under verification or was stopped (what "deploy
anyway" would force), and each deploy's audit trail (the deploys page and its exports)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from datetime import datetime
from typing import Any

from bot.core import authority, deploy_rules, transcript, verification, wording
from bot.core.events import DEPLOY_STEPS, Change, DeployResult, Error
from bot.core.people import Identity
from bot.core.policy import Policy
from bot.core.thread import Thread
from bot.runtime.deploying import audit_trail
from bot.runtime.ports import DeployRecord


@dataclass(frozen=True)
class Running:
    thread_id: str
    service: str
    tag: str
    environment: str
    deploy_id: str
    since: datetime


def running(thread: Thread) -> Running | None:
    """The deploy this thread has started and not finished, if any."""
    last = thread.last_step()
    if last is None or not isinstance(last[1], DEPLOY_STEPS) or thread.cancelled():
        return None
    step = last[1]
    started = thread.started(step.id)
    if started is None or thread.outcome(step) is not None:
        return None
    return Running(thread.id, step.service, step.tag, step.environment, started.deploy_id, started.at)


@dataclass(frozen=True)
class Queued:
    """An approved deploy waiting in line (status waiting_for_lock): for a lock, or a freeze."""

    thread_id: str
    service: str
    tag: str
    environment: str
    position: int
    behind: str  # what it waits for, as the bot said it
    since: datetime

    @property
    def words(self) -> str:
        return wording.queued(wording.what_to_deploy(self.service, self.tag, self.environment),
                              self.behind, self.position)


def queued(thread: Thread, now: datetime) -> Queued | None:
    """The deploy this thread has waiting in line, if it waits."""
    last = thread.last_step()
    if last is None or not isinstance(last[1], DEPLOY_STEPS) or thread.status(now) != "waiting_for_lock":
        return None
    step = last[1]
    said = thread.queued(step.id)
    if said is None:
        return None
    return Queued(thread.id, step.service, step.tag, step.environment, said.position, said.behind, said.at)


@dataclass(frozen=True)
class CheckState:
    name: str
    ok: bool | None  # None: no answer (or not asked yet)
    value: str
    at: datetime | None

    @property
    def state(self) -> str:
        return "holds" if self.ok else ("fails" if self.ok is False else "no answer")


@dataclass(frozen=True)
class Verifying:
    """A deploy under verification (status verifying): its bake, its checks' latest values,
    and whether the viewer may end it (verify now, skip verification)."""

    thread_id: str
    service: str
    tag: str
    environment: str
    since: datetime
    ends_at: datetime
    on_failure: str
    checks: list[CheckState]
    why_not: str | None  # why the viewer may not verify now or skip; None: they may

    @property
    def may_end(self) -> bool:
        return self.why_not is None


def verifying(thread: Thread, viewer: Identity, policy: Policy) -> Verifying | None:
    started = verification.open_verification(thread)
    if started is None:
        return None
    checks = [CheckState(name, seen.ok if seen else None, seen.value if seen else "not asked yet",
                         seen.at if seen else None)
              for name, seen in verification.latest(thread, started).items()]
    return Verifying(thread.id, started.service, started.tag, started.environment, started.at, started.ends_at,
                     started.on_failure, checks,
                     authority.why_not(policy, viewer, authority.SkipVerification(started.environment)))


BLOCKING = deploy_rules.ANYWAY_KINDS  # what "deploy anyway" goes past (bot.runtime.agent._blocked_deploy)


@dataclass(frozen=True)
class Blocked:
    """A deploy that failing CI checks or a freeze stopped: "deploy anyway" may force it."""

    service: str
    tag: str
    environment: str
    kind: str  # checks, frozen
    message: str  # what the bot said stopped it
    why_not: str | None  # why the viewer may not deploy it anyway; None: they may

    @property
    def may_force(self) -> bool:
        return self.why_not is None


def blocked(thread: Thread, viewer: Identity, policy: Policy) -> Blocked | None:
    """The deploy "deploy anyway" in this thread would force, as bot.runtime.agent finds it: the
    newest deploy step, unless a refused "deploy anyway" (passed over), when CI checks or a
    freeze stopped it; None when the thread is cancelled or waits on an approval."""
    if thread.cancelled() or thread.pending_approval() is not None:
        return None
    for e in reversed(thread.events):
        if not isinstance(e, DEPLOY_STEPS):
            continue
        outcome = thread.outcome(e)
        if getattr(e, "force", None) and isinstance(outcome, Error) and outcome.kind == "validation":
            continue
        if isinstance(outcome, Error) and outcome.kind in BLOCKING:
            return Blocked(e.service, e.tag, e.environment, outcome.kind, outcome.message,
                           authority.why_not(policy, viewer, authority.DeployAnyway(e.environment)))
        return None
    return None


@dataclass(frozen=True)
class Audit:
    """A deploy from request to outcome (what was asked and by whom, what was proposed, the
    approval and its evidence, the run, its result): its history record's audit fields, as
    bot.runtime.deploying.audit_trail derives them from the thread (again from the live thread
    while it is there), and what only the live thread has."""

    record: DeployRecord
    change: Change | None = None  # what the approval showed it changes (the record keeps no commit list)
    approval_asked_by: str = ""  # who the approval was asked for, where the thread has no request

    @property
    def asked_by(self) -> str:
        return self.record.requested_by or self.approval_asked_by

    @property
    def output_tail(self) -> str:
        return transcript.clean(self.record.output_tail)


def audit(record: DeployRecord, thread: Thread | None, secrets: tuple[str, ...] = ()) -> Audit:
    """The trail of the deploy `record` is of: from its thread while the thread has the deploy's
    result, else (the thread removed after THREAD_RETENTION) what the record kept of it (empty
    for records older than those fields)."""
    result = next((e for e in thread.of(DeployResult) if e.deploy_id == record.deploy_id), None) if thread else None
    if thread is None or result is None:
        return Audit(record)
    approval = thread.approval_for(result.step_id)
    return Audit(
        replace(record, **audit_trail(thread, result, secrets)),
        change=approval.change if approval is not None else None,
        approval_asked_by=approval.asker if approval is not None else "",
    )


def record_fields(trail: Audit) -> dict[str, Any]:
    """One deploy as a flat row for the CSV and JSON Lines exports: every field of the
    record (whatever fields it has), its audit trail among them."""
    record = trail.record
    row: dict[str, Any] = {k: v.isoformat() if isinstance(v, datetime) else v for k, v in asdict(record).items()}
    for moment in ("requested_at", "decided_at", "started_at"):  # "" rather than null, as the other fields
        row[moment] = row[moment] or ""
    row.update(requested_by=trail.asked_by, finished_at=record.at.isoformat() if record.started_at else "")
    return row
