"""Rollback: back to the last good deploy, never to a faulty one, never a rollback of a rollback."""

from __future__ import annotations

__all__ = [
    "never_deployed", "no_rollback_of_rollback", "nothing_to_roll_back", "rollback_overtaken", "rollback_proposal",
    "rollback_reason", "rolled_back", "rolled_back_lock_reason",
]


def nothing_to_roll_back(service: str, environment: str) -> str:
    return (
        f"There is nothing to roll {service} in {environment} back to: no earlier deploy there "
        "succeeded, is not marked faulty, and has a tag that still points to the same commit."
    )


def never_deployed(service: str, environment: str) -> str:
    return f"{service} has never been deployed to {environment} by deploybot, so there is nothing to roll back."


def no_rollback_of_rollback(service: str, environment: str, tag: str) -> str:
    return (
        f"{service} {tag} on {environment} is itself a rollback; I do not roll back a rollback. "
        f"Roll forward instead: deploy {service} TAG to {environment}."
    )


def rollback_overtaken(service: str, tag: str, environment: str, rolled_back: str) -> str:
    return (
        f"{service} {tag} was deployed to {environment} after this rollback was planned; it rolled "
        f"back {rolled_back}. Ask again: roll back {service} in {environment}"
    )


def rollback_reason(tag: str, current: str) -> str:
    return f"roll back from {current} to {tag}"


def rolled_back_lock_reason(tag: str, person: str) -> str:
    return f"rolled back from {tag} by {person}"


def rolled_back(what: str) -> str:
    return (
        f"Rolled back: deployed {what}. The deploy it replaced is marked faulty and will never be "
        "a rollback target again."
    )


def rollback_proposal(service: str, environment: str, from_tag: str, to_tag: str) -> str:
    """"roll back api in production from v1.1.0 to v1.0.3": what a rollback does."""
    return f"roll back {service} in {environment} " + (f"from {from_tag} to {to_tag}" if from_tag else f"to {to_tag}")
