"""What the bot tells people in a chat or mail thread when an event is recorded. Pure.

Channels add their own formatting (Slack emoji and mentions, email plain text); what is
said, and when, is decided once, here (the words themselves are in wording.py).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from bot.core import wording
from bot.core.events import (
    DEPLOY_STEPS,
    ApprovalExpired,
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
)
from bot.core.thread import Thread

Kind = Literal["started", "deployed", "failed", "message", "warning", "cancelled", "waiting"]
TOLD_ERRORS = ("recheck", "locked", "checks", "frozen", "interrupted", "deployer", "internal")


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
    match event:
        case DeployStarted():
            step = next((e for e in thread.events if e.id == event.step_id), None)
            if isinstance(step, DEPLOY_STEPS):
                what = wording.what_to_deploy(step.service, step.tag, step.environment)
                return Notice("started", wording.deploying(what))
            return Notice("started", wording.deploying_something())
        case DeployResult(ok=True):
            what = wording.what_at_commit(event.service, event.tag, event.commit, event.environment)
            return Notice("deployed", wording.deployed(what), url=event.url)
        case DeployResult():
            what = wording.what_to_deploy(event.service, event.tag, event.environment)
            text = wording.deploy_failed(what, event.exit_code)
            return Notice("failed", text, detail=event.output, url=event.url)
        case RequestMoreInformation() | DoneForNow():
            return Notice("message", event.message)
        case Error() if event.kind in TOLD_ERRORS:
            return Notice("warning", event.message)
        case Cancelled():
            return Notice("cancelled", wording.cancelled_by_who(event.reason), who=event.user)
        case LockTaken():
            target = wording.lock_target(event.environment, event.service)
            return Notice("warning", wording.lock_taken_from_you(target, event.by, event.reason))
        case ApprovalExpired():
            request = thread.approval(event.approval_id)
            what = wording.what_to_deploy(request.service, request.tag, request.environment) if request else "it"
            return Notice("warning", wording.approval_expired_notice(what, event.expires_at))
        case SenderConfirmationRequested():
            return Notice("waiting", wording.sender_confirmation_pending(event.address, event.expires_at))
        case SenderConfirmationExpired():
            return Notice("warning", wording.sender_confirmation_expired(event.expires_at))
        case DeployQueued():
            step = next((e for e in thread.events if e.id == event.step_id), None)
            if isinstance(step, DEPLOY_STEPS):
                what = wording.what_to_deploy(step.service, step.tag, step.environment)
                return Notice("waiting", wording.queued(what, event.behind, event.position))
    return None
