"""The services deploybot deploys, and what the rules need to know of each. Pure.

Without `[services.*]` in deploybot.toml the catalog is the two services deploybot always
had, `backend` and `frontend`, from one repository (GIT_REPO, DEPLOY_COMMAND, DEPLOYER).
Where each service's tags come from and how it deploys is the adapters' business
(bot/wiring/app.py builds a deployer per service); here is only what the core decides by.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from bot.core import wording
from bot.core.code_links import CodeLinks


@dataclass(frozen=True)
class Service:
    name: str
    environments: frozenset[str] | None = None  # None: every environment
    tag_prefix: str = ""  # a monorepo's: only tags `web/v1.2.3` belong to web
    links: CodeLinks = CodeLinks()  # to its code host's pages for a tag, a commit, a compare

    def full_tag(self, tag: str) -> str:
        """The tag as stored: `v1.2.3` of a service whose tags are `web/...` is `web/v1.2.3`."""
        return tag if not self.tag_prefix or tag.startswith(self.tag_prefix) else self.tag_prefix + tag

    def short_tag(self, tag: str) -> str:
        return tag.removeprefix(self.tag_prefix) if self.tag_prefix else tag


LEGACY_SERVICES = ("backend", "frontend")


def _legacy() -> Mapping[str, Service]:
    return MappingProxyType({name: Service(name) for name in LEGACY_SERVICES})


@dataclass(frozen=True)
class Catalog:
    services: Mapping[str, Service] = field(default_factory=_legacy)

    @classmethod
    def of(cls, services: Iterable[Service]) -> Catalog:
        return cls(MappingProxyType({s.name: s for s in services}))

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self.services)

    def get(self, name: str) -> Service | None:
        return self.services.get(name)

    def invalid(self, service: str, environment: str) -> str | None:
        """Why `service` cannot be deployed to `environment` (None: it can, as far as the
        catalog goes; the policy checks the environment exists)."""
        spec = self.services.get(service)
        if spec is None:
            return wording.unknown_service(service, self.names)
        if spec.environments is not None and environment not in spec.environments:
            return wording.service_not_in(service, environment, sorted(spec.environments))
        return None

    def find(self, text: str) -> str | None:
        """The service a word names, case-insensitively (people type `API`)."""
        lowered = text.lower()
        return next((name for name in self.services if name.lower() == lowered), None)
