"""Verifying a deploy after it succeeded: its plan (deploybot.toml's
`[services.NAME.verify.ENV]`), and its state, derived from the thread's events and the
clock alone, so a worker that dies during the bake leaves nothing to lose: whoever runs the
thread next reads how far the bake got, and what each check last answered."""

from __future__ import annotations

import math
import operator
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Literal

from bot.core.events import (
    DEPLOY_STEPS,
    CheckObserved,
    Deploy,
    DeployResult,
    HumanResponse,
    UserMessage,
    VerificationEnded,
    VerificationRefused,
    VerificationStarted,
    VerifyCheck,
)
from bot.core.thread import Thread

OnFailure = Literal["propose", "rollback"]


@dataclass(frozen=True)
class VerifyPlan:
    bake: timedelta
    interval: timedelta
    grace: timedelta
    checks: tuple[VerifyCheck, ...]
    on_failure: OnFailure = "propose"


# --- what deploybot.toml says: durations and conditions ------------------------------------

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)\s*$")
_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}


def parse_duration(text: str) -> timedelta:
    """`"10m"`, `"30s"`, `"1.5s"`, `"500ms"`, `"1h"`; ValueError for anything else."""
    m = _DURATION.match(text)
    if m is None:
        raise ValueError(f"{text!r} is not a duration (like \"30s\", \"10m\", \"500ms\" or \"1h\")")
    return timedelta(seconds=float(m[1]) * _UNITS[m[2]])


_COMPARE: dict[str, Callable[[float, float], bool]] = {
    "<=": operator.le, ">=": operator.ge, "==": operator.eq, "!=": operator.ne, "<": operator.lt, ">": operator.gt,
}
_CONDITION = re.compile(r"^\s*(<=|>=|==|!=|<|>)\s*([-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?)\s*$")


def parse_condition(text: str) -> tuple[str, float]:
    """`"< 0.01"`, `">= 1"`: an operator and a number; ValueError for anything else."""
    m = _CONDITION.match(text)
    if m is None:
        raise ValueError(f"{text!r} is not a condition (an operator, < <= > >= == !=, and a number: \"< 0.01\")")
    return m[1], float(m[2])


def holds(condition: str, value: float) -> bool:
    """Whether `value` meets `condition`; NaN and ±Inf meet none (a ratio of nothing, or a
    division by zero, is no answer: `-Inf < 0.01` must not pass a deploy)."""
    op, bound = parse_condition(condition)
    return math.isfinite(value) and _COMPARE[op](value, bound)


# --- the state of a verification ------------------------------------------------------------


def open_verification(thread: Thread) -> VerificationStarted | None:
    """The verification the thread is in: started, not ended, not cancelled."""
    return thread.verifying()


def abandoned(thread: Thread) -> VerificationStarted | None:
    """A verification the thread was cancelled during: never ended, so its lock is let go."""
    if not thread.cancelled():
        return None
    started = next((e for e in reversed(thread.events) if isinstance(e, VerificationStarted)), None)
    return started if started is not None and ended(thread, started.deploy_id) is None else None


def ended(thread: Thread, deploy_id: str) -> VerificationEnded | None:
    return next((e for e in thread.of(VerificationEnded) if e.deploy_id == deploy_id), None)


def to_verify(thread: Thread, plans: Callable[[str, str], VerifyPlan | None]) -> DeployResult | None:
    """The deploy whose verification must start now: the last step's deploy succeeded, it is
    no rollback (that puts back a known-good version: verifying it could only roll it back
    again), it was run in this thread (not copied into a fork), its service and environment
    have a plan, and nothing was started for it yet."""
    last = thread.last_step()
    if last is None or not isinstance(last[1], DEPLOY_STEPS) or thread.cancelled():
        return None
    result = thread.outcome(last[1])
    if not isinstance(result, DeployResult) or not result.ok or result.rollback_of:
        return None
    if not result.deploy_id.startswith(f"{thread.id}-") or plans(result.service, result.environment) is None:
        return None
    if any(e.deploy_id == result.deploy_id for e in thread.of(VerificationStarted)):
        return None
    return result


def started_for(result: DeployResult, plan: VerifyPlan, now: datetime) -> VerificationStarted:
    return VerificationStarted(
        step_id=result.step_id, deploy_id=result.deploy_id, service=result.service,
        environment=result.environment, tag=result.tag, ends_at=now + plan.bake,
        interval=plan.interval.total_seconds(), grace=plan.grace.total_seconds(), on_failure=plan.on_failure,
        checks=list(plan.checks),
    )


def observations(thread: Thread, started: VerificationStarted) -> dict[str, list[CheckObserved]]:
    """Each check's answers, oldest first."""
    found: dict[str, list[CheckObserved]] = {c.name: [] for c in started.checks}
    for e in thread.of(CheckObserved):
        if e.deploy_id == started.deploy_id and e.check in found:
            found[e.check].append(e)
    return found


def latest(thread: Thread, started: VerificationStarted) -> dict[str, CheckObserved | None]:
    """Each check's newest answer (None: not asked yet): what people are shown."""
    return {name: (seen[-1] if seen else None) for name, seen in observations(thread, started).items()}


def next_round(thread: Thread, started: VerificationStarted) -> datetime:
    """When the checks are next due: an interval after the last round (at the start, now)."""
    rounds = [e.at for e in thread.of(CheckObserved) if e.deploy_id == started.deploy_id]
    if not rounds:
        return started.at
    return min(max(rounds) + timedelta(seconds=started.interval), started.ends_at)


def round_deadline(started: VerificationStarted) -> float:
    """Seconds a round's checks have to answer, all told: an interval, so a round is over
    before the next one is due, however slowly a server answers."""
    return started.interval


def last_round(thread: Thread, started: VerificationStarted) -> datetime | None:
    rounds = [e.at for e in thread.of(CheckObserved) if e.deploy_id == started.deploy_id]
    return max(rounds) if rounds else None


@dataclass(frozen=True)
class Failing:
    check: str
    value: str


def failing(
    thread: Thread, started: VerificationStarted, now: datetime, *, final: bool = False
) -> Failing | None:
    """The first check that fails the verification by `now`: one that answered outside its
    condition, or could not be evaluated for longer than the grace. `final` (the bake is
    over): a check still unanswered, or inside its grace, fails too: it never held."""
    grace = timedelta(seconds=started.grace)
    for name, seen in observations(thread, started).items():
        if not seen:
            if final or now - started.at > grace:
                return Failing(name, "no answer")
            continue
        newest = seen[-1]
        if newest.ok is False:
            return Failing(name, newest.value)
        if newest.ok is None:
            answered = [e for e in seen if e.ok is not None]
            since = next((e.at for e in seen if e.ok is None and (not answered or e.at > answered[-1].at)),
                         newest.at)
            if final or now - since >= grace:
                return Failing(name, newest.value)
    return None


def round_failing(round_: Sequence[CheckObserved]) -> CheckObserved | None:
    """The first check of one round that does not hold right now (unanswered counts)."""
    return next((e for e in round_ if e.ok is not True), None)


# --- what people ask for during a bake -----------------------------------------------------

VerifyAsk = Literal["verify_now", "skip"]


def asked(
    thread: Thread, started: VerificationStarted, parse: Callable[[str], tuple[VerifyAsk, str] | None]
) -> tuple[UserMessage | HumanResponse, VerifyAsk, str] | None:
    """The oldest `verify now` or `skip verification: REASON` said since the bake began and
    not answered yet (`parse` reads a message: what it asks, and the reason)."""
    answered = {e.message_id for e in thread.of(VerificationRefused) if e.deploy_id == started.deploy_id}
    index = thread.events.index(started)
    for e in thread.events[index + 1:]:
        said = isinstance(e, UserMessage) or (isinstance(e, HumanResponse) and e.approve is None)
        if said and isinstance(e, UserMessage | HumanResponse) and e.id not in answered \
                and (found := parse(e.text)) is not None:
            return e, found[0], found[1]
    return None


def automatic_rollback(thread: Thread, step: Deploy) -> VerificationEnded | None:
    """The failed verification `step` rolls back at once, without an approval: a rollback the
    bot planned (source "bot") of a deploy of this thread whose verification failed where
    on_failure = "rollback". None for any other deploy (it follows the usual rules)."""
    rollback_of = getattr(step, "rollback_of", None)
    if step.source != "bot" or not rollback_of or not rollback_of.startswith(f"{thread.id}-"):
        return None
    failed = ended(thread, rollback_of)
    if failed is None or failed.outcome != "failed":
        return None
    started = next((e for e in thread.of(VerificationStarted) if e.deploy_id == rollback_of), None)
    return failed if started is not None and started.on_failure == "rollback" else None
