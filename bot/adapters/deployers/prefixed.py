"""One service's share of a repository that several share (a monorepo): only the tags that
start with the service's prefix (`web/` for `web/v1.2.3`) are its own.

Tags are taken whole: resolve() knows only a tag with the prefix (whoever asks turns a
user's `v1.2.3` into `web/v1.2.3` first), so another service's tag can never be resolved,
and so never deployed, through this one. Everything else is the inner deployer's.
"""

from __future__ import annotations

from bot.core.events import GitTag
from bot.runtime.ports import Check, Comparison, Deployer, DeployOutcome, DeployRequest


class Prefixed:
    def __init__(self, inner: Deployer, prefix: str) -> None:
        if not prefix:
            raise ValueError("a tag prefix must not be empty")
        self.inner, self.prefix = inner, prefix

    @property
    def resumable(self) -> bool:
        return self.inner.resumable

    @resumable.setter
    def resumable(self, value: bool) -> None:  # the port's is a plain attribute: settable
        self.inner.resumable = value

    async def list_tags(self) -> list[GitTag]:
        """The inner deployer's tags that start with the prefix, in its order (newest first)."""
        return [t for t in await self.inner.list_tags() if t.name.startswith(self.prefix)]

    async def resolve(self, tag: str) -> str | None:
        if not tag.startswith(self.prefix):
            return None
        return await self.inner.resolve(tag)

    async def deploy(self, request: DeployRequest) -> DeployOutcome:
        return await self.inner.deploy(request)

    async def compare(self, base: str, head: str, limit: int) -> Comparison:
        return await self.inner.compare(base, head, limit)

    async def checks(self, commit: str) -> list[Check] | None:
        return await self.inner.checks(commit)

    async def aclose(self) -> None:
        close = getattr(self.inner, "aclose", None)
        if close is not None:
            await close()
