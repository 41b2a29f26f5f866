"""Approvals over time: several approvers, reminders, expiry, escalation, the queue; and the
approval messages the channels keep up to date."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from bot.core.wording.dates import utc

__all__ = [
    "already_approved_by_you", "approval_expired_notice", "approval_progress", "approval_rules_changed",
    "approval_still_open", "approvals_needed", "approved_by_all", "approved_by_so_far", "approvers_needed", "escalated",
    "escalated_to_you", "expired_in_place", "expired_not_deployed", "no_approval_needed", "no_longer_asked",
    "not_asking_again", "one_of", "queued", "rejected_notice", "reminder", "reply_to_decide", "rules_then",
    "the_approvers", "waiting_for_turn",
]


def waiting_for_turn(position: int) -> str:
    return f"{position - 1} earlier deploy{'s' if position != 2 else ''} waiting for their turn"


def expired_not_deployed(expires_at: datetime) -> str:
    return f"this approval expired at {utc(expires_at)}; nothing was deployed"


def already_approved_by_you(count: int, required: int) -> str:
    more = max(required - count, 1)
    return f"you have approved already; it needs {more} more approval{'s' if more != 1 else ''} from someone else"


def approval_progress(given: Sequence[str], required: int) -> str:
    """"1 of 2: approved by bob": how far a request that needs several approvals got."""
    return f"{len(given)} of {required}: approved by {', '.join(given)}" if given else f"0 of {required} approvals"


def rejected_notice(gave_feedback: bool, model: bool) -> str:
    """What the console says after a rejection: only a model re-plans, and only from
    feedback someone gave; without a model the thread ends there."""
    if not model:
        return "Rejected: nothing is deployed, and nothing more happens until someone asks again."
    if not gave_feedback:
        return "Rejected: nothing is deployed; the model reads the rejection and answers in this thread."
    return "Rejected: the model re-plans from your feedback."


def approvals_needed(required: int) -> str:
    return f"{required} approval{'s' if required != 1 else ''}"


def approval_rules_changed(what: str, required: int, who: str, count: int) -> str:
    """A pending approval put under rules that changed since it was asked (`who`: who may
    decide, as people.describe words them; `count`: the approvals that still count)."""
    return (
        f"The rules changed since the approval to deploy {what} was asked: it now needs "
        f"{approvals_needed(required)}, from {who} ({count} so far)."
    )


def approvers_needed(required: int, names: Sequence[str]) -> str:
    """Who decides, and how many of them must: "alice or erin", "2 of alice, bob, carol"."""
    if required <= 1:
        return one_of(names)
    return f"{required} of {', '.join(names)}" if names else f"{required} approvals from nobody"


def rules_then(required: int, names: Sequence[str]) -> str:
    """An approval's rules as they were when it was decided (not today's): who could decide, how many."""
    if names:
        return approvers_needed(required, names)
    return f"{required} approval{'s' if required != 1 else ''} (who could decide was not recorded then)"


def no_approval_needed() -> str:
    return "no approval needed"


def approval_expired_notice(what: str, expires_at: datetime) -> str:
    return f"The approval to deploy {what} expired at {utc(expires_at)}; nothing was deployed."


def not_asking_again(what: str, expires_at: datetime) -> str:
    return (
        f"{approval_expired_notice(what, expires_at)} I am not asking for it again by myself: "
        "ask me again if it should still be deployed."
    )


def reminder(what: str, deciders: str, expires_at: datetime) -> str:
    return (
        f"Reminder: deploying {what} still waits for approval from {deciders}. It expires at "
        f"{utc(expires_at)}."
    )


def escalated(what: str, to: str) -> str:
    return f"Nobody has decided on deploying {what} yet, so I have asked {to} too."


def queued(what: str, behind: str, position: int) -> str:
    return f"Approved; deploying {what} waits in line (number {position}): {behind}. It starts when it is its turn."


def one_of(pending: Sequence[str]) -> str:
    """["bob", "carol", "erin"] -> "bob, carol or erin": who may still decide."""
    if not pending:
        return "nobody"
    return pending[0] if len(pending) == 1 else f"{', '.join(pending[:-1])} or {pending[-1]}"


def approval_still_open(given: Sequence[str], required: int) -> str:
    """A request that needs several approvals, after one that was not the last."""
    more = max(required - len(given), 1)
    return (
        f"{approval_progress(given, required)}; it needs {more} more approval{'s' if more != 1 else ''} "
        "from someone else."
    )


def approved_by_so_far(who: str, given: Sequence[str], required: int) -> str:
    """The requester's update after an approval that did not yet decide."""
    return f"Approved by {who}. {approval_still_open(given, required)}"


def approved_by_all(who: str, given: Sequence[str], required: int) -> str:
    """The requester's update after the approval that made the number needed."""
    return f"Approved by {who}. {approval_progress(given, required)}."


def expired_in_place(expires_at: datetime) -> str:
    """What an approval message says once it lapsed (its buttons are gone)."""
    return f"Expired at {utc(expires_at)}, not deployed: nobody decided in time."


def escalated_to_you(what: str, expires_at: datetime) -> str:
    """The top of the approval message (a Slack DM, an email) someone gets when asked too."""
    return (
        f"Nobody has decided on deploying {what} yet, so you are asked too. The request expires at "
        f"{utc(expires_at)}."
    )


def reply_to_decide() -> str:
    """The end of a follow-up mail in an approval email thread (a reminder, progress)."""
    return "Reply APPROVE to this email to deploy, or reply with what should change."


def no_longer_asked(what: str) -> str:
    """A follow-up mail to an approver once the request is closed by expiry."""
    return f"You need not decide on deploying {what} any more."


def the_approvers() -> str:
    """Who a reminder names when the channel does not know them one by one."""
    return "the approvers"
