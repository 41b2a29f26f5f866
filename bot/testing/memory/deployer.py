"""Deployer: a repository's tags and history, and deploys whose outcomes are scripted."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Mapping, Sequence

from bot.core import events as ev
from bot.core.events import GitTag
from bot.runtime.ports import Check, Comparison, DeployerError, DeployOutcome, DeployRequest
from bot.testing.memory.server import round_trip

Outcome = DeployOutcome | BaseException
OK = DeployOutcome(ok=True, exit_code=0, output="deployed")


class MemoryDeployer:
    """Deployer over a dict of tags (newest first). Every deploy() call is kept in
    `requests`; `deploys` holds the deploys actually started (with `resumable`, a call for a
    deploy id already started follows that deploy instead of starting another). Outcomes are
    taken from `outcomes` in order (an exception there is raised: a DeployerError, or any
    BaseException to stand for the process dying mid-deploy), then OK.

    The repository is one linear history, `history` (oldest first): unless given, one commit
    per tag, in the order the tags were given (newest first, so the last tag's commit is the
    oldest), each with the subject "release <tag>". add_commit() puts a commit on top, and
    move_tag() to a commit not in the history puts that commit on top (a tag moved to a new
    commit). compare() counts along it: a commit later in the history is ahead of an earlier
    one, and nothing ever diverges. `ci` holds each commit's checks: checks() gives a copy, or
    None for a commit not in it (no CI to ask). `lookup_error`, when set, is raised by every
    read (list_tags, resolve, compare, checks): the repository cannot be reached."""

    def __init__(
        self,
        tags: Mapping[str, str] | Iterable[tuple[str, str]] = (),
        resumable: bool = False,
        outcomes: Sequence[Outcome] = (),
        history: Iterable[ev.CommitSummary] | None = None,
    ) -> None:
        self.tags: dict[str, str] = dict(tags)
        self.resumable = resumable
        self.outcomes: deque[Outcome] = deque(outcomes)
        self.requests: list[DeployRequest] = []
        self.deploys: list[DeployRequest] = []
        self.lookup_error: DeployerError | None = None  # raised by every read when set
        self.history: list[ev.CommitSummary] = list(history) if history is not None else []
        if history is None:
            for name, commit in reversed(list(self.tags.items())):
                self._on_top(commit, f"release {name}")
        self.ci: dict[str, list[Check]] = {}  # commit -> its checks (none here: no CI to ask)
        self._results: dict[str, DeployOutcome] = {}  # deploy id -> outcome, once it finished

    def move_tag(self, tag: str, commit: str) -> None:
        self.tags[tag] = commit
        self._on_top(commit, f"release {tag}")

    def add_commit(self, sha: str, subject: str = "", author: str = "dev", tag: str | None = None) -> None:
        """A commit on top of the history; with `tag`, tagged so as the newest tag."""
        self.history.append(ev.CommitSummary(sha=sha, subject=subject or f"commit {sha[:7]}", author=author))
        if tag:
            self.tags = {tag: sha, **{n: c for n, c in self.tags.items() if n != tag}}

    def _on_top(self, commit: str, subject: str) -> None:
        if all(c.sha != commit for c in self.history):
            self.history.append(ev.CommitSummary(sha=commit, subject=subject, author="dev"))

    def script(self, *outcomes: Outcome) -> None:
        self.outcomes.extend(outcomes)

    async def list_tags(self) -> list[GitTag]:
        await round_trip()
        if self.lookup_error:
            raise self.lookup_error
        return [GitTag(name=name, commit=commit) for name, commit in self.tags.items()]

    async def resolve(self, tag: str) -> str | None:
        await round_trip()
        if self.lookup_error:
            raise self.lookup_error
        return self.tags.get(tag)

    async def compare(self, base: str, head: str, limit: int) -> Comparison:
        await round_trip()
        if self.lookup_error:
            raise self.lookup_error
        index = {c.sha: i for i, c in enumerate(self.history)}
        for ref in (base, head):
            if ref not in index:
                raise DeployerError(f"no commit {ref!r} in the repository")
        b, h = index[base], index[head]
        added = tuple(reversed(self.history[b + 1 : h + 1]))[: max(limit, 0)]  # empty unless ahead
        removed = tuple(reversed(self.history[h + 1 : b + 1]))[: max(limit, 0)]  # empty unless behind
        return Comparison(ahead=max(h - b, 0), behind=max(b - h, 0), added=added, removed=removed)

    async def checks(self, commit: str) -> list[Check] | None:
        await round_trip()
        if self.lookup_error:
            raise self.lookup_error
        found = self.ci.get(commit)
        return None if found is None else list(found)

    async def deploy(self, request: DeployRequest) -> DeployOutcome:
        self.requests.append(request)
        await round_trip()
        following = self.resumable and any(d.deploy_id == request.deploy_id for d in self.deploys)
        if following and request.deploy_id in self._results:
            return self._results[request.deploy_id]
        if not following:
            self.deploys.append(request)
        outcome = self.outcomes.popleft() if self.outcomes else OK
        if isinstance(outcome, BaseException):
            raise outcome
        self._results[request.deploy_id] = outcome
        return outcome


class Crash(BaseException):
    """Stands for the process dying: not an Exception, so nothing on the way handles it."""
