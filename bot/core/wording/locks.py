"""Locks and "what's on": who holds an environment, taking someone else's lock, what is
deployed where."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime

from bot.core.wording.dates import utc

__all__ = [
    "already_locked", "deploy_lock_reason", "is_locked", "lock_note", "lock_taken", "lock_taken_from_you",
    "lock_target", "locked", "locked_by", "no_such_environment", "not_locked", "not_locked_by", "not_unlocked",
    "nothing_deployed", "take_with_force", "unlock_not_allowed", "unlocked", "whats_on", "whats_on_line",
]


def deploy_lock_reason(service: str, tag: str) -> str:
    return f"deploying {service} {tag}"


def locked_by(who: str, since: datetime, reason: str) -> str:
    return f"by {who} since {utc(since)}: {reason}"


def lock_target(environment: str, service: str) -> str:
    return f"{service} in {environment}" if service else environment


def is_locked(environment: str, by: str) -> str:
    return f"{environment} is locked {by}"


def no_such_environment(environment: str, known: Iterable[str]) -> str:
    return f"There is no environment {environment!r} (known: {', '.join(sorted(known))})."


def already_locked(holder_description: str) -> str:
    return f"Already locked: {holder_description}."


def locked(environment: str, reason: str) -> str:
    return f"Locked {environment}: {reason}. No deploy to {environment} starts until it is unlocked."


def not_locked_by(why: str) -> str:
    return f"Not locked: {why}."


def not_locked(environment: str) -> str:
    return f"{environment} is not locked."


def not_unlocked(why: str) -> str:
    return f"Not unlocked: {why}."


def unlock_not_allowed(who: str, target: str, who_can: str, locked_by: str = "") -> str:
    """Whoever locked it unlocks plainly; anyone else who may lock takes it over only with
    --force and a reason, so the refusal says that command, not just who."""
    held = f" (locked {locked_by})" if locked_by else ""
    if who_can == "nobody":
        return f"{who} may not unlock {target}{held}; only whoever locked it may"
    return (
        f"{who} may not unlock {target}{held}; whoever locked it may, and {who_can} may take it over: "
        f'"unlock {target} --force: REASON"'
    )


def unlocked(environment: str, locked_by: str) -> str:
    return f"Unlocked {environment}; it had been locked {locked_by}."


def whats_on_line(
    service: str, tag: str, commit: str, at: datetime, approved_by: str | None, url: str | None
) -> str:
    """One service's line in "what's on"."""
    return (
        f"{service} {tag} ({commit[:7]}), deployed {utc(at)}"
        + (f", approved by {approved_by}" if approved_by else "")
        + (f", {url}" if url else "")
    )


def whats_on(environment: str, lines: Sequence[str]) -> str:
    return f"On {environment}: " + "; ".join(lines) + "."


def nothing_deployed(environment: str) -> str:
    return f"Nothing has been deployed to {environment} by deploybot yet."


def lock_note(holder_description: str) -> str:
    return f"Note: {holder_description}."


def take_with_force(target: str, locked_by: str) -> str:
    return (
        f"{target} is locked {locked_by}. To take someone else's lock, give a reason: "
        f'"unlock {target} --force: REASON" (they are told).'
    )


def lock_taken(target: str, locked_by: str, reason: str) -> str:
    return f"Unlocked {target}, taking the lock held {locked_by}: {reason}. They have been told."


def lock_taken_from_you(target: str, by: str, reason: str) -> str:
    return f"{by} lifted your lock on {target}: {reason}"
