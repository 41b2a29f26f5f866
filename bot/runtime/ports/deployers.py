"""A service's deploys: where its versions come from (tags, commits, what changed, CI) and how
a deploy runs."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Literal, Protocol

from bot.core.events import CommitSummary, GitTag


@dataclass(frozen=True)
class DeployRequest:
    deploy_id: str  # idempotency key: thread id + step id
    service: str
    tag: str
    environment: str
    commit: str


@dataclass(frozen=True)
class DeployOutcome:
    ok: bool
    exit_code: int | None
    output: str
    url: str = ""


@dataclass(frozen=True)
class Comparison:
    """`head` against `base`: commits `head` has that `base` lacks (`ahead`, `added`) and the
    other way round (`behind`, `removed`); the lists newest first, at most the limit asked."""

    ahead: int
    behind: int
    added: tuple[CommitSummary, ...] = ()
    removed: tuple[CommitSummary, ...] = ()


CheckState = Literal["success", "pending", "failure"]


@dataclass(frozen=True)
class Check:
    """One CI signal on a commit: a commit status context or a check run."""

    name: str
    state: CheckState


class DeployerError(Exception):
    """The deployer could not do its job at all (not a failed deploy: that is an outcome)."""


class Versions(Protocol):
    """Where a service's versions come from: its tags, the commit each names, what changed
    between two commits and what CI says of one (a local git repository, GitHub). Any way of
    running a deploy can reuse one (bot/adapters/deployers/pair.py)."""

    async def list_tags(self) -> list[GitTag]:
        """Newest first."""
        ...

    async def resolve(self, tag: str) -> str | None:
        """The commit a tag points to now, or None if there is no such tag."""
        ...

    async def compare(self, base: str, head: str, limit: int) -> Comparison:
        """`head` against `base` (commits), for a change preview. DeployerError if either is
        unknown to the repository."""
        ...

    async def checks(self, commit: str) -> list[Check] | None:
        """The CI checks on `commit` (every status context and check run), or None where the
        repository has no CI to ask (a local repository)."""
        ...


class DeployRunner(Protocol):
    """How a deploy of an approved commit runs (a command, a GitHub Actions workflow). Named
    apart from bot.runtime.loop.Runner, which runs threads."""

    resumable: bool
    """True when deploy() with a known deploy_id finds and follows a deploy already running
    for it instead of starting another, so an interrupted deploy can be resumed safely."""

    async def deploy(self, request: DeployRequest) -> DeployOutcome: ...


class Deployer(Versions, DeployRunner, Protocol):
    """A service's deploys: where its versions come from and how a deploy runs, together
    (bot/wiring/deployers.py builds one per service, by kind)."""


class CommitTimes(Protocol):
    """When commits were made (a deployer's versions that know: git, GitHub). Optional: a
    deployer without it gives no lead times."""

    async def commit_times(self, commits: Sequence[str]) -> dict[str, datetime]:
        """The committer time of each commit found; those not found are left out."""
        ...
