"""The deploy rules: what stops a deploy besides its approval and the lock, as one ordered
list. Pure.

Each rule is a function from the facts gathered about one deploy (`Facts`: what the runtime
read for it once, bot/runtime/gathering.py) to None (it may go) or a `Refusal`: the kind of
error the deploy path records, the words people and the model read, and whether
`deploy anyway` may pass it. `RULES` is the order they are asked in, and the first refusal
that holds is what the bot says (`first`), when it asks for an approval and again right
before the deploy; the console's preview shows every one (`every`).

A new rule is one function here, placed in `RULES`, the `Policy` field it reads
(bot/core/policy.py), its setting (bot/config/), its words (bot/core/wording.py) and, if it
needs one, the fact it reads (`Facts`, gathered in bot/runtime/gathering.py).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Protocol

from bot.core import authority, promotion, wording
from bot.core.events import Deploy, ErrorKind
from bot.core.freeze_windows import Freeze, FreezeHit, active
from bot.core.people import Identity
from bot.core.policy import Policy
from bot.core.thread import NOBODY, Instruction

ANYWAY_KINDS: tuple[ErrorKind, ...] = ("checks", "frozen", "promotion")
"""The kinds of refusal `deploy anyway` goes past: a deploy stopped by one of them may be
forced (bot/runtime/agent.py finds it by this kind, the console offers it)."""


class Check(Protocol):
    """One CI signal on a commit (bot.runtime.ports.Check)."""

    @property
    def name(self) -> str: ...
    @property
    def state(self) -> str: ...


class OnNow(Protocol):
    """What is deployed now (bot.runtime.ports.DeployRecord): the deploy a rollback replaces."""

    @property
    def deploy_id(self) -> str: ...
    @property
    def tag(self) -> str: ...


@dataclass(frozen=True)
class Refusal:
    """Why a deploy may not go now: the Error kind it is recorded as, what people are told,
    and whether `deploy anyway` (and a failed verification's automatic rollback) passes it."""

    kind: ErrorKind
    message: str
    anyway: bool = True


@dataclass(frozen=True)
class Facts:
    """What the rules read of one deploy, gathered once: the step and the commit its tag
    names, the rules in force, and what the stores and the deployer said at `now`."""

    policy: Policy
    step: Deploy
    commit: str
    now: datetime
    freezes: tuple[Freeze, ...] = ()  # in force: deploybot.toml's and the stop-the-line ones people set
    previous: Sequence[promotion.Deployed] = ()  # the environment before's deploys of the service, newest first
    checks: Sequence[Check] | None = None  # the commit's CI checks, where required; None: no CI to ask
    checks_unreadable: str = ""  # why the CI checks could not be read ("": they were, or were not asked)
    current: OnNow | None = None  # what is deployed there now (read for a rollback)
    instruction: Instruction | None = None  # what asked for the step (None: nothing yet, a preview)
    asking: Identity = NOBODY  # who acts on that instruction (thread.authority: the forker, in a fork)

    @property
    def hit(self) -> FreezeHit | None:
        """The freeze that holds for the step's environment now."""
        return active(self.freezes, self.step.environment, self.now)

    @property
    def forced(self) -> str | None:
        """The step's "deploy anyway" reason, if it has one."""
        return _field(self.step, "force")


Rule = Callable[[Facts], Refusal | None]


# --- each rule, in the order they are asked --------------------------------------------------


def rollback_still_on(facts: Facts) -> Refusal | None:
    """A rollback replaces the deploy it rolls back, and only while that is what is on: once
    someone deployed since it was planned, it would replace a deploy nobody asked it to, and
    mark faulty one that is not on."""
    return overtaken(facts.step, facts.current)


def overtaken(step: Deploy, current: OnNow | None) -> Refusal | None:
    """`rollback_still_on` for what is on now (`current`): asked again under the lock."""
    rolled_back = _field(step, "rollback_of")
    if rolled_back is None or current is None or current.deploy_id == rolled_back:
        return None
    why = wording.rollback_overtaken(
        step.service, current.tag, step.environment, _field(step, "rollback_from") or "an older deploy"
    )
    return Refusal("recheck", wording.not_deploying(why), anyway=False)


def deploy_anyway_holds(facts: Facts) -> Refusal | None:
    """A "deploy anyway" holds when it comes from the newest instruction before the step (the
    one that asked for it: what people say while its approval waits changes nothing), by
    someone the authority lets deploy anyway there."""
    step = facts.step
    if facts.forced is None:
        return None
    instruction = facts.instruction
    if instruction is None or instruction.principal != _field(step, "forced_by"):
        return Refusal("validation", wording.nothing_to_force(), anyway=False)
    why = authority.why_not(facts.policy, facts.asking, authority.DeployAnyway(step.environment))
    return Refusal("validation", why, anyway=False) if why else None


def stop_the_line_since_anyway(facts: Facts) -> Refusal | None:
    """A stop-the-line set after the "deploy anyway" was said is not what it overrode."""
    hit = facts.hit
    if facts.forced is None or hit is None:
        return None
    later = [f for f in hit.freezes if f.kind == "stop-the-line" and _since(f) > facts.step.at]
    if not later:
        return None
    message = wording.frozen(facts.step.environment, later[0].reason, hit.until, later[0].source)
    return Refusal("frozen", message, anyway=False)


def freeze(facts: Facts) -> Refusal | None:
    """No deploy starts while a freeze holds: deploybot.toml's windows, or a stop-the-line."""
    hit = facts.hit
    if hit is None:
        return None
    return Refusal("frozen", wording.frozen(facts.step.environment, hit.reason, hit.until, hit.source))


def promotion_order(facts: Facts) -> Refusal | None:
    """A commit reaches a later environment only after it passed the one before (succeeded
    there, soaked, verified where that is configured, never marked faulty). Rollbacks are
    exempt: they put back what was on."""
    step, rules = facts.step, facts.policy.promotion
    previous = rules.previous(step.service, step.environment)
    if previous is None or promotion.exempt(step):
        return None
    soak, verify = rules.soak(step.service), rules.needs_verification(step.service, previous)
    why = promotion.refusal(facts.commit, previous, facts.previous, facts.now, soak, verify)
    if why is None:
        return None
    last_good = (why.newest.tag, why.newest.at) if why.newest is not None else None
    message = wording.not_promoted(
        step.tag, facts.commit, previous, why.missing, soak, why.deployed_at, last_good, facts.now
    )
    return Refusal("promotion", message)


def ci_checks(facts: Facts) -> Refusal | None:
    """Where the environment has required_checks, the commit's CI checks must all be green (a
    local repository has no CI to ask: docs/people-and-approvals.md)."""
    if facts.step.environment not in facts.policy.required_checks:
        return None
    if facts.checks_unreadable:
        return Refusal("checks", wording.checks_unreadable(facts.commit, facts.checks_unreadable))
    if facts.checks is None:
        return None
    failing = sorted(c.name for c in facts.checks if c.state == "failure")
    pending = sorted(c.name for c in facts.checks if c.state == "pending")
    if failing or pending:
        return Refusal("checks", wording.checks_failing(facts.commit, failing, pending))
    return None


RULES: tuple[Rule, ...] = (
    rollback_still_on, deploy_anyway_holds, stop_the_line_since_anyway, freeze, promotion_order, ci_checks,
)


# --- asking them -------------------------------------------------------------------------------


def first(facts: Facts, rules: Iterable[Rule] = RULES, automatic_rollback: bool = False) -> Refusal | None:
    """The refusal the deploy gets: the first of `rules` that refuses and is not passed. A
    "deploy anyway" passes those it may (it must hold itself: `deploy_anyway_holds` comes
    before them), and so does a failed verification's automatic rollback: it puts back what
    ran before."""
    passing = facts.forced is not None or automatic_rollback
    for rule in rules:
        refusal = rule(facts)
        if refusal is not None and not (passing and refusal.anyway):
            return refusal
    return None


def every(facts: Facts, rules: Iterable[Rule] = RULES) -> list[Refusal]:
    """Every refusal of `rules`, in their order: all that would stop the deploy now."""
    return [refusal for rule in rules if (refusal := rule(facts)) is not None]


def _since(held: Freeze) -> datetime:
    since = getattr(held.window, "since", None)
    return since if isinstance(since, datetime) else datetime.min.replace(tzinfo=UTC)


def _field(step: Deploy, name: str) -> str | None:
    """A field only deploys of the catalog have (a thread's older steps lack it)."""
    value = getattr(step, name, None)
    return value if isinstance(value, str) and value else None
