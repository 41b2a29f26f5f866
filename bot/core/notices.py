"""What the bot tells people in a chat or mail thread when an event is recorded. Pure.

Channels add their own formatting (Slack emoji and mentions, email plain text); what is
said, and when, is decided once, here (the words themselves are in bot/core/wording/).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from bot.core import people, wording
from bot.core.events import (
    DEPLOY_STEPS,
    ApprovalExpired,
    ApprovalRulesChanged,
    Cancelled,
    DeployQueued,
    DeployResult,
    DeployStarted,
    DoneForNow,
    Error,
    Event,
    LockTaken,
    RequestMoreInformation,
    SenderConfirmationExpired,
    SenderConfirmationRequested,
    VerificationEnded,
    VerificationRefused,
    VerificationStarted,
    entry_for,
)
from bot.core.thread import Thread

Kind = Literal["started", "deployed", "failed", "message", "warning", "cancelled", "waiting"]
TOLD_ERRORS = ("recheck", "locked", "checks", "frozen", "interrupted", "deployer", "internal", "promotion")


@dataclass(frozen=True)
class Notice:
    kind: Kind
    text: str  # "{who}" stands for `who`, which each channel writes its own way
    who: str = ""
    detail: str = ""  # a failed deploy's last lines of output
    url: str = ""

    def render(self, who: Callable[[str], str] = str) -> str:
        # Only the first "{who}": the template's own, which comes before any text a person
        # wrote (a cancel reason saying "{who}" must not turn into a mention).
        if not self.who:  # only a notice naming someone has the placeholder; "{who}" elsewhere is text
            return self.text
        return self.text.replace("{who}", who(self.who), 1)


def notice(thread: Thread, event: Event) -> Notice | None:
    tell = entry_for(_NOTICES, event)
    return tell(thread, event) if tell is not None else None


def _what_step(thread: Thread, step_id: str) -> str | None:
    """The deploy step `step_id` in words ("web v1 to production"), or None if it is not one."""
    step = next((e for e in thread.events if e.id == step_id), None)
    if isinstance(step, DEPLOY_STEPS):
        return wording.what_to_deploy(step.service, step.tag, step.environment)
    return None


def _deploy_started(thread: Thread, event: DeployStarted) -> Notice:
    what = _what_step(thread, event.step_id)
    return Notice("started", wording.deploying(what) if what is not None else wording.deploying_something())


def _deploy_result(thread: Thread, event: DeployResult) -> Notice:
    if event.ok:
        what = wording.what_at_commit(event.service, event.tag, event.commit, event.environment)
        return Notice("deployed", wording.deployed(what), url=event.url)
    what = wording.what_to_deploy(event.service, event.tag, event.environment)
    text = wording.deploy_failed(what, event.exit_code)
    return Notice("failed", text, detail=event.output, url=event.url)


def _message(thread: Thread, event: RequestMoreInformation | DoneForNow) -> Notice:
    return Notice("message", event.message)


def _error(thread: Thread, event: Error) -> Notice | None:
    return Notice("warning", event.message) if event.kind in TOLD_ERRORS else None


def _cancelled(thread: Thread, event: Cancelled) -> Notice:
    return Notice("cancelled", wording.cancelled_by_who(event.reason), who=event.user)


def _lock_taken(thread: Thread, event: LockTaken) -> Notice:
    target = wording.lock_target(event.environment, event.service)
    return Notice("warning", wording.lock_taken_from_you(target, event.by, event.reason))


def _approval_expired(thread: Thread, event: ApprovalExpired) -> Notice:
    request = thread.approval(event.approval_id)
    what = wording.what_to_deploy(request.service, request.tag, request.environment) if request else "it"
    return Notice("warning", wording.approval_expired_notice(what, event.expires_at))


def _approval_rules_changed(thread: Thread, event: ApprovalRulesChanged) -> Notice | None:
    request = thread.approval(event.approval_id)
    if request is None:
        return None
    what = wording.what_to_deploy(request.service, request.tag, request.environment)
    given = len(thread.approvals_for(event.approval_id))
    who = people.describe(event.approvers)
    return Notice("waiting", wording.approval_rules_changed(what, event.required, who, given))


def _sender_confirmation_requested(thread: Thread, event: SenderConfirmationRequested) -> Notice:
    return Notice("waiting", wording.sender_confirmation_pending(event.address, event.expires_at))


def _sender_confirmation_expired(thread: Thread, event: SenderConfirmationExpired) -> Notice:
    return Notice("warning", wording.sender_confirmation_expired(event.expires_at))


def _deploy_queued(thread: Thread, event: DeployQueued) -> Notice | None:
    what = _what_step(thread, event.step_id)
    return Notice("waiting", wording.queued(what, event.behind, event.position)) if what is not None else None


def _verification_started(thread: Thread, event: VerificationStarted) -> Notice:
    what = wording.what_to_deploy(event.service, event.tag, event.environment)
    return Notice("waiting", wording.verifying(what, event.ends_at, len(event.checks)))


def _verification_ended(thread: Thread, event: VerificationEnded) -> Notice:
    started = next((e for e in thread.of(VerificationStarted) if e.deploy_id == event.deploy_id), None)
    what = wording.what_to_deploy(started.service, started.tag, started.environment) if started else "the deploy"
    if event.outcome == "verified":
        return Notice("deployed", wording.verified(what, event.by if event.early else ""))
    if event.outcome == "skipped":
        return Notice("warning", wording.verification_skipped(what, event.by, event.reason))
    return Notice("failed", wording.verification_failed(what, event.check, event.value))


def _verification_refused(thread: Thread, event: VerificationRefused) -> Notice:
    return Notice("warning", event.text)


# What is said, per event type; an event type not here is not told.
_NOTICES: dict[type, Callable[[Thread, Any], Notice | None]] = {
    DeployStarted: _deploy_started,
    DeployResult: _deploy_result,
    RequestMoreInformation: _message,
    DoneForNow: _message,
    Error: _error,
    Cancelled: _cancelled,
    LockTaken: _lock_taken,
    ApprovalExpired: _approval_expired,
    ApprovalRulesChanged: _approval_rules_changed,
    SenderConfirmationRequested: _sender_confirmation_requested,
    SenderConfirmationExpired: _sender_confirmation_expired,
    DeployQueued: _deploy_queued,
    VerificationStarted: _verification_started,
    VerificationEnded: _verification_ended,
    VerificationRefused: _verification_refused,
}
