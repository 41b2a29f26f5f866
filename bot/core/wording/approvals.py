"""Approvals: who may decide, and whether an approval still holds. Which one applies is
bot/core/authority.py's and bot/core/policy.py's to say; only the words are here."""

from __future__ import annotations

from datetime import datetime

from bot.core.wording.dates import utc

__all__ = [
    "approval_does_not_match", "approval_expired", "approvals_need_people", "approved_in_another_thread", "bot_cannot",
    "may_not_cancel", "may_not_cancel_in_flight", "may_not_lock", "may_not_stop", "no_approvers_configured",
    "not_an_approver_here", "not_yours_to_decide", "protected_without_approvers", "rejected",
    "requester_cannot_approve", "shared_token_cannot", "use_your_personal_token",
]


def rejected(user: str, text: str) -> str:
    return f"Not deployed: {user} rejected it ({text})." if text.strip() else f"Not deployed: {user} rejected it."


def bot_cannot(what: str) -> str:
    return f"the bot cannot {what}"


def shared_token_cannot(what: str) -> str:
    return (
        f"the shared API token cannot {what}: use a personal token (`python -m bot tokens create NAME`) "
        "or sign in (`python -m bot login-link NAME`); the shared token speaks for nobody in particular"
    )


def use_your_personal_token(person: str) -> str:
    return (
        f"{person} is a person of deploybot.toml: use your personal token (`python -m bot tokens create "
        f"{person}`) or sign in; the shared API token speaks for nobody in particular"
    )


def not_an_approver_here(who: str, where: str, approvers: str) -> str:
    return f"{who} is not an approver for {where}; {approvers} may approve"


def may_not_lock(who: str, where: str, lockers: str) -> str:
    return f"{who} may not lock {where}; {lockers} may"


def may_not_stop(who: str, where: str, lockers: str) -> str:
    return f"{who} may not stop or resume deploys to {where}; {lockers} may"


def may_not_cancel(who: str, environment: str) -> str:
    whose = f"{environment}'s approvers" if environment else "an approver"
    return f"{who} may not cancel this thread: only whoever asked for it or {whose} may"


def may_not_cancel_in_flight(who: str, environment: str) -> str:
    return (
        f"{who} may not cancel this thread while its deploy to {environment} runs or is verified: only "
        f"whoever may skip the verification there may (cancelling ends it unverified)"
    )


def not_yours_to_decide(why: str, deciders: str) -> str:
    """The terminal does not ask someone who may not decide: it says why, and who may."""
    return f"Waiting for approval from {deciders}; you cannot decide it: {why}."


def requester_cannot_approve(user: str) -> str:
    return f"{user} asked for this deploy and cannot also approve it"


def approved_in_another_thread() -> str:
    return "the approval was given in another thread (this one was forked); asking again"


def approval_does_not_match() -> str:
    return "the approved deploy does not match the step it guards"


def approval_expired(expires_at: datetime) -> str:
    return f"the approval expired at {utc(expires_at)}"


def no_approvers_configured() -> str:
    """Said at start in open mode (bot/core/people.OPEN_MODE_NOTICE)."""
    return (
        "no approvers are configured (no deploybot.toml, no APPROVERS or APPROVER_EMAILS): "
        "anyone may approve deploys, to protected environments too"
    )


def protected_without_approvers(environment: str) -> str:
    return (
        f"{environment} is protected but has no approvers: list them under [environments.{environment}] "
        "approvers in deploybot.toml, or in APPROVERS / APPROVER_EMAILS"
    )


def approvals_need_people(environment: str, required: int) -> str:
    return (
        f"{environment} needs {required} approvals from different people, so its approvers must be people "
        "of deploybot.toml, or come from one channel only (all Slack ids in APPROVERS, or all addresses in "
        "APPROVER_EMAILS): not '*', nor Slack ids and addresses together, which could be one person twice"
    )
