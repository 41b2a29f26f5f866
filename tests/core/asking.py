"""The authority's questions in the shape the tests ask them: who may decide on a request,
lock, unlock, stop, force or skip a verification (bot/core/authority.py answers each)."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime

from bot.core import authority
from bot.core.events import ApprovalEscalated, ApprovalRequested
from bot.core.people import Identity, Rules
from bot.core.policy import Policy
from bot.core.thread import Thread


def thread_of(request: ApprovalRequested, escalated_to: Iterable[str] = ()) -> Thread:
    """A thread holding only `request` (escalated to `escalated_to`, if any)."""
    to = list(escalated_to)
    events = (request, ApprovalEscalated(approval_id=request.approval_id, to=to)) if to else (request,)
    return Thread(request.thread_id or "t", events)


def may_decide(
    policy: Policy, who: Identity, request: ApprovalRequested, escalated_to: Iterable[str] = ()
) -> str | None:
    return authority.why_not(policy, who, authority.Decide(thread_of(request, escalated_to), request))


def may_lock(policy: Policy, who: Identity, environment: str) -> str | None:
    return authority.why_not(policy, who, authority.Lock(environment))


def may_unlock(policy: Policy, who: Identity, environment: str, owner: str, *, target: str = "",
               locked_by: str = "") -> str | None:
    return authority.why_not(policy, who, authority.Unlock(environment, owner, target, locked_by))


def may_stop(policy: Policy, who: Identity, scope: str) -> str | None:
    return authority.why_not(policy, who, authority.Stop(scope))


def may_force(policy: Policy, who: Identity, environment: str) -> str | None:
    return authority.why_not(policy, who, authority.DeployAnyway(environment))


def may_request(policy: Policy, who: Identity, environment: str) -> str | None:
    return authority.why_not(policy, who, authority.Ask(environment))


def may_skip_verification(policy: Policy, who: Identity, environment: str) -> str | None:
    return authority.why_not(policy, who, authority.SkipVerification(environment))


def still_to_decide(policy: Policy, thread: Thread, request: ApprovalRequested) -> list[str]:
    return authority.deciders(policy, thread, request)


# --- one environment's Rules on their own (bot/core/people.py's), asked through a policy of them ---


def _policy_of(rules: Rules) -> tuple[Policy, str]:
    env = rules.environment or "this environment"
    return Policy(environments=frozenset({env}), rules={env: rules}, open_mode=False), env


def may_approve(who: Identity, rules: Rules, requesters: Iterable[Identity | str] = ()) -> str | None:
    """Whether `who` may decide on a request to `rules`' environment asked by `requesters`."""
    policy, env = _policy_of(rules)
    asked = [r if isinstance(r, str) else r.principal for r in requesters]
    return may_decide(policy, who, a_request(env, asked))


def a_request(environment: str, requesters: list[str] | None = None) -> ApprovalRequested:
    """A request to deploy to `environment`, asked by `requesters` (principals; none: nobody)."""
    asked = requesters or []
    return ApprovalRequested(step_id="s", thread_id="t", args_hash="h", service="api", tag="v1", commit="c",
                             environment=environment, requested_by=asked[0] if asked else "", requesters=asked,
                             expires_at=datetime(2030, 1, 1, tzinfo=UTC))


def email_approvers(policy: Policy, environment: str) -> list[tuple[str | None, str]]:
    """(person, address) for each address approval emails to `environment` go to, for a request
    nobody in particular asked: each decider's addresses (the authority's deciders), in order."""
    request = a_request(environment)
    found: dict[str, str | None] = {}
    for principal in authority.deciders(policy, thread_of(request), request):
        person = policy.directory.people.get(principal)
        if person is not None:
            for address in person.ids.get("email", ()):
                found.setdefault(address, person.name)
        elif principal.startswith("email:"):
            found.setdefault(principal.removeprefix("email:"), None)
    return [(person, address) for address, person in found.items()]


def may_lock_under(who: Identity, rules: Rules) -> str | None:
    policy, env = _policy_of(rules)
    return may_lock(policy, who, env)
