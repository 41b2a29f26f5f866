"""Verification after a deploy (bot/core/verification.py): its checks, round after round
through a bake, and the verdict."""

from __future__ import annotations

from datetime import datetime

from bot.core.wording.dates import utc

__all__ = [
    "automatic_rollback_reason", "check_line", "check_not_in_time", "check_too_big", "check_unreachable",
    "failed_verification_rolled_back", "http_check_answered", "http_check_status", "http_check_without",
    "may_not_skip_verification", "query_failed", "query_not_a_number", "query_not_finite", "query_refused",
    "query_without_result", "rollback_past_freeze", "verification_failed", "verification_rollback_proposed",
    "verification_skipped", "verified", "verified_on_record", "verify_now_refused", "verifying",
    "skipped_on_record",
]


def verifying(what: str, ends_at: datetime, checks: int) -> str:
    return (
        f"Verifying {what}: {checks} check{'s' if checks != 1 else ''} every round until {utc(ends_at)}; "
        "the lock stays held until then. Say `verify now` to end it early if every check holds, "
        "or `skip verification: REASON` (approvers)."
    )


def check_line(name: str, ok: bool | None, value: str) -> str:
    state = "holds" if ok else ("no answer" if ok is None else "FAILS")
    return f"{name}: {value} ({state})"


# What a check answered (bot/adapters/probes, bot/runtime/verifying.py): a check's value, shown
# beside its name. Whatever starts "no answer" could not be evaluated: never a pass.


def check_unreachable(site: str, error: str) -> str:
    return f"no answer from {site}: {error}"


def check_not_in_time(seconds: float) -> str:
    return f"no answer within {seconds:g}s, the round's deadline"


def check_too_big(site: str, limit: int) -> str:
    return f"no answer: {site} sent more than {limit / 1_000_000:g} MB, so it was not read further"


def query_refused(site: str, status: int) -> str:
    return f"no answer: {site} said HTTP {status}"


def query_failed(message: str) -> str:
    return f"no answer: the query failed ({message[:200]})"


def query_not_a_number(result_type: str) -> str:
    return f"no answer: a {result_type} is not a number"


def query_without_result() -> str:
    return "no answer: the query has no result"


def query_not_finite(value: str) -> str:
    return f"no answer: the query answered {value}, which meets no condition"


def http_check_status(status: int, expected: int) -> str:
    return f"HTTP {status}, not {expected}"


def http_check_without(status: int, contains: str) -> str:
    return f"HTTP {status} without {contains!r}"


def http_check_answered(status: int) -> str:
    return f"HTTP {status}"


def verified(what: str, early_by: str = "") -> str:
    how = f" (ended early by {early_by}: every check held)" if early_by else ": every check held for the whole bake"
    return f"Verified {what}{how}. The lock is released."


def verification_failed(what: str, check: str, value: str) -> str:
    return f"Verification of {what} FAILED: {check} at {value}. The deploy is marked faulty."


def verification_skipped(what: str, by: str, reason: str) -> str:
    return f"Verification of {what} skipped by {by}: {reason}. The lock is released."


# The verdict as a deploy's history record keeps it (the deploys page, a deploy's audit trail).


def verified_on_record(by: str) -> str:
    return f"verified early by {by}: every check held" if by else "verified: every check held for the whole bake"


def skipped_on_record(by: str, reason: str) -> str:
    return f"verification skipped by {by or 'someone unknown'}: {reason or 'no reason given'}"


def verify_now_refused(check: str, value: str) -> str:
    return f"Not verified yet: {check} does not hold right now ({value}). The bake goes on."


def may_not_skip_verification(who: str, environment: str) -> str:
    return f"{who} may not skip verification in {environment}: only its approvers may."


def automatic_rollback_reason(check: str, value: str) -> str:
    return f"automatic rollback by deploybot: verification failed, {check} at {value}"


def rollback_past_freeze(reason: str) -> str:
    return f"automatic rollback past a freeze ({reason})"


def verification_rollback_proposed() -> str:
    return "A rollback is proposed: it needs an approval."


def failed_verification_rolled_back(tag: str, back_to: str, environment: str, ok: bool) -> str:
    """A thread whose deploy failed its verification, after the bot's rollback ran."""
    if ok:
        return f"{tag} failed verification in {environment}; rolled back to {back_to}"
    return f"{tag} failed verification in {environment}; the rollback to {back_to} failed too"
