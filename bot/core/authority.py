"""Who may do what: one answer for every action of every actor, whichever channel asks. Pure.

Channels bring a proven identity (bot/core/people.py's `Identity`) and ask here; they never
decide. `why_not(policy, who, action)` is None when `who` may do `action`, else the sentence
they are shown. Whoever asks gathers the facts the answer needs first (the thread, an
agent's threads) and passes them in the action, so the same question gets the same answer
on the HTTP API, the console, Slack, email, MCP and the CLI.

What is decided here is *who*; whether the thread is in a state for it (an approval still
pending, a lock still held) is the caller's to check. docs/people-and-approvals.md has the
table of actors and actions; tests/core/test_authority.py holds that table to these answers.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from bot.core import commands, people, wording
from bot.core.events import (
    DEPLOY_STEPS,
    ApprovalRequested,
    LockEnvironment,
    ResumeDeploys,
    StopDeploys,
    UnlockEnvironment,
    principal_of,
)
from bot.core.people import AGENT, ANYONE, API, BOT_USER, TOKEN, Identity, Rules
from bot.core.policy import Policy, lock_owner
from bot.core.thread import FINISHED, Thread

HOUR = timedelta(hours=1)  # an agent's max_per_hour counts the threads it started in this

# --- the actions ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Start:
    """Start a thread (a fork is one more thread too). For an agent, `threads` holds every
    open thread and every thread started within the hour before `now`: what its limits count."""

    threads: Sequence[Thread] = ()
    now: datetime | None = None


@dataclass(frozen=True)
class Ask:
    """Ask for a deploy to `environment`: a deploy, a rollback or a promotion (`what`)."""

    environment: str
    what: str = "deploy"


@dataclass(frozen=True)
class Decide:
    """Approve or reject `request` of `thread` (the same rule: a rejection is a decision)."""

    thread: Thread
    request: ApprovalRequested


@dataclass(frozen=True)
class Reply:
    """Write free text in `thread`."""

    thread: Thread


@dataclass(frozen=True)
class Cancel:
    thread: Thread


@dataclass(frozen=True)
class Fork:
    """Fork `thread`: the fork acts with the forker's authority (`Start` is asked too)."""

    thread: Thread


@dataclass(frozen=True)
class Lock:
    environment: str


@dataclass(frozen=True)
class Unlock:
    """Lift a lock held by `owner` (taking someone else's needs a reason besides: the caller's);
    `target` (`api in production`) and `locked_by` word the refusal."""

    environment: str
    owner: str
    target: str = ""
    locked_by: str = ""


@dataclass(frozen=True)
class Stop:
    """Stop (or resume) deploys to `scope`: an environment, or "*" for every one."""

    scope: str


@dataclass(frozen=True)
class DeployAnyway:
    """Deploy past a freeze or failing CI checks."""

    environment: str


@dataclass(frozen=True)
class SkipVerification:
    """End a deploy's verification without a verdict (`skip verification`) or with one
    taken now (`verify now`): the same rule."""

    environment: str


Action = Start | Ask | Decide | Reply | Cancel | Fork | Lock | Unlock | Stop | DeployAnyway | SkipVerification


def why_not(policy: Policy, who: Identity, action: Action) -> str | None:
    """Why `who` may not do `action` under `policy`, or None when they may."""
    match action:
        case Start():
            return _start(policy, who, action)
        case Ask():
            return _ask(policy, who, action.environment)
        case Decide():
            return _decide(policy, who, action.thread, action.request)
        case Reply():
            return _reply(policy, who, action.thread)
        case Cancel():
            return _cancel(policy, who, action.thread)
        case Fork():
            return _fork(policy, who, action.thread)
        case Lock():
            return _lock(who, policy.rules_for(action.environment))
        case Unlock():
            return _unlock(policy, who, action)
        case Stop():
            return _stop(policy, who, action.scope)
        case DeployAnyway():
            return _deploy_anyway(policy, who, action.environment)
        case SkipVerification():
            return _skip_verification(policy, who, action.environment)
    raise TypeError(f"not an action: {action!r}")


# --- who someone is, for the rules --------------------------------------------------------------


def _is_someone(who: Identity) -> bool:
    return bool(who.evidence.strip()) and who.evidence != BOT_USER and who.person != BOT_USER


def is_shared_token(who: Identity) -> bool:
    """The shared API_TOKEN, with or without a `user` label (which proves nothing)."""
    return who.person is None and who.via in (TOKEN, API)


def _no_powers(who: Identity, bot_what: str, what: str) -> str | None:
    """Why `who` can do nothing that needs a person: the bot or nobody at all (it cannot
    `bot_what`), an agent, or the shared API token (or a token whose person is gone): they
    cannot `what`."""
    if not _is_someone(who):
        return wording.bot_cannot(bot_what)
    if who.via == AGENT:  # whatever the channel, and whatever `user` it claims
        return wording.agent_cannot(who.label, what)
    if is_shared_token(who):
        return wording.shared_token_cannot(what)
    return None


def _admits(allowed: frozenset[str], who: Identity) -> bool:
    return ANYONE in allowed or who.principal in allowed


def _where(rules: Rules) -> str:
    return rules.environment or "this environment"


def _approves(who: Identity, rules: Rules) -> str | None:
    """Why `who` is not among `rules`' approvers (whoever asked aside), or None."""
    refused = _no_powers(who, "decide on its own requests", "decide on deploys")
    if refused:
        return refused
    if not _admits(rules.approvers, who):
        shown = people.describe(rules.approvers_as_written or sorted(rules.approvers))
        return wording.not_an_approver_here(who.label, _where(rules), shown)
    return None


def _agent(policy: Policy, who: Identity) -> people.Agent | None:
    return policy.directory.agent_of(who.principal) if who.via == AGENT else None


def over_limit(agent: people.Agent, threads: Iterable[Thread], now: datetime) -> str | None:
    """Why `agent` may not start one more thread now, or None: at most `max_open` of the
    threads it asked for (started or forked) are open, and it asked for at most
    `max_per_hour` in the last hour. `threads`: every open thread, and every one started in
    the last hour."""
    mine = {t.id: t for t in threads if t.started_by() == agent.principal}.values()
    open_now = sum(1 for t in mine if t.status(now) not in FINISHED)
    if open_now >= agent.max_open:
        return wording.agent_too_many_open(agent.name, open_now, agent.max_open)
    recent = sum(1 for t in mine if t.events and _asked_at(t) > now - HOUR)
    if recent >= agent.max_per_hour:
        return wording.agent_too_many_per_hour(agent.name, recent, agent.max_per_hour)
    return None


def _asked_at(thread: Thread) -> datetime:
    """When a thread was asked for: its first event, or when it was forked."""
    forker = thread.origin.forked_by
    if forker is not None and forker.at is not None and thread.origin.forked_at is not None:
        return forker.at
    return thread.events[0].at


# --- each rule ----------------------------------------------------------------------------------


def _start(policy: Policy, who: Identity, action: Start) -> str | None:
    """Anyone may start a thread; an agent within its limits (max_open, max_per_hour)."""
    if not _is_someone(who):
        return wording.bot_cannot("start threads")
    agent = _agent(policy, who)
    if agent is None or action.now is None:
        return None
    return over_limit(agent, action.threads, action.now)


def _ask(policy: Policy, who: Identity, environment: str) -> str | None:
    """Anyone may ask for a deploy; an agent only to the environments its entry lists
    (none listed: any). The approval it then needs is a decision of its own."""
    agent = _agent(policy, who)
    if agent is not None and agent.environments and environment not in agent.environments:
        return wording.agent_environment_not_allowed(agent.name, environment, agent.environments)
    return None


def _decide(policy: Policy, who: Identity, thread: Thread, request: ApprovalRequested) -> str | None:
    """An approver of the request's environment (by person: any channel is the same
    approver), or someone it was escalated to; with approver_must_differ, nobody who asked
    for it, by any channel."""
    rules = policy.rules_for(request.environment)
    escalation = thread.escalation(request.approval_id)
    if escalation is not None:
        rules = replace(rules, approvers=rules.approvers | frozenset(escalation.to))
    refused = _approves(who, rules)
    if refused:
        return refused
    asked = requesters(policy, thread, request)
    if rules.approver_must_differ and (who.principal in asked or who.evidence in asked):
        return wording.requester_cannot_approve(who.label)  # `evidence`: an old thread's raw user
    return None


def requesters(policy: Policy, thread: Thread, request: ApprovalRequested) -> frozenset[str]:
    """Everyone who asked for `request`, as principals: whoever it names, whoever forked
    the thread it is in, and (an old thread's raw users) the person each one is now."""
    forker = thread.forked_by()
    return policy.requesters(request) | ({forker.principal} if forker is not None else set())


def _reply(policy: Policy, who: Identity, thread: Thread) -> str | None:
    """Anyone may write in a thread (while an approval waits, a reply is feedback: it decides
    nothing); an agent only in a thread it started."""
    if not _is_someone(who):
        return wording.bot_cannot("reply in threads")
    agent = _agent(policy, who)
    if agent is not None and thread.started_by() != agent.principal:
        return wording.agent_not_its_thread(agent.name, thread.id, "reply in")
    return None


def _cancel(policy: Policy, who: Identity, thread: Thread) -> str | None:
    """Whoever asked (started the thread, or forked it), or an approver of the environment its
    deploy is for (of any environment, for a thread with no deploy in it). While a deploy runs
    or is verified, or a gated deploy waits for GitHub's answer, only those who may skip its
    verification: cancelling then ends the bake unverified and lets the lock go. An agent
    cancels only threads it started."""
    if not _is_someone(who):
        return wording.bot_cannot("cancel threads")
    agent = _agent(policy, who)
    if agent is not None and thread.started_by() != agent.principal:
        return wording.agent_not_its_thread(agent.name, thread.id, "cancel")
    in_flight = deploy_in_flight(thread)
    if in_flight is not None:
        refused = _approves(who, policy.rules_for(in_flight))
        return wording.may_not_cancel_in_flight(who.label, in_flight) if refused else None
    if _asked(who, thread):
        return None
    environments = [e for e in [deploy_environment(thread)] if e] or sorted(policy.environments)
    if any(_approves(who, policy.rules_for(e)) is None for e in environments):
        return None
    if agent is not None:
        return wording.agent_not_its_thread(agent.name, thread.id, "cancel")
    return wording.may_not_cancel(who.label, deploy_environment(thread))


def _asked(who: Identity, thread: Thread) -> bool:
    """Whether `who` asked for `thread`: started it, or forked it. The shared token asked for
    every thread it started, whatever `user` label it gave each time (labels prove nothing)."""
    asker = thread.asker()
    if asker is not None and is_shared_token(who):
        return is_shared_token(asker)
    return thread.started_by() == who.principal


def deploy_in_flight(thread: Thread) -> str | None:
    """The environment of a deploy that is running or being verified in `thread`, if any."""
    verifying = thread.verifying()
    if verifying is not None:
        return verifying.environment
    last = thread.last_step()
    if last is not None and isinstance(last[1], DEPLOY_STEPS):
        started = thread.started(last[1].id)
        if started is not None and thread.outcome(last[1]) is None:
            return last[1].environment
    return None


def deploy_environment(thread: Thread) -> str:
    """The environment of the deploy `thread` is about (its newest deploy step), or ""."""
    last = next((e for e in reversed(thread.events) if isinstance(e, DEPLOY_STEPS)), None)
    return last.environment if last is not None else ""


def _fork(policy: Policy, who: Identity, thread: Thread) -> str | None:
    """Whoever may start a thread may fork one (its copied instructions act with the forker's
    authority); an agent only a thread it started."""
    if not _is_someone(who):
        return wording.bot_cannot("fork threads")
    agent = _agent(policy, who)
    if agent is not None and thread.started_by() != agent.principal:
        return wording.agent_not_its_thread(agent.name, thread.id, "fork")
    return None


def _lock(who: Identity, rules: Rules) -> str | None:
    """Whoever may lock the environment (by default its approvers); the refusal names who can."""
    refused = _no_powers(who, "lock environments on its own", "lock or unlock environments")
    if refused:
        return refused
    if not _admits(rules.lockers, who):
        shown = people.describe(rules.lockers_as_written or sorted(rules.lockers))
        return wording.may_not_lock(who.label, _where(rules), shown)
    return None


_ANYONE = Rules(protected=True, approvers=frozenset({ANYONE}))


def _unlock(policy: Policy, who: Identity, action: Unlock) -> str | None:
    """Whoever set a lock by hand may lift it (someone unknown only where they may lock); so
    may whoever may lock the environment (also a stuck deploy's lock)."""
    powerless = _lock(who, _ANYONE)  # the bot, nobody, an agent, the shared token
    if powerless:
        return powerless
    rules = policy.rules_for(action.environment)
    if _lock(who, rules) is None:
        return None
    if action.owner == lock_owner(who) and (who.known or policy.open_mode):
        return None
    shown = people.describe(rules.lockers_as_written or sorted(rules.lockers))
    return wording.unlock_not_allowed(who.label, action.target or action.environment, shown, action.locked_by)


def _stop(policy: Policy, who: Identity, scope: str) -> str | None:
    """Whoever may lock each environment the scope covers."""
    refused = _no_powers(who, "stop deploys on its own", "stop or resume deploys")
    if refused:
        return refused
    for environment in sorted(policy.environments) if scope == "*" else [scope]:
        rules = policy.rules_for(environment)
        if not _admits(rules.lockers, who):
            shown = people.describe(rules.lockers_as_written or sorted(rules.lockers))
            return wording.may_not_stop(who.label, _where(rules), shown)
    return None


def _deploy_anyway(policy: Policy, who: Identity, environment: str) -> str | None:
    """The environment's approvers (the requester too: forcing is not approving, which still
    follows where the environment is protected)."""
    refused = _no_powers(who, "deploy anyway on its own", "deploy anyway")
    if refused:
        return refused
    if _approves(who, policy.rules_for(environment)) is not None:
        return wording.may_not_force(who.label, environment)
    return None


def _skip_verification(policy: Policy, who: Identity, environment: str) -> str | None:
    """Whoever may approve deploys there."""
    refused = _approves(who, policy.rules_for(environment))
    return None if refused is None else wording.may_not_skip_verification(who.label, environment)


# --- what a channel says before anything is stored ------------------------------------------------

def why_not_say(policy: Policy, who: Identity, text: str) -> str | None:
    """Why `who` may not even say `text`, refused before a thread is started for it (or anything
    is recorded in one): a command that takes a person's powers (lock, unlock, stop, resume,
    deploy anyway) from someone who has none at all (the bot, an agent, the shared token). The
    answer is the one the command itself gets, wherever it would go."""
    command = commands.parse(text)
    if isinstance(command, LockEnvironment | UnlockEnvironment):
        return _lock(who, _ANYONE)
    if isinstance(command, StopDeploys | ResumeDeploys):
        return _no_powers(who, "stop deploys on its own", "stop or resume deploys")
    if commands.deploy_anyway(text) is not None:
        return _no_powers(who, "deploy anyway on its own", "deploy anyway")
    return None


# --- who may still decide -------------------------------------------------------------------------


def deciders(policy: Policy, thread: Thread, request: ApprovalRequested) -> list[str]:
    """Who may still decide on `request`, as principals (`*`: anyone), each one this module
    would let decide: its environment's approvers and whoever it was escalated to, but not
    those who approved already (one of several), nor, with approver_must_differ, whoever
    asked for it. What the approval messages name and whom they are sent to, on every channel."""
    escalation = thread.escalation(request.approval_id)
    candidates = set(policy.rules_for(request.environment).approvers) | set(escalation.to if escalation else ())
    if ANYONE in candidates:
        return [ANYONE]
    approved = {principal_of(a) for a in thread.approvals_for(request.approval_id)}
    return sorted(
        p for p in candidates - approved
        if _decide(policy, people.identity_for(p), thread, request) is None
    )


def deciders_for(policy: Policy, environment: str, asking: Iterable[Identity]) -> list[str]:
    """Who could decide on a deploy to `environment` asked by `asking` (before it is asked:
    the console's preview), as principals (`*`: anyone)."""
    rules = policy.rules_for(environment)
    if ANYONE in rules.approvers:
        return [ANYONE]
    asked = {a.principal for a in asking}
    return sorted(p for p in rules.approvers if not (rules.approver_must_differ and p in asked))
