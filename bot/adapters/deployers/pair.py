"""A deployer from its two parts: where versions come from (ports.Versions) and how a deploy
runs (ports.DeployRunner). A new way of running deploys (Argo CD, Kubernetes) pairs its runner
with the git or GitHub versions already here instead of writing them again."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from bot.core.events import GitTag
from bot.runtime.ports import Check, Comparison, DeployOutcome, DeployRequest, DeployRunner, Versions


class Pair:
    def __init__(self, versions: Versions, runner: DeployRunner) -> None:
        self.versions, self.runner = versions, runner

    @property
    def resumable(self) -> bool:
        return self.runner.resumable

    @resumable.setter
    def resumable(self, value: bool) -> None:  # the port's is a plain attribute: settable
        self.runner.resumable = value

    async def list_tags(self) -> list[GitTag]:
        return await self.versions.list_tags()

    async def resolve(self, tag: str) -> str | None:
        return await self.versions.resolve(tag)

    async def compare(self, base: str, head: str, limit: int) -> Comparison:
        return await self.versions.compare(base, head, limit)

    async def checks(self, commit: str) -> list[Check] | None:
        return await self.versions.checks(commit)

    async def commit_times(self, commits: Sequence[str]) -> dict[str, datetime]:
        """The versions' commit times (ports.CommitTimes), where they know them; else none."""
        known = getattr(self.versions, "commit_times", None)
        return await known(commits) if known is not None else {}

    async def deploy(self, request: DeployRequest) -> DeployOutcome:
        return await self.runner.deploy(request)

    async def aclose(self) -> None:
        """Close each part that holds connections, once (both may be one object)."""
        for part in {id(p): p for p in (self.versions, self.runner)}.values():
            close = getattr(part, "aclose", None)
            if close is not None:
                await close()
