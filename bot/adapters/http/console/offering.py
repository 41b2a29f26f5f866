"""What the console's deploy form offers and shows before anything is asked: a service's tags,
newest first, with their commit subjects and CI state where known, and the change preview of
one of them against what is deployed in the environment now. Read through the deploy path's
own parts (bot.runtime.deploying.Deploying: the service's Versions, its `change`, the facts
it gathers and the deploy rules it asks), so the form previews exactly what the approval will
show and every rule that would refuse it; they are only read here, to say what will happen:
the thread applies them.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from bot.adapters.http.console import model
from bot.core import authority, commands, deploy_rules, wording
from bot.core.events import Change, DeployService, Error, GitTag
from bot.core.people import Identity
from bot.runtime.deploying import Deploying
from bot.runtime.ports import Check, DeployerError, Versions

TAGS_SHOWN = 20  # the newest tags the form offers (an older one: type it)
CI_ASKED = 10  # the newest tags whose CI state is asked for (one request each on GitHub)
SUBJECTS_KEPT = 5_000  # commit subjects remembered: a commit's subject never changes

CiState = Literal["passed", "pending", "failing", "none", "unknown"]


@dataclass(frozen=True)
class Offered:
    """One tag as the form offers it."""

    name: str
    commit: str
    date: str
    subject: str  # its commit's subject ("" where not known)
    ci: CiState  # none: no CI to ask (a local repository); unknown: not asked, or it failed
    current: bool  # what is deployed in the environment now


_subjects: OrderedDict[tuple[str, str], str] = OrderedDict()  # (service, commit) -> subject


def ci_state(checks: list[Check] | None) -> CiState:
    """One word for a commit's CI checks: failing if any fails, else pending if any is."""
    if checks is None:
        return "none"
    if any(c.state == "failure" for c in checks):
        return "failing"
    if any(c.state == "pending" for c in checks):
        return "pending"
    return "passed" if checks else "none"


async def _ci(versions: Versions, commit: str) -> CiState:
    try:
        return ci_state(await versions.checks(commit))
    except DeployerError:
        return "unknown"


async def _subject(service: str, versions: Versions, tags: list[GitTag], index: int) -> str:
    """The subject of tags[index]'s commit: the newest commit it has that the next older tag
    with another commit lacks (Versions has no "show one commit"; a comparison of one commit
    is what every deployer answers). The oldest tag's is not known."""
    commit = tags[index].commit
    if (service, commit) in _subjects:
        return _subjects[service, commit]
    base = next((t.commit for t in tags[index + 1:] if t.commit != commit), None)
    if base is None:
        return ""
    try:
        found = await versions.compare(base, commit, 1)
    except DeployerError:
        return ""
    subject = found.added[0].subject if found.ahead and found.added else ""
    _subjects[service, commit] = subject
    while len(_subjects) > SUBJECTS_KEPT:
        _subjects.popitem(last=False)
    return subject


async def offered(service: str, versions: Versions, current_tag: str, find: str = "") -> list[Offered]:
    """`service`'s newest TAGS_SHOWN tags, newest first (from its `versions`), each with its
    commit's subject and CI state; with `find`, the newest TAGS_SHOWN whose name holds it (any
    case). DeployerError if they cannot be read."""
    tags = await versions.list_tags()
    wanted = find.casefold()
    shown = [i for i, t in enumerate(tags) if wanted in t.name.casefold()][:TAGS_SHOWN]
    subjects = await asyncio.gather(*(_subject(service, versions, tags, i) for i in shown))
    states = await asyncio.gather(*(_ci(versions, tags[i].commit) for i in shown[:CI_ASKED]))
    return [
        Offered(tags[i].name, tags[i].commit, tags[i].date, " ".join(subject.split())[:200],
                states[n] if n < len(states) else "unknown", tags[i].name == current_tag)
        for n, (i, subject) in enumerate(zip(shown, subjects, strict=True))
    ]


# --- the preview --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Preview:
    """What sending the form would ask for, before it is sent."""

    service: str
    tag: str
    environment: str
    commit: str
    change: Change
    ci: CiState
    approval: str  # who must approve, "" where nobody must (an unprotected environment)
    held: str  # what the bot would say of the lock that stops it now, "" when none
    stops: tuple[deploy_rules.Refusal, ...] = ()  # every deploy rule that would refuse it now, in order

    @property
    def lines(self) -> list[str]:
        return wording.change_lines(self.change)

    @property
    def frozen(self) -> str:
        """The freeze that would stop it now, "" when none."""
        return next((s.message for s in self.stops if s.kind == "frozen"), "")

    @property
    def stopping(self) -> list[tuple[str, str, str]]:
        """Each rule that refuses it, as the page lists them: its label, kind and words."""
        return [(wording.preview_stop(s.kind), s.kind, s.message) for s in self.stops]

    @property
    def asks(self) -> str:
        """What sending it would ask for: nobody where a rule refuses it at once (the thread
        would say so, and ask no approval), else who must approve, if anyone."""
        if self.stops:
            return wording.refused_at_once()
        return self.approval or wording.deploys_once_sent()

    def command(self, reason: str) -> str:
        """What sending it says, as the person: the exact chat command."""
        return commands.deploy_text(self.service, self.tag, self.environment, reason)


class Refusal(Exception):
    """Why the form's input cannot be deployed (said in the page, nothing stored)."""


def step_for(deploying: Deploying, service: str, tag: str, environment: str) -> DeployService:
    """The deploy step the form asks for, or the Refusal the deploy path would give it."""
    policy = deploying.policy
    if environment not in policy.environments:
        raise Refusal(wording.unknown_environment(environment, policy.environments))
    spec = policy.catalog.get(policy.catalog.find(service) or "") if service else None
    if spec is None:
        raise Refusal(wording.unknown_service(service, policy.catalog.names))
    # As chat takes it (bot.core.commands): a monorepo service's `v1.2.3` is its `web/v1.2.3`.
    step = DeployService(service=spec.name, tag=spec.full_tag(tag.strip()), environment=environment,
                         source="command")
    invalid = policy.invalid_deploy(step)
    if invalid:
        raise Refusal(invalid)
    return step


async def commit_of(deploying: Deploying, step: DeployService) -> str:
    """The commit the step's tag names now, or the Refusal (no such tag, or it cannot be read):
    the deploy path's own lookup, so the form refuses what a chat request would."""
    found = await deploying.commit_for(step)
    if isinstance(found, Error):
        raise Refusal(found.message)
    return found


async def preview(deploying: Deploying, step: DeployService, commit: str, asking: Identity, now: datetime) -> Preview:
    """The change `step` makes against what is deployed now, and what would stop or hold it
    at `now` (the lock, and every deploy rule that refuses it, from the facts the deploy path
    gathers), for a deploy `asking` asks for: who could approve it never includes them where
    they may not."""
    policy = deploying.policy
    approval = ""
    if policy.needs_approval(step.environment):
        deciders = authority.deciders_for(policy, step.environment, [asking])
        shown = model.describe_deciders(policy, step.environment, deciders)
        approval = wording.approval_needed(policy.timing_for(step.environment).required, shown)
    change, ci, holder, facts = await asyncio.gather(
        deploying.change(step, commit), _ci(deploying.deployers[step.service], commit),
        deploying.locks.holder(step.environment, step.service), deploying.gather(step, commit, now, asking=asking),
    )
    return Preview(step.service, step.tag, step.environment, commit, change, ci, approval,
                   wording.not_deploying(holder.describe()) if holder else "",
                   tuple(deploy_rules.every(facts, deploying.rules)))
