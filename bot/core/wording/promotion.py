"""Promotion in order (bot/core/promotion.py): what a deploy to a later environment is
missing, and durations in words."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta

__all__ = [
    "how_long", "no_promotion_order", "not_a_duration", "not_promoted", "nothing_to_promote", "order_repeats",
    "order_unknown", "promoted_from", "promotion_moved", "runs_already", "short_commit",
]


def how_long(delta: timedelta) -> str:
    """A duration for people, in words: "45 seconds", "1 minute", "2 hours", "3 days"."""
    seconds = max(int(delta.total_seconds()), 0)
    for unit, size in (("day", 86400), ("hour", 3600), ("minute", 60)):
        if seconds >= size:
            n = seconds // size
            return f"{n} {unit}{'s' if n != 1 else ''}"
    return f"{seconds} second{'s' if seconds != 1 else ''}"


def short_commit(tag: str, commit: str) -> str:
    return f"{tag} ({commit[:7]})"


def not_promoted(
    tag: str, commit: str, previous: str, missing: str, soak: timedelta, since: datetime | None,
    last_good: tuple[str, datetime] | None, now: datetime,
) -> str:
    """Why a deploy to a later environment is refused: what is missing in `previous`, the
    newest commit that has it (`last_good`: its tag and when it was deployed there), and the
    way past it."""
    what = short_commit(tag, commit)
    reason = {
        "faulty": f"{what} was marked faulty in {previous}",
        "soaking": (
            f"{what} has been in {previous} for {how_long(now - since) if since else 'no time'}, "
            f"less than the {how_long(soak)} it must soak there"
        ),
        "unverified": f"{what} has not been verified in {previous}",
    }.get(missing, f"{what} has not been deployed to {previous}")
    passed = (
        f"the newest commit that has is {last_good[0]}, {how_long(now - last_good[1])} ago" if last_good
        else "no commit has yet"
    )
    return f"{reason}; {passed}. An approver may say \"deploy anyway: REASON\"."


def promoted_from(previous: str, tag: str, at: datetime, now: datetime) -> str:
    """The reason of a deploy `promote` proposes."""
    return f"promoted: {tag} passed {previous} {how_long(now - at)} ago"


def nothing_to_promote(service: str, environment: str, previous: str) -> str:
    return f"Nothing to promote: no commit of {service} has passed {previous} yet, so none may go to {environment}."


def runs_already(environment: str, tag: str, commit: str) -> str:
    """Why the console offers no Promote: what it would send is on there already."""
    return f"{environment} already runs {tag} ({commit[:7]}): nothing newer has passed the environment before."


def promotion_moved(tag: str, commit: str, to_tag: str, to_commit: str) -> str:
    """A Promote sent from a page that named another commit than `promote` would pick now
    (`to_tag`, `to_commit`; "": none)."""
    if not to_commit:
        return f"{tag} ({commit[:7]}) is no longer what Promote would send, and nothing is now: reload the page"
    return (f"{tag} ({commit[:7]}) is no longer what Promote would send, {to_tag} ({to_commit[:7]}) is: "
            "reload the page and look again")


def no_promotion_order(service: str, environment: str) -> str:
    return (
        f"{service} has no environment before {environment} in its promotion order "
        "(deploybot.toml's promotion): deploy a tag instead"
    )


def order_unknown(unknown: Sequence[str], known: Iterable[str]) -> str:
    return f"{', '.join(unknown)}: not an environment deploybot knows ({', '.join(sorted(known))})"


def order_repeats() -> str:
    return "names an environment twice"


def not_a_duration(text: str) -> str:
    return f"{text!r} is not a duration like 90s, 30m, 2h or 1d"
