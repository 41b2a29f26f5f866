"""deploybot.toml: the optional file for what flat environment variables cannot say well:
people (one identity across Slack and email), groups, and each environment's rules.

Found in the working directory, or at the path DEPLOYBOT_CONFIG names (then it must exist).
Read with tomllib into frozen pydantic models; every problem is reported at once, one line
each, naming its key path (`people.alice.email`), and entries are checked against each other:
groups hold known people, approvers and may_lock name known people (`carol`) or groups
(`group:sre`), or `*` written on its own; no Slack id or address belongs to two people.

Only settings.py uses this module: it passes in the variables (this module reads no
environment) and turns `FileConfig` into the directory and rules of bot/core/people.py.
"""

from __future__ import annotations

import difflib
import re
import tomllib
from collections.abc import Iterable, Mapping
from datetime import date, datetime, time, timedelta
from pathlib import Path
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from croniter import croniter  # type: ignore[import-untyped]
from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    StrictBool,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from bot.core.code_links import template_problem
from bot.core.deploy_command import command_argv
from bot.core.freeze_windows import Freeze, one_off, parse_moment, parse_weekly, weekly, zone
from bot.core.gate import GateRule
from bot.core.people import ANYONE, GROUP, Agent, Directory, Normalise, Person, Written
from bot.core.policy import parse_approvers
from bot.core.promotion import Order, Promotion, order_problems, parse_soak
from bot.core.triggers import KINDS, Schedule, Trigger
from bot.core.verification import VerifyCheck, VerifyPlan, parse_condition, parse_duration

FILE_NAME = "deploybot.toml"
VARIABLE = "DEPLOYBOT_CONFIG"

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
_KIND = re.compile(r"^[a-z][a-z0-9_-]{0,39}$")


def _deployer_kind(value: str) -> str:
    if not _KIND.match(value):
        raise ValueError(f"{value[:40]!r} is not a deployer's name (like command or github)")
    return value


# How a service deploys: a kind registered in bot/wiring/deployers.py (which refuses a name it
# does not know, at start); here only its shape.
DeployerKind = Annotated[str, AfterValidator(_deployer_kind)]
_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")
_SLACK_ID = re.compile(r"^[UW][A-Z0-9]+$")  # people: U…, or W… on Enterprise Grid
_GITHUB_LOGIN = re.compile(r"^[a-z0-9](?:[a-z0-9-]{0,38})$")
_EMAIL = re.compile(r"^[^@\s<>,;:\"]+@[^@\s<>,;:\"]+\.[^@\s<>,;:\"]+$")


class FileError(ValueError):
    """deploybot.toml is missing, not TOML, or not valid: `problems` has one line each."""

    def __init__(self, problems: Iterable[str]) -> None:
        self.problems = list(problems)
        super().__init__("\n".join(self.problems))


class _Problems(ValueError):
    """Problems found across entries, each already naming its key path."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        super().__init__("\n".join(problems))


def _unique(values: Iterable[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(values))


class PersonEntry(BaseModel):
    """`[people.alice]`: each channel's ids for the person, a string or a list of them: `slack`,
    `email`, `github`, and the kind of any other channel registered (`chat = "u-1"`), which the
    file alone cannot know: those are checked when the root hands the kinds in (`directory`)."""

    model_config = ConfigDict(frozen=True, extra="allow")

    slack: tuple[str, ...] = ()
    email: tuple[str, ...] = ()
    github: tuple[str, ...] = ()  # GitHub logins: a gated deployment's creator (docs/github-gate.md)

    @field_validator("slack", "email", "github", mode="before")
    @classmethod
    def _one_or_many(cls, value: Any) -> Any:
        return (value,) if isinstance(value, str) else value

    @field_validator("slack")
    @classmethod
    def _slack_ids(cls, ids: tuple[str, ...]) -> tuple[str, ...]:
        ids = tuple(i.strip() for i in ids)
        for user_id in ids:
            if not _SLACK_ID.match(user_id):
                raise ValueError(f"{user_id!r} is not a Slack user id (like U012AB3CD)")
        return _unique(ids)

    @field_validator("github")
    @classmethod
    def _logins(cls, logins: tuple[str, ...]) -> tuple[str, ...]:
        logins = tuple(login.strip().lower() for login in logins)
        for login in logins:
            if not _GITHUB_LOGIN.match(login):
                raise ValueError(f"{login!r} is not a GitHub login (like octocat)")
        return _unique(logins)

    @field_validator("email")
    @classmethod
    def _addresses(cls, addresses: tuple[str, ...]) -> tuple[str, ...]:
        addresses = tuple(a.strip().lower() for a in addresses)
        for address in addresses:
            if not _EMAIL.match(address):
                raise ValueError(f"{address!r} is not an email address (like alice@example.com)")
        return _unique(addresses)


    @model_validator(mode="after")
    def _other_kinds(self) -> PersonEntry:
        for kind, value in (self.model_extra or {}).items():
            if not _strings(value):
                raise ValueError(f"{kind} should be a string or a list of strings")
        return self

    def ids(self) -> dict[str, tuple[str, ...]]:
        """Its ids by kind: the three this file knows, then any other channel's, trimmed."""
        other = {kind: _unique(v.strip() for v in ((value,) if isinstance(value, str) else value))
                 for kind, value in (self.model_extra or {}).items()}
        return {"slack": self.slack, "email": self.email, "github": self.github, **other}


def _strings(value: Any) -> bool:
    return isinstance(value, str) or (isinstance(value, list) and all(isinstance(v, str) for v in value))


class AgentEntry(BaseModel):
    """`[agents.claude-code]`: an AI agent that asks for deploys over MCP (bot/adapters/channels/mcp.py)
    and never decides. `owner`: the person its requests count as for approver_must_differ;
    `environments`: where it may ask for deploys (unset: anywhere); its limits; `notify`:
    where its threads are posted for people to decide (`slack:C…`, `email:…`)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    owner: str | None = None
    environments: tuple[str, ...] = ()
    max_open: int = Field(5, ge=1)
    max_per_hour: int = Field(20, ge=1)
    notify: tuple[str, ...] = ()

    @field_validator("notify")
    @classmethod
    def _notify(cls, targets: tuple[str, ...]) -> tuple[str, ...]:
        return _targets(targets)

    def agent(self, name: str) -> Agent:
        return Agent(name, self.owner, self.environments, self.max_open, self.max_per_hour, self.notify)


class EnvironmentEntry(BaseModel):
    """`[environments.production]`: whatever is left out comes from the variables."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    # Strict: TOML has true and false; "yes" is a mistake, not a yes.
    protected: StrictBool | None = None
    approvers: tuple[str, ...] | None = None
    approver_must_differ: StrictBool | None = None
    may_lock: tuple[str, ...] | None = None
    # GitHub services: every CI check on the commit must be green before asking and again
    # right before running (an approver may deploy anyway, with a reason).
    required_checks: StrictBool = False
    # A rollback that succeeds locks the service there ("rolled back from TAG by PERSON").
    lock_after_rollback: StrictBool = True
    # Approvals over time (seconds): a reminder every remind_after (unset: APPROVAL_REMIND;
    # 0: never), and after escalate_after the people of escalate_to are asked too.
    remind_after: int | None = Field(None, ge=0)
    escalate_after: int | None = Field(None, gt=0)
    escalate_to: tuple[str, ...] = ()
    required_approvals: int | None = Field(None, ge=1)  # from different people (unset: 1)

    def written(self) -> Written:
        return Written(self.protected, self.approvers, self.approver_must_differ, self.may_lock)


def _duration(value: str) -> str:
    if parse_duration(value).total_seconds() <= 0:
        raise ValueError(f"{value!r} should be longer than nothing")
    return value


def _url(value: str) -> str:
    if not re.match(r"^https?://[^\s/]+", value):
        raise ValueError(f"{value!r} is not an http:// or https:// URL")
    return value


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


_REPOSITORY = re.compile(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$")


def _soak(value: str | None) -> str | None:
    if value is not None:
        parse_soak(value)
    return value


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


def _targets(targets: tuple[str, ...]) -> tuple[str, ...]:
    targets = tuple(t.strip() for t in targets)
    if not targets:
        raise ValueError("name at least one target: 'slack:CHANNEL_ID' or 'email:ADDRESS'")
    # Whether each is one of a channel's targets is the channel's to say: checked when the root
    # knows the channels (bot/wiring/channels.problems).
    return _unique(t if t.startswith("slack:") else t.lower() for t in targets)


class TriggerEntry(BaseModel):
    """`[[triggers]]`: what GitHub event asks to deploy which service where, posted where."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    on: str
    service: str
    environment: str
    notify: tuple[str, ...]

    @field_validator("notify", mode="before")
    @classmethod
    def _one_or_many(cls, value: Any) -> Any:
        return (value,) if isinstance(value, str) else value

    @field_validator("on")
    @classmethod
    def _kind(cls, value: str) -> str:
        if value not in KINDS:
            raise ValueError(f"{value!r} is not one of: {', '.join(KINDS)}")
        return value

    @field_validator("service", "environment")
    @classmethod
    def _name(cls, value: str) -> str:
        value = value.strip()
        if not _NAME.match(value):
            raise ValueError(f"{value!r}: a name holds only letters, digits, '.', '_' and '-'")
        return value

    @field_validator("notify")
    @classmethod
    def _notify(cls, targets: tuple[str, ...]) -> tuple[str, ...]:
        return _targets(targets)

    def trigger(self) -> Trigger:
        return Trigger(self.on, self.service, self.environment, self.notify)  # type: ignore[arg-type]


class GitHubEnvironmentEntry(BaseModel):
    """`[[github_environments]]`: deployments of `repository` to its GitHub environment
    `github_environment` are gated by deploybot as deploys to `environment` (docs/github-gate.md)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    repository: str
    github_environment: str
    environment: str
    service: str = ""
    notify: tuple[str, ...] = ()

    @field_validator("notify", mode="before")
    @classmethod
    def _one_or_many(cls, value: Any) -> Any:
        return (value,) if isinstance(value, str) else value

    @field_validator("repository")
    @classmethod
    def _repository(cls, value: str) -> str:
        if not _REPOSITORY.match(value):
            raise ValueError(f"{value!r} is not a GitHub repository (like acme/web)")
        return value

    @field_validator("github_environment")
    @classmethod
    def _github_environment(cls, value: str) -> str:
        value = value.strip()
        if not value or len(value) > 255:
            raise ValueError("name the GitHub environment (up to 255 characters)")
        return value

    @field_validator("environment", "service")
    @classmethod
    def _name(cls, value: str) -> str:
        value = value.strip()
        if value and not _NAME.match(value):
            raise ValueError(f"{value!r}: a name holds only letters, digits, '.', '_' and '-'")
        return value

    @field_validator("notify")
    @classmethod
    def _notify(cls, targets: tuple[str, ...]) -> tuple[str, ...]:
        return _targets(targets) if targets else ()

    def rule(self) -> GateRule:
        return GateRule(self.repository, self.github_environment, self.environment, self.service, self.notify)


class ScheduleEntry(BaseModel):
    """`[[schedules]]`: a cron expression (5 fields) in a time zone, the message a thread
    starts with at each occurrence, and where it is posted."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    cron: str
    timezone: str = "UTC"
    message: str
    notify: tuple[str, ...]

    @field_validator("notify", mode="before")
    @classmethod
    def _one_or_many(cls, value: Any) -> Any:
        return (value,) if isinstance(value, str) else value

    @field_validator("cron")
    @classmethod
    def _cron(cls, value: str) -> str:
        value = " ".join(value.split())
        if len(value.split()) != 5 or not croniter.is_valid(value):
            raise ValueError(f"{value!r} is not a cron expression of 5 fields (minute hour day month weekday)")
        return value

    @field_validator("timezone")
    @classmethod
    def _zone(cls, value: str) -> str:
        try:
            ZoneInfo(value.strip())
        except (ZoneInfoNotFoundError, ValueError):
            raise ValueError(f"{value!r} is not a time zone (like Europe/Berlin or UTC)") from None
        return value.strip()

    @field_validator("message")
    @classmethod
    def _message(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("say what the thread should ask for")
        return value.strip()

    @field_validator("notify")
    @classmethod
    def _notify(cls, targets: tuple[str, ...]) -> tuple[str, ...]:
        return _targets(targets)

    def schedule(self) -> Schedule:
        return Schedule(self.cron, self.timezone, self.message, self.notify)


class FreezeEntry(BaseModel):
    """`[[freezes]]`: no deploy to `environments` (a list of names, or "*" for all) starts
    during the window, in `timezone` (wall-clock time there, daylight saving included):
    every week from `from` to `to` ("Fri 16:00" to "Mon 08:00"), or once from `start` to
    `end` (a date, "2026-12-24 18:00", or a TOML date or datetime; a date alone as `end`
    includes that whole day). Written as it was; `freeze()` is what bot/core/freeze_windows.py uses."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    environments: tuple[str, ...]
    from_: str | None = Field(None, alias="from")  # `from` is a Python keyword
    to: str | None = None
    start: datetime | date | str | None = None
    end: datetime | date | str | None = None
    timezone: str = "UTC"
    reason: str

    @field_validator("environments", mode="before")
    @classmethod
    def _one_or_many(cls, value: Any) -> Any:
        return (value,) if isinstance(value, str) else value

    @field_validator("environments")
    @classmethod
    def _environments(cls, names: tuple[str, ...]) -> tuple[str, ...]:
        names = _unique(n.strip() for n in names)
        if not names:
            raise ValueError('name at least one environment, or write "*" for all')
        if ANYONE in names and len(names) > 1:
            raise ValueError('"*" means every environment: write environments = "*" on its own')
        for name in names:
            if name != ANYONE and not _NAME.match(name):
                raise ValueError(f"{name!r}: a name holds only letters, digits, '.', '_' and '-'")
        return names

    @field_validator("from_", "to", mode="before")
    @classmethod
    def _weekly(cls, value: Any) -> Any:
        if isinstance(value, date | datetime | time):
            raise ValueError(
                f"{value} is not a weekday and a time: from and to repeat every week (like \"Fri 16:00\"); "
                "a freeze that happens once has start and end"
            )
        if not isinstance(value, str):
            raise ValueError('should be a weekday and a time, like "Fri 16:00"')
        return str(parse_weekly(value))

    @field_validator("start", "end", mode="before")
    @classmethod
    def _moment(cls, value: Any, info: ValidationInfo) -> Any:
        if not isinstance(value, str | date | datetime | time):
            raise ValueError('should be a date, or a date and a time (like 2026-12-24 or "2026-12-24 18:00")')
        parse_moment(value, end=info.field_name == "end")
        return value.strip() if isinstance(value, str) else value

    @field_validator("timezone")
    @classmethod
    def _zone(cls, value: str) -> str:
        zone(value)
        return value.strip()

    @field_validator("reason")
    @classmethod
    def _reason(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("say why: the people whose deploys wait are told it")
        return value.strip()

    @model_validator(mode="after")
    def _window(self) -> FreezeEntry:
        every_week = self.from_ is not None or self.to is not None
        once = self.start is not None or self.end is not None
        if every_week and once:
            raise ValueError("give from and to (every week) or start and end (once), not both")
        if not every_week and not once:
            raise ValueError(
                'say when: from and to (every week, like from = "Fri 16:00") or start and end (once, '
                "like start = 2026-12-24)"
            )
        if every_week and (self.from_ is None or self.to is None):
            raise ValueError("a weekly freeze needs both from and to")
        if once and (self.start is None or self.end is None):
            raise ValueError("a one-off freeze needs both start and end")
        self.freeze()  # whatever else is wrong (it ends before it starts), said by bot/core/freeze_windows.py
        return self

    def freeze(self) -> Freeze:
        if self.from_ is not None and self.to is not None:
            return weekly(self.environments, self.from_, self.to, timezone=self.timezone, reason=self.reason)
        if self.start is None or self.end is None:
            raise ValueError("a freeze needs from and to, or start and end")
        return one_off(self.environments, self.start, self.end, timezone=self.timezone, reason=self.reason)


class FileConfig(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    people: dict[str, PersonEntry] = Field(default_factory=dict)
    groups: dict[str, tuple[str, ...]] = Field(default_factory=dict)
    environments: dict[str, EnvironmentEntry] = Field(default_factory=dict)
    services: dict[str, ServiceEntry] = Field(default_factory=dict)
    triggers: tuple[TriggerEntry, ...] = ()
    schedules: tuple[ScheduleEntry, ...] = ()
    # Scheduled freezes (bot/core/freeze_windows.py). No key is reserved any more: every unknown key is an error.
    freezes: tuple[FreezeEntry, ...] = ()
    agents: dict[str, AgentEntry] = Field(default_factory=dict)
    github_environments: tuple[GitHubEnvironmentEntry, ...] = ()
    # Promotion in order (bot/core/promotion.py): the environments every commit goes through,
    # and how long it must have been in one before the next.
    promotion: tuple[str, ...] | None = None
    soak: Annotated[str | None, AfterValidator(_soak)] = None

    _source: Path | None = PrivateAttr(None)

    @property
    def source(self) -> Path | None:
        """The file this was read from (None when built in code)."""
        return self._source

    @model_validator(mode="after")
    def _consistent(self) -> FileConfig:
        problems = [
            *self._names(), *self._group_problems(), *self._reference_problems(), *self._shared_ids(),
            *self._repeats(), *self._agent_problems(),
        ]
        if problems:
            raise _Problems(problems)
        return self

    def directory(self, normalisers: Mapping[str, Normalise] | None = None) -> Directory:
        """The people, their ids by kind (`slack = …` of [people.NAME]), compared by the kinds'
        `normalisers` (the channels' own, handed in by the root). Told the kinds, a key of
        [people.NAME] that is none of them is refused (ValueError, a line each)."""
        if normalisers is not None and (unknown := self.unknown_kinds(normalisers)):
            raise _Problems(unknown)
        people = (Person(name, entry.ids()) for name, entry in self.people.items())
        agents = (entry.agent(name) for name, entry in self.agents.items())
        return Directory(people, self.groups, agents=agents, normalisers=normalisers)

    def unknown_kinds(self, kinds: Iterable[str]) -> list[str]:
        """Each key of a [people.NAME] that is no kind of ids the channels have (a typo)."""
        known = [*PersonEntry.model_fields, *(k for k in kinds if k not in PersonEntry.model_fields)]
        lines = []
        for name, entry in self.people.items():
            for kind in entry.model_extra or {}:
                if kind not in known:
                    hint = _did_you_mean(kind, known)
                    expected = hint or f"; expected one of: {', '.join(known)}"
                    lines.append(f"{key_path(('people', name, kind))}: unknown key{expected}")
        return lines

    def written(self) -> dict[str, Written]:
        return {env: entry.written() for env, entry in self.environments.items()}

    def trigger_list(self) -> tuple[Trigger, ...]:
        return tuple(entry.trigger() for entry in self.triggers)

    def gate_rules(self) -> tuple[GateRule, ...]:
        return tuple(entry.rule() for entry in self.github_environments)

    def schedule_list(self) -> tuple[Schedule, ...]:
        return tuple(entry.schedule() for entry in self.schedules)

    def freeze_list(self) -> tuple[Freeze, ...]:
        return tuple(entry.freeze() for entry in self.freezes)

    def promotion_orders(self) -> Promotion:
        """The promotion orders: everyone's, and each service's own (with its soak, else the
        top-level one; `promotion = []`: the service goes anywhere in any order)."""
        soak = parse_soak(self.soak) if self.soak else timedelta(0)
        default = Order(self.promotion, soak) if self.promotion else None
        services = {
            name: Order(e.promotion if e.promotion is not None else (self.promotion or ()),
                        parse_soak(e.soak) if e.soak else soak)
            for name, e in self.services.items() if e.promotion is not None or (e.soak and self.promotion)
        }
        return Promotion(default, services)

    def promotion_problems(self, environments: Iterable[str]) -> list[str]:
        """Orders naming environments that are not declared (or one twice), and a soak with
        no order to soak in."""
        known = list(environments)
        lines = [f"promotion: {why}" for why in order_problems(self.promotion or (), known)]
        if self.soak and not self.promotion:
            lines.append("soak: needs promotion, the order to soak in")
        for name, e in self.services.items():
            where = key_path(("services", name))
            lines += [f"{where}.promotion: {why}" for why in order_problems(e.promotion or (), known)]
            if e.soak and not (e.promotion or self.promotion):
                lines.append(f"{where}.soak: needs promotion, the order to soak in")
        return lines

    def freeze_problems(self, environments: Iterable[str]) -> list[str]:
        """The environments freezes name that are not among `environments` (every environment
        the bot knows, from this file or the variables): one line each, by key path. For
        settings.py, which alone knows them all."""
        known = list(environments)
        return [
            f"{key_path(('freezes', i, 'environments', j))}: there is no environment {name!r}"
            + _did_you_mean(name, known)
            for i, entry in enumerate(self.freezes)
            for j, name in enumerate(entry.environments)
            if name != ANYONE and name not in known
        ]

    def agent_environment_problems(self, environments: Iterable[str]) -> list[str]:
        """The environments agents are given that the bot does not know (as freeze_problems)."""
        known = list(environments)
        return [
            f"{key_path(('agents', name, 'environments', j))}: there is no environment {env!r}"
            + _did_you_mean(env, known)
            for name, entry in self.agents.items()
            for j, env in enumerate(entry.environments)
            if env not in known
        ]

    # --- checks across entries -----------------------------------------------------------

    def _names(self) -> Iterable[str]:
        for table in ("people", "groups", "environments", "services", "agents"):
            for name in getattr(self, table):
                if not _NAME.match(name):
                    yield (
                        f"{key_path((table, name))}: a name may hold only letters, digits, '.', '_' "
                        "and '-', and starts with a letter or a digit"
                    )

    def _group_problems(self) -> Iterable[str]:
        for group, members in self.groups.items():
            for i, member in enumerate(members):
                where = key_path(("groups", group, i))
                if member.startswith(GROUP):
                    yield f"{where}: groups hold people, not groups: list the people of {member} instead"
                elif member == ANYONE:
                    yield f"{where}: a group cannot hold '*': write '*' in approvers or may_lock instead"
                elif member not in self.people:
                    yield f"{where}: {_unknown_person(member, self.people)}"

    def _reference_problems(self) -> Iterable[str]:
        for env, entry in self.environments.items():
            if (entry.escalate_after is None) != (not entry.escalate_to):
                yield f"{key_path(('environments', env))}: escalate_after and escalate_to go together"
            for field in ("approvers", "may_lock", "escalate_to"):
                for i, ref in enumerate(getattr(entry, field) or ()):
                    why = self._bad_reference(ref)
                    if why:
                        yield f"{key_path(('environments', env, field, i))}: {why}"

    def _agent_problems(self) -> Iterable[str]:
        for name, entry in self.agents.items():
            if name in self.people:
                yield f"{key_path(('agents', name))}: {name} is a person too; name the agent otherwise"
            if entry.owner is not None and entry.owner not in self.people:
                yield f"{key_path(('agents', name, 'owner'))}: {_unknown_person(entry.owner, self.people)}"

    def _bad_reference(self, ref: str) -> str | None:
        if ref == ANYONE:
            return None
        if "*" in ref:
            return f"{ref!r}: only '*' written on its own means anyone"
        if ref.startswith(GROUP):
            group = ref.removeprefix(GROUP)
            if group in self.groups:
                return None
            return f"there is no group {group!r} under [groups]{_did_you_mean(group, self.groups)}"
        if ref in self.people:
            return None
        return _unknown_person(ref, self.people)

    def _repeats(self) -> Iterable[str]:
        """A trigger or schedule written twice would start two threads for one event."""
        seen: dict[object, int] = {}
        for i, trigger in enumerate(self.triggers):
            first = seen.setdefault((trigger.on, trigger.service, trigger.environment), i)
            if first != i:
                yield (
                    f"{key_path(('triggers', i))}: the same trigger as triggers[{first}] "
                    f"(on {trigger.on!r}, {trigger.service} to {trigger.environment}): one event would "
                    "start two threads; merge their notify lists"
                )
        seen = {}
        for i, schedule in enumerate(self.schedules):
            first = seen.setdefault(schedule.schedule().id, i)
            if first != i:
                yield f"{key_path(('schedules', i))}: the same schedule as schedules[{first}]"

    def _shared_ids(self) -> Iterable[str]:
        for field, what in (("slack", "Slack id"), ("email", "address")):
            owners: dict[str, str] = {}
            for name, entry in self.people.items():
                for value in getattr(entry, field):
                    owner = owners.setdefault(value, name)
                    if owner != name:
                        yield f"{key_path(('people', name, field))}: {value} is also {owner}'s {what}"


def _unknown_person(ref: str, people: Mapping[str, PersonEntry]) -> str:
    if "@" in ref or _SLACK_ID.match(ref):
        return (
            f"{ref!r} is not a person: name people here, not Slack ids or addresses "
            "(give them a [people.NAME] entry and write NAME)"
        )
    return f"there is no person {ref!r} under [people]{_did_you_mean(ref, people)}"


def _did_you_mean(word: str, choices: Iterable[str]) -> str:
    close = difflib.get_close_matches(word, list(choices), n=1)
    return f" (did you mean {close[0]}?)" if close else ""


def key_path(loc: Iterable[str | int]) -> str:
    """('people', 'alice', 'email', 0) -> people.alice.email[0]; odd keys quoted as in TOML."""
    text = ""
    for part in loc:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            key = part if _BARE_KEY.match(part) else '"' + part.replace("\\", "\\\\").replace('"', '\\"') + '"'
            text += f".{key}" if text else key
    return text


# --- reading the file -------------------------------------------------------------------------


def locate(variables: Mapping[str, str], cwd: Path) -> Path | None:
    """The file to read: DEPLOYBOT_CONFIG's (relative to `cwd`; it must exist), else
    deploybot.toml in `cwd` when there is one, else None (no file: that is fine)."""
    named = _variable(variables, VARIABLE)
    if named is not None:
        path = cwd / Path(named).expanduser()
        if not path.is_file():
            raise FileError([f"{VARIABLE} names {path}, which is not a file"])
        return path
    path = cwd / FILE_NAME
    return path if path.is_file() else None


def read(variables: Mapping[str, str], cwd: Path) -> FileConfig | None:
    """`locate` then `load`: None when there is no file."""
    path = locate(variables, cwd)
    return load(path) if path is not None else None


def load(path: Path) -> FileConfig:
    """The file at `path`, or FileError with every problem, each line starting with the path."""
    try:
        with path.open("rb") as f:
            data = tomllib.load(f)
    except FileNotFoundError:
        raise FileError([f"{path}: no such file"]) from None
    except OSError as e:
        raise FileError([f"{path}: cannot be read: {e.strerror or e}"]) from None
    except UnicodeDecodeError:
        raise FileError([f"{path}: not valid TOML: it is not UTF-8 text"]) from None
    except tomllib.TOMLDecodeError as e:
        raise FileError([f"{path}: not valid TOML: {e}"]) from None
    try:
        config = FileConfig.model_validate(data)
    except ValidationError as e:
        raise FileError(f"{path}: {line}" for line in problems(e)) from None
    config._source = path
    return config


_TABLES: dict[tuple[str, ...], type[BaseModel]] = {
    (): FileConfig, ("people", "*"): PersonEntry, ("environments", "*"): EnvironmentEntry,
    ("services", "*"): ServiceEntry, ("agents", "*"): AgentEntry,
    ("services", "*", "verify", "*"): VerifyEntry,
    ("triggers", "*"): TriggerEntry, ("schedules", "*"): ScheduleEntry, ("freezes", "*"): FreezeEntry,
    ("github_environments", "*"): GitHubEnvironmentEntry,
}
_MESSAGES = {
    "bool_type": "should be true or false",
    "bool_parsing": "should be true or false",
    "string_type": "should be a string",
    "tuple_type": "should be a list of strings",
    "dict_type": "should be a table",
    "model_type": "should be a table",
    "missing": "is missing",
}


def problems(error: ValidationError) -> list[str]:
    """One line per problem, each naming the key path; our messages as written."""
    lines: list[str] = []
    for e in error.errors(include_url=False):
        cause = e.get("ctx", {}).get("error")
        if isinstance(cause, _Problems):
            lines += cause.problems
            continue
        loc = tuple(e["loc"])
        where = key_path(loc)
        if e["type"] == "extra_forbidden":
            lines.append(f"{where}: {_unknown_key(loc)}")
        elif isinstance(cause, ValueError):
            lines.append(f"{where}: {cause}")
        else:
            message = _MESSAGES.get(e["type"], e["msg"])
            if e["type"] == "tuple_type" and loc in (("triggers",), ("schedules",), ("freezes",)):
                message = f"should be an array of tables: write [[{loc[0]}]] above each entry"
            one_or_many = loc[-1] in ("slack", "email", "notify") or loc[::2] == ("freezes", "environments")
            if e["type"] == "tuple_type" and one_or_many:
                message = "should be a string or a list of strings"
            lines.append(f"{where}: {message}" if where else message)
    return lines


def _unknown_key(loc: tuple[str | int, ...]) -> str:
    table = _TABLES.get(tuple("*" if i == 1 else str(part) for i, part in enumerate(loc[:-1])))
    if table is None:
        return "unknown key"
    known = [field.alias or name for name, field in table.model_fields.items() if not field.exclude]
    hint = _did_you_mean(str(loc[-1]), known)
    return f"unknown key{hint}; expected one of: {', '.join(known)}" if not hint else f"unknown key{hint}"


# --- the file and the variables ---------------------------------------------------------------


def _variable(variables: Mapping[str, str], name: str) -> str | None:
    """A variable's value, its name matched case-insensitively (as Settings reads them);
    None when unset or blank."""
    for key, value in variables.items():
        if key.upper() == name and value.strip():
            return value.strip()
    return None


def conflicts(file: FileConfig, variables: Mapping[str, str]) -> list[str]:
    """What is set both in the file and by a variable: one line each, for the operator.
    Pass every variable Settings reads (the environment and .env together)."""
    name = file.source.name if file.source else FILE_NAME
    lines: list[str] = []
    for variable in ("APPROVERS", "APPROVER_EMAILS"):
        value = _variable(variables, variable)
        written = [env for env, entry in file.environments.items() if entry.approvers is not None]
        if value is None or not written:
            continue
        table = parse_approvers(value)
        covered = [env for env in written if env in table or ANYONE in table]
        for env in covered:
            lines.append(f"{env}'s approvers are set in {name} and by {variable}; set them in one place")
        if not covered:
            lines.append(
                f"approvers are set in {name} (for {', '.join(written)}) and by {variable} "
                f"(for {', '.join(table)}); set them in one place"
            )
    settings = (
        ("PROTECTED_ENVIRONMENTS", "protected", "whether {env} is protected is set"),
        ("APPROVER_MUST_DIFFER", "approver_must_differ", "{env}'s approver_must_differ is set"),
    )
    for variable, field, what in settings:
        if _variable(variables, variable) is None:
            continue
        for env, entry in file.environments.items():
            if getattr(entry, field) is not None:
                lines.append(f"{what.format(env=env)} in {name} and by {variable}; set it in one place")
    if file.environments and _variable(variables, "ENVIRONMENTS") is not None:
        lines.append(
            f"the environments' names are set in {name} ([environments.*]) and by ENVIRONMENTS; "
            "set them in one place"
        )
    return lines
