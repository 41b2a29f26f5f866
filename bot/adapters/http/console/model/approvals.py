"""The approvals page (and the board's waiting approvals): each approval request as it stands, who
may decide it and why the viewer may not."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Protocol

from bot.core import authority, people, standing, wording
from bot.core.events import (
    ApprovalEscalated,
    ApprovalExpired,
    ApprovalRequested,
    HumanResponse,
    UserMessage,
    principal_of,
)
from bot.core.people import Identity
from bot.core.policy import Policy
from bot.core.thread import ApprovalRules, Thread


@dataclass(frozen=True)
class Decision:
    approve: bool
    by: str  # the person, else the channel's id
    via: str  # slack, email, token, session, name
    channel: str
    evidence: str  # the Slack user id, the address and Message-ID, the token id, the session id
    at: datetime
    text: str


def decision(event: HumanResponse) -> Decision:
    return Decision(
        approve=bool(event.approve), by=event.person or event.user, via=event.via, channel=event.channel,
        evidence=event.evidence, at=event.at, text=event.text,
    )


@dataclass(frozen=True)
class Approval:
    """One approval request as the approvals page and the board show it."""

    thread_id: str
    request: ApprovalRequested
    asked: str  # what the requester wrote
    who_may_decide: str  # "the sre group or carol" (and whoever it was escalated to)
    why_not: str | None  # why the viewer may not decide; None: they may
    decided: Decision | None
    pending: bool  # still waiting (not decided, not expired, not superseded)
    expired: bool  # lapsed: past its expiry (recorded, or not yet), undecided
    given: tuple[str, ...] = ()  # who approved so far, one per person, oldest first
    escalation: ApprovalEscalated | None = None
    reminders: int = 0  # reminders sent so far
    expiry: ApprovalExpired | None = None  # the recorded expiry: closed, nothing deployed
    required: int = 1  # approvals it needs under the rules it follows now (Thread.approval_rules)
    rules_then: str = ""  # a closed one's rules as they were when decided ("2 of alice, erin"); "": open
    faulty_in: tuple[str, ...] = ()  # the environments where a deploy of its commit was marked faulty

    @property
    def may_decide(self) -> bool:
        return self.why_not is None and self.pending

    @property
    def progress(self) -> str:
        """"1 of 2: approved by bob", for a request that needs several approvals ("" else)."""
        return wording.approval_progress(self.given, self.required) if self.required > 1 else ""

    @property
    def key_facts(self) -> str:
        """Who asked and how far it moves: above Approve on a phone, under the heading."""
        return wording.approval_key_facts(people.shown(self.request.asker or "unknown").name, self.request.change)

    @property
    def warnings(self) -> list[str]:
        """What to know before approving it: its commit was marked faulty since, or it goes
        back to an older commit (commits on the environment now would be removed) without
        being a rollback (whose flag says so)."""
        found = []
        if self.faulty_in:
            found.append(wording.faulty_warning(self.request.commit, self.faulty_in))
        change = self.request.change
        if change is not None and not change.unknown and change.behind and not self.request.rollback_of:
            found.append(wording.goes_back_warning(change.behind, self.request.environment))
        return found

    @property
    def closed_at(self) -> datetime | None:
        """When it was decided, or expired (as recorded): where the decided list sorts it."""
        if self.decided is not None:
            return self.decided.at
        return self.expiry.at if self.expiry is not None else None


def approvals(thread: Thread, viewer: Identity, policy: Policy, now: datetime) -> list[Approval]:
    """Every approval request of `thread`, newest first."""
    found = []
    for request in thread.of(ApprovalRequested):
        stands = standing.of(thread, request, policy, now)
        given = tuple(e.person or e.user for e in stands.given)
        why_not = authority.why_not(policy, viewer, authority.Decide(thread, request))
        if why_not is None and any(principal_of(e) == viewer.principal for e in stands.given):
            why_not = wording.already_approved_by_you(len(given), stands.required)
        found.append(Approval(
            thread_id=thread.id,
            request=request,
            asked=_asked_before(thread, request),
            who_may_decide=describe_deciders(policy, request.environment, list(stands.deciders or ())),
            why_not=why_not,
            decided=decision(stands.decision) if stands.decision is not None else None,
            pending=stands.state == "open",
            expired=stands.state == "expired",
            given=given,
            escalation=stands.escalation,
            reminders=stands.reminders,
            expiry=stands.expiry,
            required=stands.required,
            rules_then=_rules_then(stands.rules) if stands.closed else "",
        ))
    return found[::-1]


def marked_faulty(found: Iterable[Approval], records: Iterable[Deployed]) -> list[Approval]:
    """`found`, each pending one with the environments where a deploy of its commit (of its
    service) is marked faulty in `records`, the deploy history (bot.runtime.ports.DeployRecord)."""
    faulty: dict[tuple[str, str], set[str]] = {}
    for r in records:
        if r.faulty:
            faulty.setdefault((r.service, r.commit), set()).add(r.environment)
    return [
        replace(a, faulty_in=tuple(sorted(faulty.get((a.request.service, a.request.commit), ()))))
        if a.pending else a
        for a in found
    ]


class Deployed(Protocol):
    """What `marked_faulty` reads of a deploy record."""

    @property
    def service(self) -> str: ...
    @property
    def commit(self) -> str: ...
    @property
    def environment(self) -> str: ...
    @property
    def faulty(self) -> bool: ...


def _rules_then(rules: ApprovalRules) -> str:
    """The rules a closed approval was decided under: those it was asked under, or the
    newer ones recorded with its decision (ApprovalRulesChanged), not today's."""
    return wording.rules_then(rules.required, names(rules.approvers or ()))


def describe_deciders(policy: Policy, environment: str, deciders: list[str]) -> str:
    """Who may still decide, in words: the environment's approvers as written ("the sre group")
    when that is all of them, else each one by name."""
    rules = policy.rules_for(environment)
    if set(deciders) == set(rules.approvers) and rules.approvers_as_written:
        return people.describe(rules.approvers_as_written)
    return people.describe(deciders)


def names(principals: Iterable[str]) -> list[str]:
    """Each principal's one name (people.shown), once each, in order; `*` is anyone."""
    return list(dict.fromkeys("anyone" if p == people.ANYONE else people.shown(p).name for p in principals))


def _asked_before(thread: Thread, request: ApprovalRequested) -> str:
    position = thread.events.index(request)
    for e in reversed(thread.events[:position]):
        if isinstance(e, UserMessage) or (isinstance(e, HumanResponse) and e.approve is not True and e.text):
            return e.text
    return ""
