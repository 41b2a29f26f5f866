"""What came of a thread, for people: deployed, rejected, failed, cancelled, expired, refused,
waiting, running. Pure, derived from the events alone (and a clock, for an approval that
lapsed), like Thread.status, which it does not replace: the API's `status` stays what it is
("done" says the bot has nothing left to do, not that anything was deployed). The console's
lists show this, so a rejected deploy never reads "done", and each outcome names who and when.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from bot.core import wording
from bot.core.events import (
    DEPLOY_STEPS,
    ApprovalExpired,
    Cancelled,
    CommandResult,
    Deploy,
    DeployResult,
    Error,
    Event,
    HumanResponse,
    SenderConfirmationExpired,
    Step,
    VerificationEnded,
)
from bot.core.thread import Thread

Kind = Literal[
    "deployed", "rejected", "failed", "cancelled", "expired", "refused", "waiting", "running", "done",
    # Kept for what happens after a deploy (its verification, a rollback that marks it faulty):
    "verifying", "verified", "faulty",
    "rolled_back",  # a deploy failed its verification and the bot put the one before back
]
# How each reads, and its colour's class (console.css .outcome-*): one place, so every list agrees.
WORDS: dict[Kind, str] = {
    "deployed": "deployed", "rejected": "rejected", "failed": "failed", "cancelled": "cancelled",
    "expired": "expired", "refused": "refused", "waiting": "waiting", "running": "running", "done": "answered",
    "verifying": "verifying", "verified": "verified", "faulty": "faulty", "rolled_back": "rolled back",
}
# Error kinds: the rules said no (nothing was deployed), never a failure of something that ran.
REFUSALS = ("locked", "frozen", "checks", "recheck", "validation", "promotion")
WAITING_FOR = {
    "waiting_for_approval": "for approval", "waiting_for_lock": "in line for a lock or a freeze",
    "waiting_for_human": "for a reply", "waiting_for_sender": "for the sender to confirm",
}


@dataclass(frozen=True)
class Outcome:
    kind: Kind
    detail: str = ""  # what, in a few words: "v1.2.3 to production", "for approval"
    by: str = ""  # who made it so (a principal, or the channel's name for someone unknown); "": nobody
    at: datetime | None = None  # when

    @property
    def words(self) -> str:
        return WORDS[self.kind]


def outcome(thread: Thread, now: datetime | None = None) -> Outcome:
    """What came of `thread`, as its events say by `now`."""
    cancelled = thread.cancelled()
    if cancelled is not None:
        return Outcome("cancelled", cancelled.reason, _who(cancelled), cancelled.at)
    status = thread.status(now)
    if status in WAITING_FOR:
        return Outcome("waiting", WAITING_FOR[status], at=_last_at(thread))
    if status == "running":
        return Outcome("running", at=_last_at(thread))
    if status == "verifying":
        return Outcome("verifying", _what(last_deploy(thread)), at=_last_at(thread))
    deploy = last_deploy(thread)
    if deploy is not None:
        closed = thread.outcome(deploy)
        if closed is not None:
            return _closed(thread, deploy, closed)
    if status == "failed":
        return Outcome("failed", at=_last_at(thread))
    dropped = next(iter(thread.of(SenderConfirmationExpired)), None)
    if thread.unconfirmed() and dropped is not None:
        return Outcome("expired", "the sender never confirmed", at=dropped.at)
    refused = _refused_command(thread)
    if refused is not None:
        return refused
    return Outcome("done", at=_last_at(thread))


def about(thread: Thread) -> str:
    """What the thread deploys, for its heading: "api v1.3.0 to production" (its last deploy
    step: a rollback's or a promotion's too); "" before it has one."""
    deploy = last_deploy(thread)
    if deploy is None:
        return ""
    named = " ".join(p for p in (getattr(deploy, "service", ""), getattr(deploy, "tag", "")) if p)
    environment = getattr(deploy, "environment", "")
    return f"{named} to {environment}" if environment else named


def _what(deploy: Step | None) -> str:
    return f"{getattr(deploy, 'tag', '')} to {getattr(deploy, 'environment', '')}" if deploy else ""


def _closed(thread: Thread, deploy: Step, closed: Event) -> Outcome:
    """The outcome of the thread's last deploy step, from the event that closed it (and, for
    a deploy that succeeded, from its verification's verdict where it had one)."""
    what = _what(deploy)
    if isinstance(closed, DeployResult):
        rolled_back = _after_failed_verification(thread, closed)
        if rolled_back is not None:
            return rolled_back
        request = thread.approval_for(deploy.id)
        by = closed.approved_by or (request.asker if request else "")
        verdict = next((e for e in thread.of(VerificationEnded) if e.deploy_id == closed.deploy_id), None)
        if closed.ok and verdict is not None and verdict.outcome != "skipped":
            return Outcome("verified" if verdict.outcome == "verified" else "faulty", what, by, verdict.at)
        return Outcome("deployed" if closed.ok else "failed", what, by, closed.at)
    if isinstance(closed, HumanResponse):
        return Outcome("rejected", what, _who(closed), closed.at)
    if isinstance(closed, ApprovalExpired):
        return Outcome("expired", what, at=closed.at)
    if isinstance(closed, Error):
        kind: Kind = "refused" if closed.kind in REFUSALS else "failed"
        return Outcome(kind, what, at=closed.at)
    return Outcome("done", what, at=closed.at)


def _after_failed_verification(thread: Thread, rollback: DeployResult) -> Outcome | None:
    """What a rollback the bot ran because a deploy failed its verification reads as: that
    deploy failed verification and what it rolled back to (never "deployed" by deploybot, as if
    someone had asked for it)."""
    if not rollback.rollback_of:
        return None
    failed = next((e for e in thread.of(VerificationEnded)
                   if e.deploy_id == rollback.rollback_of and e.outcome == "failed"), None)
    faulty = next((e for e in thread.of(DeployResult) if e.deploy_id == rollback.rollback_of), None)
    if failed is None or faulty is None:
        return None
    detail = wording.failed_verification_rolled_back(faulty.tag, rollback.tag, rollback.environment, rollback.ok)
    return Outcome("rolled_back" if rollback.ok else "failed", detail, at=rollback.at)


def _refused_command(thread: Thread) -> Outcome | None:
    """A thread of a command the rules refused (a lock taken, nothing to roll back to)."""
    last = next((e for e in reversed(thread.events) if isinstance(e, CommandResult | Error)), None)
    if isinstance(last, CommandResult) and not last.ok:
        return Outcome("refused", last.text, at=last.at)
    if isinstance(last, Error) and last.kind in REFUSALS:
        return Outcome("refused", last.message, at=last.at)
    return None


def last_deploy(thread: Thread) -> Deploy | None:
    """The thread's newest deploy step (what its outcome is of), None before it has one."""
    return next((e for e in reversed(thread.events) if isinstance(e, DEPLOY_STEPS)), None)


def _last_at(thread: Thread) -> datetime | None:
    return thread.events[-1].at if thread.events else None


def _who(event: HumanResponse | Cancelled) -> str:
    return event.person or event.user
