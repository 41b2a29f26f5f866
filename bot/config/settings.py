"""The one place that reads the environment (and an optional .env file), and deploybot.toml.

The environment is flat (SLACK_BOT_TOKEN, SMTP_HOST, ...), so Settings keeps flat fields;
each channel or feature is read through its own small model (`settings.slack`,
`settings.email`, `settings.github`, `settings.llm`: None when it is off). Half a
configuration is refused when Settings is built, naming the variables that are missing.

People, groups and per-environment rules live in deploybot.toml (./deploybot.toml, or where
DEPLOYBOT_CONFIG says: bot/config/settings_file.py), read when Settings is built; together with
APPROVERS, APPROVER_EMAILS, PROTECTED_ENVIRONMENTS and APPROVER_MUST_DIFFER they make the
policy (`settings.policy()`, failing closed: bot/core/people.py). A file that is not valid, a
setting made both in the file and by a variable, or a protected environment left without
approvers is refused at start, one line per problem.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import timedelta
from pathlib import Path
from typing import Any, Literal, Self
from urllib.parse import unquote, urlsplit

import httpx
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    SecretStr,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_settings import BaseSettings, SettingsConfigDict

from bot.config import settings_file
from bot.config.settings_file import DeployerKind, FileConfig, FileError, ServiceEntry
from bot.core import wording
from bot.core.catalog import LEGACY_SERVICES, Catalog, Service
from bot.core.code_links import CodeLinks
from bot.core.deploy_command import DRY_RUN, command_argv
from bot.core.gate import GateRule, service_for
from bot.core.people import Directory, Normalise
from bot.core.policy import DEFAULT_ENVIRONMENTS, Policy, PolicyError, Timing, parse_approvers, parse_required
from bot.core.prompt import CONTEXT_BUDGET, MIN_BUDGET
from bot.core.redis_target import RedisTarget
from bot.core.triggers import Schedule, Trigger, targets
from bot.core.verification import VerifyPlan

DEFAULT_MODELS = {"openai": "gpt-4o-mini", "anthropic": "claude-3-5-haiku-latest"}


class ConfigError(ValueError):
    """A configuration problem worded for the operator: it names environment variables."""


def _words(text: str) -> frozenset[str]:
    return frozenset(w.strip() for w in text.split(",") if w.strip())


class SlackSettings(BaseModel):
    model_config = ConfigDict(frozen=True)

    bot_token: SecretStr
    signing_secret: SecretStr
    app_token: SecretStr | None = None  # set: Socket Mode instead of HTTP
    api_url: str = "https://slack.com/api/"


class EmailSettings(BaseModel):
    model_config = ConfigDict(frozen=True)

    smtp_host: str
    smtp_port: int = 587
    smtp_username: str | None = None
    smtp_password: SecretStr | None = None
    smtp_tls: Literal["none", "starttls", "tls"] = "starttls"
    sender: str  # EMAIL_FROM
    inbound_secret: SecretStr
    reply_secret: SecretStr
    allowed_senders: frozenset[str] = frozenset()  # lower-cased addresses and @domains
    max_bytes: int = 1_000_000
    trusted_authserv_ids: frozenset[str] = frozenset()  # lower-cased
    mailbox_authenticated_domains: frozenset[str] = frozenset()  # lower-cased, without "@"


class GitHubSettings(BaseModel):
    model_config = ConfigDict(frozen=True)

    token: SecretStr
    repository: str  # owner/name
    workflows: dict[str, str]  # service -> workflow file; at least one
    api_url: str = "https://api.github.com"
    ref: str = "main"  # "{tag}": dispatch on the tag itself
    poll_seconds: float = 5.0
    commit_input: str = "commit"  # "": the workflow takes no commit input


class GitHubAppSettings(BaseModel):
    """deploybot as a GitHub App: the gate of GitHub environments (docs/github-gate.md)."""

    model_config = ConfigDict(frozen=True)

    app_id: int
    private_key: SecretStr  # PEM, checked at start to be an RSA private key
    api_url: str = "https://api.github.com"
    rules: tuple[GateRule, ...] = ()  # [[github_environments]]


class ServiceSettings(BaseModel):
    """One service as the adapters need it: where its tags come from, how it deploys."""

    model_config = ConfigDict(frozen=True)

    name: str
    deployer: DeployerKind  # registered in bot/wiring/deployers.py
    repo: Path = Path(".")  # the command deployer's git repository
    command: str = DRY_RUN
    github: str | None = None  # owner/name
    workflow: str | None = None
    tag_prefix: str = ""


class NotifyWebhookSettings(BaseModel):
    model_config = ConfigDict(frozen=True)

    urls: tuple[str, ...]  # NOTIFY_WEBHOOK_URL, comma-separated: every one gets every payload
    secret: SecretStr  # signs each payload (HMAC-SHA256)


class LlmSettings(BaseModel):
    model_config = ConfigDict(frozen=True)

    provider: str
    model: str
    api_key: SecretStr  # "none" for an openai-generic server that wants no key
    base_url: str | None = None


class Settings(BaseSettings):
    # Inputs stay out of validation errors: they hold the secrets as plain text.
    model_config = SettingsConfigDict(env_file=".env", extra="ignore", hide_input_in_errors=True)

    # A plain str (redis-py and the embedded server take it as it is; nothing logs it), but
    # its password is one of secrets() and the URL stays out of reprs.
    redis_url: str | None = Field(
        None, repr=False, description="unset: start an embedded Redis under DATA_DIR"
    )
    # Sentinel (instead of REDIS_URL) or Cluster (REDIS_URL names any node): see `redis`.
    redis_sentinels: str | None = Field(None, description="host:port,host:port of the Sentinels")
    redis_sentinel_master: str | None = Field(None, description="the master's name the Sentinels watch")
    redis_password: SecretStr | None = Field(None, description="the Redis servers' password (not the Sentinels')")
    redis_sentinel_password: SecretStr | None = Field(None, description="the Sentinels' own password")
    redis_cluster: bool = Field(False, description="REDIS_URL names a node of a Redis Cluster")
    redis_wait_ms: int = Field(
        500, ge=0, description="ms a write that must survive a failover waits for a replica; 0: never"
    )
    data_dir: Path = Path(".deploybot")
    host: str = "0.0.0.0"
    port: int = 8000
    api_token: SecretStr | None = None
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"] = "INFO"

    llm_provider: str | None = None
    llm_model: str | None = None
    llm_base_url: str | None = None
    llm_timeout: float = Field(60.0, gt=0)  # seconds for one model call, its retries included
    llm_api_key: SecretStr | None = None
    openai_api_key: SecretStr | None = None
    anthropic_api_key: SecretStr | None = None

    slack_bot_token: SecretStr | None = None
    slack_signing_secret: SecretStr | None = None
    slack_app_token: SecretStr | None = Field(None, description="set: Socket Mode instead of HTTP")
    slack_api_url: str = "https://slack.com/api/"

    smtp_host: str | None = None
    smtp_port: int = 587
    smtp_username: str | None = None
    smtp_password: SecretStr | None = None
    smtp_tls: Literal["none", "starttls", "tls"] = "starttls"
    email_from: str | None = None
    inbound_email_secret: SecretStr | None = None
    email_reply_secret: SecretStr | None = None
    email_allowed_senders: str = Field("", description="addresses and @domain entries")
    email_max_bytes: int = 1_000_000
    email_trusted_authserv_ids: str = Field(
        "", description="authserv-ids of the receiving mail servers whose Authentication-Results prove a sender",
    )
    email_mailbox_authenticated_domains: str = Field(
        "", description="domains whose every mail is sent by its mailbox's own signed-in user: a verdict there "
        "proves the person, elsewhere only the domain",
    )

    # Who may do what. Unset is not the same as a default: with nothing configured anyone
    # may approve (open mode); with anything configured nobody but those named may.
    deploybot_config: Path | None = Field(None, description="deploybot.toml elsewhere than ./deploybot.toml")
    environments: str | None = Field(None, description="unset: development,staging,production")
    protected_environments: str | None = Field(None, description="unset: production")
    approvers: str | None = Field(None, description="Slack user ids: U1,U2 or production:U1,U2;staging:*")
    approver_emails: str | None = Field(None, description="like APPROVERS: production:a@x.com,b@x.com")
    approver_must_differ: bool | None = Field(None, description="unset: false")
    approval_ttl: int = Field(3600, gt=0, description="seconds an approval request stays valid")
    approval_remind: int = Field(900, ge=0, description="seconds between reminders of a pending approval; 0: none")
    required_approvals: str | None = Field(None, description="approvals from different people: production:2")
    max_steps: int = 20
    context_budget: int = Field(
        CONTEXT_BUDGET, ge=MIN_BUDGET, description="estimated tokens of a thread the model reads (docs/context.md)"
    )
    worker_concurrency: int = Field(4, ge=1, description="agent runs at once in one process")
    worker_grace: float = Field(25.0, ge=0, description="seconds a stopping worker lets runs finish")

    # Retention (docs/operations.md#retention; bot/runtime/gc.py).
    thread_retention: float = Field(
        90 * 86400, gt=0, description="seconds a finished thread is kept, then removed with its conversation keys"
    )
    deploy_history_retention: float | None = Field(
        None, gt=0, description="seconds a deploy's history record (and audit trail) is kept; unset: forever"
    )
    thread_compact_after: float = Field(
        86400, ge=0, description="seconds after which a finished thread is stored compressed; 0: never"
    )
    gc_every: float = Field(10.0, gt=0, description="seconds between the workers' retention passes")

    deployer: DeployerKind = Field("command", description="how backend and frontend deploy: command, github")
    github_token: SecretStr | None = None
    github_repository: str | None = Field(None, description="owner/name")
    github_api_url: str = "https://api.github.com"
    github_workflow_backend: str | None = None
    github_workflow_frontend: str | None = None
    github_ref: str = Field("main", description='a branch, or "{tag}" to dispatch on the tag itself')
    github_poll_seconds: float = Field(5.0, gt=0)
    github_commit_input: str = Field("commit", description="the workflow input given the approved commit")

    # Triggers and outgoing webhooks (docs/channels.md: GitHub webhooks, Outgoing webhooks).
    github_webhook_secret: SecretStr | None = Field(None, description="verifies POST /github/webhook")
    # deploybot as a GitHub App, the gate of GitHub environments (docs/github-gate.md).
    github_app_id: int | None = Field(None, description="the GitHub App's id (App settings, About)")
    github_app_private_key: SecretStr | None = Field(None, description="the App's private key (PEM)")
    github_app_private_key_file: Path | None = Field(None, description="a file holding the App's private key")
    github_gate_follow_seconds: float = Field(
        3600, gt=0, description="seconds an approved gated job is followed at most; then its outcome is unknown"
    )
    notify_webhook_url: str = Field("", description="URLs, comma-separated, POSTed every notable event")
    notify_webhook_secret: SecretStr | None = Field(None, description="signs what NOTIFY_WEBHOOK_URL gets")

    git_repo: Path = Path(".")
    deploy_command: str = DRY_RUN
    deploy_timeout: float = 1800
    deploy_env_passthrough: str = Field(
        "", description="variables the deploy command gets from the bot's environment, comma-separated"
    )

    # Signing in to the web (personal tokens need none of these).
    session_secret: SecretStr | None = Field(None, description="signs session cookies; unset: kept under DATA_DIR")
    session_ttl: int = Field(43200, ge=60, description="seconds a web session lasts")
    public_url: str | None = Field(None, description="the bot's address in sign-in links; unset: http://HOST:PORT")
    console_streams_per_person: int = Field(5, ge=1, description="live console streams one person may hold at once")
    console_streams: int = Field(200, ge=1, description="live console streams one web process serves at once")
    allowed_hosts: str = Field(
        "", description="more names the bot answers to (Host), comma-separated; loopback and PUBLIC_URL's host always"
    )

    _file: FileConfig | None = PrivateAttr(None)
    _policy: Policy | None = PrivateAttr(None)
    _policies: dict[tuple[tuple[str, Normalise], ...], Policy] = PrivateAttr(default_factory=dict)

    @field_validator("log_level", mode="before")
    @classmethod
    def _upper(cls, value: object) -> object:
        return value.upper() if isinstance(value, str) else value

    @field_validator("required_approvals")
    @classmethod
    def _required(cls, value: str | None) -> str | None:
        if value is not None:
            parse_required(value)
        return value

    @field_validator("deploy_command")
    @classmethod
    def _command(cls, value: str) -> str:
        command_argv(value)
        return value

    @model_validator(mode="after")
    def _complete(self) -> Self:
        """Refuse half a configuration at start, with every problem at once."""
        problems = []
        for read in (self._redis, self._llm, self._slack, self._email, self._github, self._notify_webhook,
                     self._github_app):
            try:
                read()
            except ConfigError as e:
                problems.append(str(e))
        problems += self._approvers_naming_nobody() or self._read_people()
        if not problems:
            problems += self._trigger_problems()
            problems += self._gate_problems()
        if problems:
            raise ConfigError("\n".join(problems))
        return self

    def _approvers_naming_nobody(self) -> list[str]:
        """An approver variable set but naming nobody (`APPROVERS=`, `" "`, `";;;"`): read as
        unset it would be open mode, where anyone approves production, so it is refused."""
        return [
            f"{name} is set but names nobody: list the approvers, write * to let anyone approve, or leave it unset"
            for name, value in (("APPROVERS", self.approvers), ("APPROVER_EMAILS", self.approver_emails))
            if value is not None and not any(parse_approvers(value).values())
        ]

    def _read_people(self) -> list[str]:
        """Read deploybot.toml and build the policy: the problems, one line each."""
        try:
            self._file = settings_file.read(self._people_variables(), Path.cwd())
        except FileError as e:
            return e.problems
        if self._file is not None:
            clashes = settings_file.conflicts(self._file, self._people_variables())
            clashes += self._service_conflicts(self._file)
            clashes += self._file.freeze_problems(self.policy_environments())
            clashes += self._file.agent_environment_problems(self.policy_environments())
            clashes += self._file.promotion_problems(self.policy_environments())
            if clashes:
                return clashes
        clashes = self._approval_conflicts(self._file)
        if clashes:
            return clashes
        try:
            self._policy = self._build_policy()
        except PolicyError as e:
            return e.problems
        return []

    def _service_conflicts(self, file: FileConfig) -> list[str]:
        """With [services.*] each service says how it deploys: the variables that say it for
        backend and frontend must stay unset; GitHub services need GITHUB_TOKEN."""
        if not file.services:
            return []
        name = file.source.name if file.source else settings_file.FILE_NAME
        lines = [
            f"{variable} is set, but {name} has [services]: say it per service there"
            for variable, value in (
                ("DEPLOYER", self.deployer if self.deployer != "command" else None),
                ("GITHUB_REPOSITORY", self.github_repository),
                ("GITHUB_WORKFLOW_BACKEND", self.github_workflow_backend),
                ("GITHUB_WORKFLOW_FRONTEND", self.github_workflow_frontend),
            ) if value
        ]
        on_github = [s for s, entry in file.services.items() if entry.deployer == "github" or entry.github]
        if on_github and not self.github_token:
            lines.append(f"services on GitHub ({', '.join(on_github)}) need GITHUB_TOKEN")
        environments = self.policy_environments()
        for service, entry in file.services.items():
            for i, env in enumerate(entry.environments or ()):
                if env not in environments:
                    where = settings_file.key_path(("services", service, "environments", i))
                    why = wording.undeclared_environment(env, environments, name, bool(file.environments))
                    lines.append(f"{where}: {why}")
            for env in entry.verify:
                if env not in environments:
                    where = settings_file.key_path(("services", service, "verify", env))
                    why = wording.undeclared_environment(env, environments, name, bool(file.environments))
                    lines.append(f"{where}: {why}")
        return lines

    def _approval_conflicts(self, file: FileConfig | None) -> list[str]:
        name = file.source.name if file and file.source else settings_file.FILE_NAME
        entries = file.environments if file else {}
        required = parse_required(self.required_approvals or "")
        return [
            f"REQUIRED_APPROVALS names {env}, which is not an environment"
            for env in required if env not in self.policy_environments()
        ] + [
            f"{env}'s required_approvals is set in {name} and by REQUIRED_APPROVALS; set it in one place"
            for env, entry in entries.items() if entry.required_approvals is not None and env in required
        ]

    def policy_environments(self) -> frozenset[str]:
        """Every environment's name, as the policy will have them."""
        file = self._file
        named_protected = _words(self.protected_environments) if self.protected_environments is not None else None
        protected = named_protected if named_protected is not None else frozenset({"production"})
        if file is not None and file.environments:
            return frozenset(file.environments) | (named_protected or frozenset())
        named = _words(self.environments) if self.environments is not None else DEFAULT_ENVIRONMENTS
        return named | protected

    def catalog(self) -> Catalog:
        """The services: deploybot.toml's [services.*], else backend and frontend."""
        file = self._file
        if file is None or not file.services:
            return Catalog()
        return Catalog.of(
            Service(name, frozenset(e.environments) if e.environments is not None else None, e.tag_prefix,
                    self._links(e))
            for name, e in file.services.items()
        )

    def _links(self, entry: ServiceEntry) -> CodeLinks:
        """Its code host's pages: its own templates, else GitHub's (of the API's own host: GitHub
        Enterprise serves its API under /api/v3 of the web host), else none."""
        if entry.links is not None:
            return CodeLinks(entry.links.tag, entry.links.commit, entry.links.compare)
        if entry.github:
            api = self.github_api_url.rstrip("/")
            web = "https://github.com" if api == "https://api.github.com" else api.removesuffix("/api/v3")
            return CodeLinks.github(entry.github, web)
        return CodeLinks()

    def services(self) -> list[ServiceSettings]:
        """How each service deploys. Without [services.*]: backend and frontend from one
        repository, by DEPLOYER."""
        file = self._file
        if file is None or not file.services:
            kind = self.deployer
            return [
                ServiceSettings(name=name, deployer=kind, repo=self.git_repo, command=self.deploy_command)
                for name in LEGACY_SERVICES
            ]
        base = file.source.parent if file.source else Path.cwd()
        return [
            ServiceSettings(
                name=name, deployer=e.deployer, repo=(base / e.repo) if e.repo else self.git_repo,
                command=e.command or self.deploy_command, github=e.github, workflow=e.workflow,
                tag_prefix=e.tag_prefix,
            )
            for name, e in file.services.items()
        ]

    def _trigger_problems(self) -> list[str]:
        """[[triggers]] and [[schedules]] against the rest: known environments, a webhook
        secret to verify GitHub with, and the channels their notify targets name."""
        file = self._file
        if file is None or not (file.triggers or file.schedules):
            return []
        name = file.source.name if file.source else settings_file.FILE_NAME
        known, catalog = self.policy().environments, self.policy().catalog
        lines = []
        if file.triggers and not self.github_webhook_secret:
            lines.append(f"{name}: [[triggers]] need GITHUB_WEBHOOK_SECRET, to verify what GitHub sends")
        for i, trigger in enumerate(file.triggers):
            if catalog.get(trigger.service) is None:
                unknown = wording.unknown_service(trigger.service, catalog.names)
                lines.append(f"{name}: triggers[{i}].service: {unknown}")
            elif why := catalog.invalid(trigger.service, trigger.environment):
                lines.append(f"{name}: triggers[{i}]: {why}")
            if trigger.environment not in known:
                lines.append(
                    f"{name}: triggers[{i}].environment: {trigger.environment!r} is not an environment "
                    f"deploybot knows ({', '.join(sorted(known))})"
                )
        notifies = [(f"triggers[{i}]", t.notify) for i, t in enumerate(file.triggers)]
        notifies += [(f"schedules[{i}]", s.notify) for i, s in enumerate(file.schedules)]
        notifies += [(f"agents.{agent}", a.notify) for agent, a in file.agents.items()]
        for where, notify in notifies:
            if targets(notify, "slack") and not self.slack_bot_token:
                lines.append(f"{name}: {where}.notify: posting to Slack needs SLACK_BOT_TOKEN")
            if targets(notify, "email") and not (self.smtp_host or self.inbound_email_secret):
                lines.append(f"{name}: {where}.notify: sending email needs the email channel (SMTP_HOST, ...)")
        return lines

    def triggers(self) -> tuple[Trigger, ...]:
        """[[triggers]] of deploybot.toml (none without it)."""
        return self._file.trigger_list() if self._file is not None else ()

    def schedules(self) -> tuple[Schedule, ...]:
        """[[schedules]] of deploybot.toml (none without it)."""
        return self._file.schedule_list() if self._file is not None else ()

    @property
    def notify_webhook(self) -> NotifyWebhookSettings | None:
        return self._notify_webhook()

    def _people_variables(self) -> dict[str, str]:
        """The variables deploybot.toml must not repeat, as set (unset ones left out)."""
        values = {
            "DEPLOYBOT_CONFIG": str(self.deploybot_config) if self.deploybot_config else None,
            "ENVIRONMENTS": self.environments, "PROTECTED_ENVIRONMENTS": self.protected_environments,
            "APPROVERS": self.approvers, "APPROVER_EMAILS": self.approver_emails,
            "APPROVER_MUST_DIFFER": None if self.approver_must_differ is None else str(self.approver_must_differ),
        }
        return {name: value for name, value in values.items() if value is not None and value.strip()}

    def _build_policy(self, normalisers: Mapping[str, Normalise] | None = None) -> Policy:
        file = self._file
        named_protected = _words(self.protected_environments) if self.protected_environments is not None else None
        protected = named_protected if named_protected is not None else frozenset({"production"})
        environments = self.policy_environments()  # with [environments.*], the file names them
        entries = file.environments if file is not None else {}
        policy = Policy.configured(
            environments,
            protected,
            directory=file.directory(normalisers) if file is not None else None,
            written=file.written() if file is not None else None,
            listed={"slack": self.approvers, "email": self.approver_emails},  # APPROVERS: Slack ids
            normalisers=normalisers,
            approver_must_differ=bool(self.approver_must_differ),
            approval_ttl=timedelta(seconds=self.approval_ttl),
            max_steps=self.max_steps,
            catalog=self.catalog(),
            timing=self._timing(environments),
            default_timing=Timing(remind_after=_seconds(self.approval_remind)),
            required_checks=frozenset(env for env, e in entries.items() if e.required_checks),
            freezes=file.freeze_list() if file is not None else (),
            no_lock_after_rollback=frozenset(env for env, e in entries.items() if not e.lock_after_rollback),
        ).with_verify(self.verify_plans())
        if file is None:
            return policy
        # Where a service is verified in an environment, a commit passes it only once verified.
        return replace(policy, promotion=replace(file.promotion_orders(), verified=frozenset(policy.verify)))

    def verify_plans(self) -> dict[tuple[str, str], VerifyPlan]:
        """[services.NAME.verify.ENV]: each (service, environment) verified after a deploy."""
        file = self._file
        if file is None:
            return {}
        return {(name, env): v.plan() for name, e in file.services.items() for env, v in e.verify.items()}

    def _timing(self, environments: frozenset[str]) -> dict[str, Timing]:
        """Each environment's reminders, escalation and approvals needed: its entry in the
        file, else APPROVAL_REMIND and REQUIRED_APPROVALS."""
        file = self._file
        entries = file.environments if file is not None else {}
        required = parse_required(self.required_approvals or "")
        directory = file.directory() if file is not None else None
        timing = {}
        for env in environments:
            entry = entries.get(env)
            remind = entry.remind_after if entry and entry.remind_after is not None else self.approval_remind
            escalate_to = directory.expand(entry.escalate_to) if entry and directory else frozenset()
            timing[env] = Timing(
                remind_after=_seconds(remind),
                escalate_after=_seconds(entry.escalate_after) if entry and entry.escalate_after else None,
                escalate_to=escalate_to,
                required=(entry.required_approvals if entry and entry.required_approvals else required.get(env, 1)),
            )
        return timing

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> Self:
        """A changed copy is validated like new Settings (pydantic's own copy skips that), so
        its secrets are wrapped and half a configuration is refused. Every field is passed,
        so neither the environment nor .env changes the copy."""
        if not update:
            return super().model_copy(deep=deep)
        return type(self)(_env_file=None, **{**self.model_dump(), **update})

    @property
    def redis(self) -> RedisTarget:
        """Where threads live: one server (REDIS_URL, or None: the embedded one), the master
        behind Sentinels, or a cluster (bot/adapters/redis/connect.py makes the client)."""
        return self._redis()

    @property
    def slack(self) -> SlackSettings | None:
        return self._slack()

    @property
    def email(self) -> EmailSettings | None:
        return self._email()

    @property
    def github(self) -> GitHubSettings | None:
        return self._github()

    @property
    def github_app(self) -> GitHubAppSettings | None:
        """The GitHub App, when GITHUB_APP_ID is set (the gate needs it and its rules)."""
        return self._github_app()

    def gate_rules(self) -> tuple[GateRule, ...]:
        """[[github_environments]] of deploybot.toml (none without it)."""
        return self._file.gate_rules() if self._file is not None else ()

    @property
    def llm(self) -> LlmSettings | None:
        return self._llm()

    def bind_host(self) -> str:
        """Without API_TOKEN the approval endpoints must not be reachable from other hosts."""
        return self.host if self.api_token else "127.0.0.1"

    def host_names(self) -> frozenset[str]:
        """The names, besides loopback, the bot answers to (bot.adapters.http.front_door checks Host):
        ALLOWED_HOSTS, PUBLIC_URL's host, and the address HOST binds to unless it is all of them."""
        names = set(_words(self.allowed_hosts))
        if self.public_url:
            names.add(urlsplit(self.public_url.strip()).netloc)
        bound = self.bind_host()
        if bound not in ("0.0.0.0", "::", ""):
            names.add(f"[{bound}]" if ":" in bound else bound)
        return frozenset(names)

    def policy(self, kinds: Mapping[str, Normalise] | None = None) -> Policy:
        """Environments and who may approve, lock and unlock: deploybot.toml and the
        variables together (checked when Settings was). `kinds`: each channel's kind of ids
        and how they compare (the root's registry hands them in); without them ids compare
        as written, trimmed."""
        if self._policy is None:  # built by model_construct, which skips validation
            self._policy = self._build_policy()
        if not kinds:
            return self._policy
        key = tuple(sorted(kinds.items(), key=lambda kind: kind[0]))
        if key not in self._policies:
            self._policies[key] = self._build_policy(kinds)
        return self._policies[key]

    def directory(self, kinds: Mapping[str, Normalise] | None = None) -> Directory:
        """The people of deploybot.toml (none without it), for channels to know who speaks."""
        return self.policy(kinds).directory

    @property
    def open_mode(self) -> bool:
        """Nothing configured (no deploybot.toml, no APPROVERS or APPROVER_EMAILS): anyone may
        approve, as people.OPEN_MODE_NOTICE says at start."""
        return self.policy().open_mode

    @property
    def config_file(self) -> Path | None:
        """The deploybot.toml read, if any."""
        return self._file.source if self._file is not None else None

    def store_named(self) -> str:
        """Where the store is, for people (the CLI says where it looked): never a password."""
        target = self.redis
        if target.mode == "sentinel":
            sentinels = ",".join(f"{host}:{port}" for host, port in target.sentinels)
            return wording.store_at(f"{target.master} behind {sentinels}", "REDIS_SENTINELS")
        if target.url is None:
            return wording.store_embedded(str(self.data_dir.resolve()))
        parts = urlsplit(target.url)
        address = f"{parts.scheme}://{parts.hostname}{f':{parts.port}' if parts.port else ''}{parts.path}"
        return wording.store_at(address, "REDIS_URL")

    def secrets(self) -> tuple[str, ...]:
        """Values that must never reach the model, a transcript, a log or the deploy command's
        output: every secret setting, and the password of any URL in any other setting
        (REDIS_URL=redis://:pw@host, LLM_BASE_URL=https://user:pw@host/v1)."""
        values = [
            v.get_secret_value() for v in (
                self.api_token, self.redis_password, self.redis_sentinel_password,
                self.llm_api_key, self.openai_api_key, self.anthropic_api_key,
                self.slack_bot_token, self.slack_signing_secret, self.slack_app_token, self.github_token,
                self.smtp_password, self.inbound_email_secret, self.email_reply_secret, self.session_secret,
                self.github_webhook_secret, self.notify_webhook_secret, self.github_app_private_key,
            ) if v
        ]
        # An outgoing webhook's URL often is its credential (a chat's incoming-webhook URL): as
        # written, and as httpx prints it (lower-case host, default port dropped).
        for url in (u.strip() for u in self.notify_webhook_url.split(",") if u.strip()):
            values += [v for v in dict.fromkeys((url, _as_sent(url))) if v not in values]
        for name in type(self).model_fields:
            value = getattr(self, name)
            if isinstance(value, str):
                values += [p for p in url_passwords(value) if p not in values]
        # What the deploy command is handed from the bot's environment is what it most often
        # prints back (`env`, `set -x`): redacted like the bot's own secrets.
        values += [v for n in self.deploy_passthrough() if (v := os.environ.get(n)) and v not in values]
        return tuple(values)

    def deploy_passthrough(self) -> tuple[str, ...]:
        """DEPLOY_ENV_PASSTHROUGH: names of variables the deploy command may see."""
        return tuple(sorted(_words(self.deploy_env_passthrough)))

    # --- one reader per channel or feature: None when it is off, ConfigError when half set ---

    def _redis(self) -> RedisTarget:
        password = self.redis_password.get_secret_value() if self.redis_password else None
        sentinel_password = self.redis_sentinel_password.get_secret_value() if self.redis_sentinel_password else None
        if self.redis_sentinels or self.redis_sentinel_master:
            _require("Redis Sentinel", (
                ("REDIS_SENTINELS", self.redis_sentinels), ("REDIS_SENTINEL_MASTER", self.redis_sentinel_master),
            ))
            if self.redis_url:
                raise ConfigError("REDIS_SENTINELS replaces REDIS_URL: set one of them")
            if self.redis_cluster:
                raise ConfigError("REDIS_CLUSTER=true and REDIS_SENTINELS are different setups: set one of them")
            assert self.redis_sentinels and self.redis_sentinel_master
            return RedisTarget(
                "sentinel", sentinels=_addresses("REDIS_SENTINELS", self.redis_sentinels),
                master=self.redis_sentinel_master.strip(), password=password,
                sentinel_password=sentinel_password, wait_ms=self.redis_wait_ms,
            )
        if sentinel_password:
            raise ConfigError("REDIS_SENTINEL_PASSWORD is set but REDIS_SENTINELS is not")
        if self.redis_cluster and not self.redis_url:
            raise ConfigError("REDIS_CLUSTER=true needs REDIS_URL (any node of the cluster)")
        if password and not self.redis_url:
            raise ConfigError("REDIS_PASSWORD needs REDIS_URL or REDIS_SENTINELS (the embedded server has none)")
        return RedisTarget(
            "cluster" if self.redis_cluster else "single", url=self.redis_url, password=password,
            wait_ms=self.redis_wait_ms,
        )

    def _llm(self) -> LlmSettings | None:
        provider = self.llm_provider or (
            "openai-generic" if self.llm_base_url
            else "openai" if self.openai_api_key
            else "anthropic" if self.anthropic_api_key
            else None
        )
        if provider is None:
            return None
        key = self.llm_api_key or {
            "openai": self.openai_api_key, "anthropic": self.anthropic_api_key
        }.get(provider)
        model = self.llm_model or DEFAULT_MODELS.get(provider)
        if provider == "openai-generic" and not self.llm_base_url:
            raise ConfigError("LLM_PROVIDER=openai-generic needs LLM_BASE_URL")
        if not model:
            raise ConfigError(f"LLM_PROVIDER={provider} needs LLM_MODEL")
        if not key and provider != "openai-generic":
            raise ConfigError(f"LLM_PROVIDER={provider} needs LLM_API_KEY")
        return LlmSettings(
            provider=provider, model=model, api_key=key or SecretStr("none"), base_url=self.llm_base_url
        )

    def _slack(self) -> SlackSettings | None:
        if not self.slack_bot_token:
            return None
        if not self.slack_signing_secret:
            raise ConfigError("SLACK_BOT_TOKEN is set but SLACK_SIGNING_SECRET is not")
        return SlackSettings(
            bot_token=self.slack_bot_token, signing_secret=self.slack_signing_secret,
            app_token=self.slack_app_token or None, api_url=self.slack_api_url,
        )

    def _email(self) -> EmailSettings | None:
        if not (self.smtp_host or self.inbound_email_secret):
            return None
        _require("the email channel", (
            ("SMTP_HOST", self.smtp_host), ("EMAIL_FROM", self.email_from),
            ("INBOUND_EMAIL_SECRET", self.inbound_email_secret),
            ("EMAIL_REPLY_SECRET", self.email_reply_secret),
        ))
        return EmailSettings.model_validate({
            "smtp_host": self.smtp_host, "smtp_port": self.smtp_port,
            "smtp_username": self.smtp_username, "smtp_password": self.smtp_password,
            "smtp_tls": self.smtp_tls, "sender": self.email_from,
            "inbound_secret": self.inbound_email_secret, "reply_secret": self.email_reply_secret,
            "allowed_senders": _words(self.email_allowed_senders.lower()),
            "max_bytes": self.email_max_bytes,
            "trusted_authserv_ids": _words(self.email_trusted_authserv_ids.lower()),
            "mailbox_authenticated_domains": frozenset(
                d.removeprefix("@") for d in _words(self.email_mailbox_authenticated_domains.lower())
            ),
        })

    def _notify_webhook(self) -> NotifyWebhookSettings | None:
        urls = tuple(u.strip() for u in self.notify_webhook_url.split(",") if u.strip())
        if not urls and not self.notify_webhook_secret:
            return None
        _require("outgoing webhooks", (
            ("NOTIFY_WEBHOOK_URL", urls), ("NOTIFY_WEBHOOK_SECRET", self.notify_webhook_secret),
        ))
        for url in urls:
            if not url.startswith(("https://", "http://")):
                raise ConfigError(f"NOTIFY_WEBHOOK_URL: {url!r} is not an http(s) URL")
        assert self.notify_webhook_secret is not None
        return NotifyWebhookSettings(urls=urls, secret=self.notify_webhook_secret)

    def _github(self) -> GitHubSettings | None:
        if self.deployer != "github":
            return None
        workflows = {
            service: wf for service, wf in (
                ("backend", self.github_workflow_backend), ("frontend", self.github_workflow_frontend),
            ) if wf
        }
        _require("DEPLOYER=github", (
            ("GITHUB_TOKEN", self.github_token), ("GITHUB_REPOSITORY", self.github_repository),
            ("GITHUB_WORKFLOW_BACKEND or GITHUB_WORKFLOW_FRONTEND", workflows),
        ))
        return GitHubSettings.model_validate({
            "token": self.github_token, "repository": self.github_repository, "workflows": workflows,
            "api_url": self.github_api_url, "ref": self.github_ref, "poll_seconds": self.github_poll_seconds,
            "commit_input": self.github_commit_input.strip(),
        })

    def _gate_problems(self) -> list[str]:
        """[[github_environments]] against the rest: known environments and services, and the
        channels their notify targets name."""
        file = self._file
        if file is None or not file.github_environments:
            return []
        name = file.source.name if file.source else settings_file.FILE_NAME
        policy = self.policy()
        repositories = {s.name: s.github for s in self.services() if s.github}
        lines = []
        for i, rule in enumerate(file.gate_rules()):
            where = f"{name}: github_environments[{i}]"
            service = service_for(rule, repositories)
            if rule.environment not in policy.environments:
                unknown = wording.unknown_environment(rule.environment, policy.environments)
                lines.append(f"{where}.environment: {unknown}")
            elif service is None:
                lines.append(f"{where}: name its service (no one [services.*] entry has github = {rule.repository!r})")
            elif policy.catalog.get(service) is None:
                lines.append(f"{where}.service: {wording.unknown_service(service, policy.catalog.names)}")
            elif why := policy.catalog.invalid(service, rule.environment):
                lines.append(f"{where}: {why}")
            if targets(rule.notify, "slack") and not self.slack_bot_token:
                lines.append(f"{where}.notify: posting to Slack needs SLACK_BOT_TOKEN")
            if targets(rule.notify, "email") and not (self.smtp_host or self.inbound_email_secret):
                lines.append(f"{where}.notify: sending email needs the email channel (SMTP_HOST, ...)")
        return lines

    def _github_app(self) -> GitHubAppSettings | None:
        rules = self.gate_rules()
        key_given = self.github_app_private_key is not None or self.github_app_private_key_file is not None
        if self.github_app_id is None:
            if rules or key_given:
                raise ConfigError("[[github_environments]] and GITHUB_APP_PRIVATE_KEY need GITHUB_APP_ID")
            return None
        if self.github_app_private_key is not None and self.github_app_private_key_file is not None:
            raise ConfigError("GITHUB_APP_PRIVATE_KEY and GITHUB_APP_PRIVATE_KEY_FILE are both set: set one of them")
        if self.github_app_private_key_file is not None:
            try:
                pem = self.github_app_private_key_file.read_text()
            except (OSError, UnicodeDecodeError) as e:
                raise ConfigError(f"GITHUB_APP_PRIVATE_KEY_FILE: cannot read {self.github_app_private_key_file}: "
                                  f"{e.__class__.__name__}") from None
        elif self.github_app_private_key is not None:
            pem = self.github_app_private_key.get_secret_value().replace("\\n", "\n")  # one line in a .env
        else:
            raise ConfigError("GITHUB_APP_ID needs GITHUB_APP_PRIVATE_KEY or GITHUB_APP_PRIVATE_KEY_FILE")
        if not self.github_webhook_secret:
            raise ConfigError("GITHUB_APP_ID needs GITHUB_WEBHOOK_SECRET, to verify what GitHub sends")
        _check_rsa_key(pem)
        return GitHubAppSettings(app_id=self.github_app_id, private_key=SecretStr(pem), api_url=self.github_api_url,
                                 rules=rules)


def _check_rsa_key(pem: str) -> None:
    """A clear error at start for a key that cannot sign the app's RS256 JWT (never its text)."""
    from cryptography.hazmat.primitives.asymmetric.rsa import RSAPrivateKey
    from cryptography.hazmat.primitives.serialization import load_pem_private_key

    try:
        key = load_pem_private_key(pem.strip().encode(), password=None)
    except (ValueError, TypeError):
        raise ConfigError("the GitHub App's private key is not a PEM private key without a password "
                          "(download it from the App's settings: Private keys)") from None
    if not isinstance(key, RSAPrivateKey):
        raise ConfigError("the GitHub App's private key is not an RSA key (GitHub signs apps' JWTs with RS256)")


_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s\"']+")


def url_passwords(value: str) -> list[str]:
    """The passwords of the URLs in `value` (`scheme://user:password@host`), each as written
    and decoded."""
    found: list[str] = []
    for url in _URL.findall(value):
        try:
            password = urlsplit(url).password
        except ValueError:  # not a URL after all (a bad port, brackets)
            continue
        if password:
            found += [password, unquote(password)]
    return list(dict.fromkeys(found))


def _as_sent(url: str) -> str:
    """`url` as an HTTP client normalizes it, and so logs it."""
    try:
        return str(httpx.URL(url))
    except (httpx.InvalidURL, ValueError):  # refused at start anyway (NOTIFY_WEBHOOK_URL)
        return url


def _seconds(value: int | None) -> timedelta | None:
    return timedelta(seconds=value) if value else None


def _addresses(name: str, value: str) -> tuple[tuple[str, int], ...]:
    """host:port,host:port ([::1]:26379 for IPv6), in the order written."""
    found = []
    for entry in (e.strip() for e in value.split(",")):
        if not entry:
            continue
        host, _, port = entry.rpartition(":")
        host = host.removeprefix("[").removesuffix("]")
        if not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise ConfigError(f"{name}: {entry!r} is not host:port")
        found.append((host, int(port)))
    if not found:
        raise ConfigError(f"{name} names no host:port")
    return tuple(found)


def _require(what: str, values: tuple[tuple[str, object], ...]) -> None:
    missing = [name for name, value in values if not value]
    if missing:
        raise ConfigError(f"{what} needs {', '.join(missing)}")


# --- `python -m bot mcp`: the agent's side ---------------------------------------------------

# Every setting that says where the store is or how to get in (its URL, Sentinels, passwords,
# the embedded server's folder): a process holding one reaches the store itself, and whoever
# does is the operator (docs/security.md), so the agent's bridge refuses to run beside any.
STORE_SETTINGS = (*(name.upper() for name in Settings.model_fields if name.startswith("redis_")), "DATA_DIR")


@dataclass(frozen=True)
class BridgeSettings:
    """What `python -m bot mcp` reads, from its process's environment only (neither .env nor
    deploybot.toml: those are the team's): the agent's token and the server's address, and
    which of the store's settings were found set, for the refusal."""

    token: str
    url: str
    store: tuple[str, ...]

    @classmethod
    def read(cls, environ: Mapping[str, str] | None = None) -> BridgeSettings:
        """From `environ` (this process's environment when None)."""
        # Names as Settings reads them (case-insensitively); an empty value sets nothing.
        found = os.environ if environ is None else environ
        given = {name.upper(): value.strip() for name, value in found.items() if value.strip()}
        return cls(
            token=given.get("DEPLOYBOT_TOKEN", ""),
            url=given.get("DEPLOYBOT_URL", ""),
            store=tuple(name for name in STORE_SETTINGS if name in given),
        )

    def problem(self) -> str | None:
        """Why the bridge must not start, in one line; None when it may."""
        if self.store:
            return wording.bridge_holds_the_store(self.store[0])
        if not self.token:
            return wording.bridge_needs("DEPLOYBOT_TOKEN", "the agent's token (`tokens create --agent NAME`)")
        if not self.url:
            return wording.bridge_needs("DEPLOYBOT_URL", "the deploybot server's address, e.g. http://127.0.0.1:8000")
        parts = urlsplit(self.url)
        if parts.scheme not in ("http", "https") or not parts.hostname or parts.query or parts.fragment:
            return wording.bridge_bad_url(self.url)
        return None


def config_problems(error: ValidationError) -> list[str]:
    """One line per problem, for the operator: our own messages as written, pydantic's
    (a PORT that is not a number) after the variable's name; no pydantic types or URLs."""
    lines: list[str] = []
    for e in error.errors(include_url=False):
        cause = e.get("ctx", {}).get("error")
        if isinstance(cause, ConfigError):
            lines += str(cause).splitlines()
        else:
            name = ".".join(str(part) for part in e["loc"]).upper()
            lines.append(f"{name}: {e['msg']}" if name else e["msg"])
    return lines
