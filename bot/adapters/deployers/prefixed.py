"""One service's share of a repository that several share (a monorepo): only the tags that
start with the service's prefix (`web/` for `web/v1.2.3`) are its own.

Tags are taken whole: resolve() knows only a tag with the prefix (whoever asks turns a
user's `v1.2.3` into `web/v1.2.3` first), so another service's tag can never be resolved,
and so never deployed, through this one. The prefix is a matter of versions only: deploys
run as the inner deployer runs them.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from bot.adapters.deployers.pair import Pair
from bot.core.events import GitTag
from bot.runtime.ports import Check, Comparison, Deployer, Versions


class PrefixedVersions:
    def __init__(self, inner: Versions, prefix: str) -> None:
        if not prefix:
            raise ValueError("a tag prefix must not be empty")
        self.inner, self.prefix = inner, prefix

    async def list_tags(self) -> list[GitTag]:
        """The inner versions' tags that start with the prefix, in their order (newest first)."""
        return [t for t in await self.inner.list_tags() if t.name.startswith(self.prefix)]

    async def resolve(self, tag: str) -> str | None:
        if not tag.startswith(self.prefix):
            return None
        return await self.inner.resolve(tag)

    async def compare(self, base: str, head: str, limit: int) -> Comparison:
        return await self.inner.compare(base, head, limit)

    async def checks(self, commit: str) -> list[Check] | None:
        return await self.inner.checks(commit)

    async def commit_times(self, commits: Sequence[str]) -> dict[str, datetime]:
        known = getattr(self.inner, "commit_times", None)
        return await known(commits) if known is not None else {}


class Prefixed(Pair):
    """A deployer whose versions are only the tags with the prefix; it deploys (and is
    closed) as `inner`."""

    def __init__(self, inner: Deployer, prefix: str) -> None:
        super().__init__(PrefixedVersions(inner, prefix), inner)
        self.inner, self.prefix = inner, prefix
