"""What the bot tells people in a chat or mail thread when an event is recorded. Pure.

Channels add their own formatting (Slack emoji and mentions, email plain text); what is
said, and when, is decided once, here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Literal

from bot.events import (
    Cancelled,
    DeployBackend,
    DeployFrontend,
    DeployResult,
    DeployStarted,
    DoneForNow,
    Error,
    Event,
    RequestMoreInformation,
)
from bot.thread import Thread

Kind = Literal["started", "deployed", "failed", "message", "warning", "cancelled"]
TOLD_ERRORS = ("recheck", "locked", "interrupted", "deployer", "internal")


@dataclass(frozen=True)
class Notice:
    kind: Kind
    text: str  # "{who}" stands for `who`, which each channel writes its own way
    who: str = ""
    detail: str = ""  # a failed deploy's last lines of output
    url: str = ""

    def render(self, who: Callable[[str], str] = str) -> str:
        return self.text.replace("{who}", who(self.who))


def notice(thread: Thread, event: Event) -> Notice | None:
    match event:
        case DeployStarted():
            step = next((e for e in thread.events if e.id == event.step_id), None)
            if isinstance(step, (DeployBackend, DeployFrontend)):
                return Notice("started", f"Deploying {step.service} {step.tag} to {step.environment}…")
            return Notice("started", "Deploying…")
        case DeployResult(ok=True):
            what = f"{event.service} {event.tag} ({event.commit[:7]}) to {event.environment}"
            return Notice("deployed", f"Deployed {what}.", url=event.url)
        case DeployResult():
            code = f" (exit code {event.exit_code})" if event.exit_code is not None else ""
            what = f"{event.service} {event.tag} to {event.environment}"
            return Notice("failed", f"Deploying {what} failed{code}.", detail=event.output, url=event.url)
        case RequestMoreInformation() | DoneForNow():
            return Notice("message", event.message)
        case Error() if event.kind in TOLD_ERRORS:
            return Notice("warning", event.message)
        case Cancelled():
            reason = f": {event.reason}" if event.reason else "."
            return Notice("cancelled", "Cancelled by {who}" + reason, who=event.user)
    return None
