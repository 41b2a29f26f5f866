"""deploybot.toml's services and how each is verified: `[services.*]`, with their
`links` and `verify` tables."""

from __future__ import annotations

import re
from typing import Annotated, Literal
from urllib.parse import urlsplit

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator, model_validator

from bot.config.file_values import _REPOSITORY, _duration, _soak, _url
from bot.core.code_links import template_problem
from bot.core.deploy_command import command_argv
from bot.core.verification import VerifyCheck, VerifyPlan, parse_condition, parse_duration

_KIND = re.compile(r"^[a-z][a-z0-9_-]{0,39}$")


def _deployer_kind(value: str) -> str:
    if not _KIND.match(value):
        raise ValueError(f"{value[:40]!r} is not a deployer's name (like command or github)")
    return value


# How a service deploys: a kind registered in bot/wiring/deployers.py (which refuses a name it
# does not know, at start); here only its shape.
DeployerKind = Annotated[str, AfterValidator(_deployer_kind)]


def _shown(url: str) -> str:
    """A check's URL as people see it: no user, password or query (often a credential)."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.hostname or ''}{f':{parts.port}' if parts.port else ''}{parts.path}"


class PrometheusCheckEntry(BaseModel):
    """`[[services.api.verify.production.prometheus]]`: a PromQL query that must meet a condition."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    url: str  # the Prometheus server: its HTTP API /api/v1/query is asked
    query: str
    condition: str  # "< 0.01"

    _check_url = field_validator("url")(_url)

    @field_validator("condition")
    @classmethod
    def _condition(cls, value: str) -> str:
        parse_condition(value)
        return value


class HttpCheckEntry(BaseModel):
    """`[[services.api.verify.production.http]]`: a URL that must answer `status` (and hold `contains`)."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    url: str
    status: int = Field(200, ge=100, le=599)
    contains: str = ""
    timeout: str = "5s"

    _check_url = field_validator("url")(_url)
    _check_timeout = field_validator("timeout")(_duration)


class VerifyEntry(BaseModel):
    """`[services.api.verify.production]`: how a deploy of api to production is verified after
    it succeeded: its checks every `interval` for `bake`; a check may be unanswerable for
    `grace`; a failure proposes a rollback (`on_failure = "propose"`) or rolls back at once."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    bake: str = "10m"
    interval: str = "30s"
    grace: str = "1m"
    on_failure: Literal["propose", "rollback"] = "propose"
    prometheus: tuple[PrometheusCheckEntry, ...] = ()
    http: tuple[HttpCheckEntry, ...] = ()

    _check_durations = field_validator("bake", "interval", "grace")(_duration)

    @model_validator(mode="after")
    def _some_check(self) -> VerifyEntry:
        if not self.prometheus and not self.http:
            raise ValueError("has no check: add [[...prometheus]] or [[...http]] entries")
        return self

    def plan(self) -> VerifyPlan:
        checks: list[VerifyCheck] = []
        names: set[str] = set()

        def named(name: str) -> str:
            unique, n = name, 1
            while unique in names:
                n += 1
                unique = f"{name} #{n}"
            names.add(unique)
            return unique

        for p in self.prometheus:
            checks.append(VerifyCheck(kind="prometheus", name=named(p.query), url=p.url, query=p.query,
                                      condition=p.condition))
        for h in self.http:
            checks.append(VerifyCheck(kind="http", name=named(f"GET {_shown(h.url)}"), url=h.url, status=h.status,
                                      contains=h.contains, timeout=parse_duration(h.timeout).total_seconds()))
        return VerifyPlan(parse_duration(self.bake), parse_duration(self.interval), parse_duration(self.grace),
                          tuple(checks), self.on_failure)



class LinksEntry(BaseModel):
    """`[services.api.links]`: URL templates of a code host that is not GitHub (a service with
    `github` links to GitHub without them)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    tag: str = ""  # "https://git.example.com/acme/api/-/tags/{tag}"
    commit: str = ""  # ".../-/commit/{commit}"
    compare: str = ""  # ".../-/compare/{from}...{to}"

    @model_validator(mode="after")
    def _templates(self) -> LinksEntry:
        for kind in ("tag", "commit", "compare"):
            template = getattr(self, kind)
            problem = template_problem(kind, template) if template else None
            if problem:
                raise ValueError(problem)
        return self


class ServiceEntry(BaseModel):
    """`[services.api]`: where its tags come from and how it deploys."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    repo: str | None = None  # a local git repository (relative to this file); unset: GIT_REPO
    github: str | None = None  # owner/name on GitHub
    deployer: DeployerKind = "command"
    command: str | None = None  # the deploy command (unset: DEPLOY_COMMAND)
    workflow: str | None = None  # the GitHub Actions workflow file (deployer = "github")
    environments: tuple[str, ...] | None = None  # unset: every environment
    tag_prefix: str = ""
    verify: dict[str, VerifyEntry] = Field(default_factory=dict)  # per environment
    # The service's own promotion order and soak (unset: the top-level ones).
    promotion: tuple[str, ...] | None = None
    soak: Annotated[str | None, AfterValidator(_soak)] = None
    links: LinksEntry | None = None  # its code host's pages (unset: GitHub's, with `github`)

    @field_validator("command")
    @classmethod
    def _command(cls, value: str | None) -> str | None:
        if value is not None:
            command_argv(value, what="command")
        return value

    @field_validator("github")
    @classmethod
    def _repository(cls, value: str | None) -> str | None:
        if value is not None and not _REPOSITORY.match(value):
            raise ValueError(f"{value!r} is not a GitHub repository (like acme/web)")
        return value

    @model_validator(mode="after")
    def _deployer(self) -> ServiceEntry:
        if self.deployer == "github" and not (self.github and self.workflow):
            raise ValueError('deployer = "github" needs github = "owner/name" and workflow = "deploy.yml"')
        if self.deployer == "github" and (self.repo or self.command):
            raise ValueError('deployer = "github" takes its tags from GitHub: repo and command do not apply')
        if self.deployer == "command" and self.workflow:
            raise ValueError('workflow applies to deployer = "github" only')
        outside = sorted(set(self.verify) - set(self.environments)) if self.environments is not None else []
        if outside:
            raise ValueError(f"verify names {', '.join(outside)}, not among its environments")
        return self
