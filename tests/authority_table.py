"""The actor x action table of docs/people-and-approvals.md#who-may-do-what, read from the doc and
asked of bot/core/authority.py in the situation the doc describes: shared by the unit test that
holds the doc to the function and by the test that asks every channel the same questions."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from bot.core import authority
from bot.core.events import (
    ApprovalRequested,
    DeployResult,
    DeployService,
    UserMessage,
    VerificationStarted,
    VerifyCheck,
    identity_of,
)
from bot.core.people import Agent, Identity, Written
from bot.core.policy import Policy, lock_owner
from bot.core.thread import Thread
from bot.core.triggers import SCHEDULE
from bot.runtime.ports import Lock
from tests import ROOT
from tests.people_kinds import a_person, directory_of

DOC = ROOT / "docs" / "people-and-approvals.md"
NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)

DIRECTORY = directory_of(
    [a_person("alice", ("UALICE",), ("alice@example.com",)), a_person("bob", ("UBOB",), ("bob@example.com",)),
     a_person("dave", ("UDAVE",), ("dave@example.com",)), a_person("erin", ("UERIN",), ("erin@example.com",))],
    agents=[Agent("claude", owner="alice", environments=("staging",))],
)
POLICY = Policy.configured(
    environments=("staging", "production"), directory=DIRECTORY,
    written={"production": Written(protected=True, approvers=("alice", "bob"), approver_must_differ=True),
             "staging": Written(approvers=("alice", "bob"))},
)

# The table's columns, in its order: who each one is.
ACTORS: dict[str, Identity] = {
    "an approver (bob)": DIRECTORY.by("slack", "UBOB"),
    "a person with no powers (dave)": DIRECTORY.by("slack", "UDAVE"),
    "an agent (claude)": DIRECTORY.by_agent("claude"),  # type: ignore[dict-item]
    "the shared `API_TOKEN`": Identity(None, "api", "ci"),
    "an outsider": DIRECTORY.by("slack", "U0STRANGER"),
    "a GitHub login nobody lists": DIRECTORY.by("github", "octocat"),
    "a trigger or schedule": Identity(None, SCHEDULE, "nightly"),
}
assert all(a is not None for a in ACTORS.values())


@dataclass(frozen=True)
class Facts:
    """What a situation names besides who acts in it: when it happened, the thread's id, and a
    check's address. The doc's table is asked with these; a channel that stages the same
    situation asks with its own, so what the authority says there can be compared word for word."""

    at: datetime = NOW
    thread_id: str = "t1"
    check_url: str = "http://x/"


TABLE = Facts()
LOCK_REASON = "maintenance"


def said(who: Identity, text: str, at: datetime = NOW) -> UserMessage:
    user = who.evidence if who.via in ("slack", "email") else who.label
    return UserMessage(text=text, user=user, person=who.person, via=who.via, evidence=who.evidence, at=at)


def asked_by(who: Identity, environment: str = "production", facts: Facts = TABLE) -> tuple[Thread, ApprovalRequested]:
    """A thread `who` started that waits for the approval of a deploy to `environment`."""
    at, thread_id = facts.at, facts.thread_id
    message = said(who, f"deploy api v1.2.3 to {environment}", at)
    step = DeployService(service="api", tag="v1.2.3", environment=environment, at=at)
    request = ApprovalRequested(
        step_id=step.id, thread_id=thread_id, args_hash="h", service="api", tag="v1.2.3", commit="c" * 40,
        environment=environment, requested_by=identity_of(message).principal if who.person is None else who.principal,
        requesters=[who.principal], expires_at=at + timedelta(hours=1), at=at,
    )
    return Thread(thread_id, (message, step, request)), request


def verifying(who: Identity, facts: Facts = TABLE) -> Thread:
    """A thread `who` started whose production deploy succeeded and is being verified."""
    at, thread_id = facts.at, facts.thread_id
    message = said(who, "deploy api v1.2.3 to production", at)
    step = DeployService(service="api", tag="v1.2.3", environment="production", at=at)
    result = DeployResult(step_id=step.id, deploy_id=f"{thread_id}-{step.id}", service="api", tag="v1.2.3",
                          environment="production", commit="c" * 40, ok=True, at=at)
    check = VerifyCheck(kind="http", name="up", url=facts.check_url)
    started = VerificationStarted(step_id=step.id, deploy_id=result.deploy_id, service="api", tag="v1.2.3",
                                  environment="production", ends_at=at + timedelta(minutes=10), interval=60, grace=0,
                                  on_failure="rollback", checks=[check], at=at)
    return Thread(thread_id, (message, step, result, started))


def held(owner: str, facts: Facts = TABLE) -> Lock:
    """The lock on production set by hand by `owner`, at the situation's time."""
    return Lock("production", owner, LOCK_REASON, facts.at)


def unlocking(lock: Lock) -> authority.Unlock:
    """Lifting `lock`, asked as every channel asks it: what is locked, and by whom, word the refusal."""
    return authority.Unlock(lock.environment, lock.owner, lock.target, lock.by())


OTHER = DIRECTORY.by("slack", "UERIN")  # "someone else": a person with no powers who is none of the columns
CAROL = "manual:carol"  # the owner of "someone else's lock": set by hand by someone who is none of the columns
Situation = Callable[[Identity, Facts], authority.Action]


# The table's rows: the question each one asks, for an actor.
ACTIONS: dict[str, Situation] = {
    "start a thread": lambda who, facts: authority.Start((), facts.at),
    "ask for a deploy to production": lambda who, facts: authority.Ask("production"),
    "roll back production": lambda who, facts: authority.Ask("production", "roll back"),
    "promote to production": lambda who, facts: authority.Ask("production", "promote"),
    "approve or reject someone else's request": lambda who, facts: authority.Decide(*asked_by(OTHER, facts=facts)),
    "approve their own request": lambda who, facts: authority.Decide(*asked_by(who, facts=facts)),
    "reply in someone else's thread": lambda who, facts: authority.Reply(asked_by(OTHER, facts=facts)[0]),
    "reply in their own thread": lambda who, facts: authority.Reply(asked_by(who, facts=facts)[0]),
    "cancel their own thread": lambda who, facts: authority.Cancel(asked_by(who, facts=facts)[0]),
    "cancel someone else's thread": lambda who, facts: authority.Cancel(asked_by(OTHER, facts=facts)[0]),
    "cancel a thread while its deploy runs or is verified": lambda who, facts: authority.Cancel(verifying(who, facts)),
    "fork their own thread": lambda who, facts: authority.Fork(asked_by(who, facts=facts)[0]),
    "fork someone else's thread": lambda who, facts: authority.Fork(asked_by(OTHER, facts=facts)[0]),
    "lock production": lambda who, facts: authority.Lock("production"),
    "unlock a lock they set": lambda who, facts: unlocking(held(lock_owner(who), facts)),
    "unlock (take) someone else's lock": lambda who, facts: unlocking(held(CAROL, facts)),
    "stop or resume deploys": lambda who, facts: authority.Stop("production"),
    "deploy anyway (past a freeze or failing checks)": lambda who, facts: authority.DeployAnyway("production"),
    "skip verification, or verify now": lambda who, facts: authority.SkipVerification("production"),
}


@dataclass(frozen=True)
class Cell:
    action: str
    actor: str
    allowed: bool


def documented() -> list[Cell]:
    """Every cell of the doc's table, as written."""
    text = DOC.read_text()
    section = text.split("## Who may do what", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| ")]
    header = [c.strip() for c in rows[0].strip("|").split("|")]
    cells = []
    for row in rows[1:]:
        values = [c.strip() for c in row.strip("|").split("|")]
        if set(values[0]) <= {"-"}:
            continue
        for actor, value in zip(header[1:], values[1:], strict=True):
            assert value in ("yes", "no"), f"{values[0]} / {actor}: {value!r} is neither yes nor no"
            cells.append(Cell(values[0], actor, value == "yes"))
    return cells


def answered(action: str, actor: str, who: Identity | None = None, facts: Facts = TABLE) -> str | None:
    """The authority's answer for one cell: None (allowed) or the sentence. `who` and `facts`:
    the actor as a channel sees them (an outsider's Slack id or address) and the situation as it
    staged it (its thread's id, its time), for the same question in that channel's words."""
    who = who or ACTORS[actor]
    return authority.why_not(POLICY, who, ACTIONS[action](who, facts))
