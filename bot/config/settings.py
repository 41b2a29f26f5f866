"""The one place that reads the environment (and an optional .env file), and deploybot.toml.

The environment is flat (SLACK_BOT_TOKEN, SMTP_HOST, ...), so Settings keeps flat fields
(bot/config/fields.py); each channel or feature is read through its own small model
(`settings.slack`, `settings.email`, `settings.github`, `settings.llm`: None when it is off),
by a module per concern (channels, github, store, web, services, access, triggering,
redaction). Half a configuration is refused when Settings is built, naming the variables that
are missing. This is the root: it reads deploybot.toml, checks everything at once, and offers
each view.

People, groups and per-environment rules live in deploybot.toml (./deploybot.toml, or where
DEPLOYBOT_CONFIG says: bot/config/settings_file.py), read when Settings is built; together with
APPROVERS, APPROVER_EMAILS, PROTECTED_ENVIRONMENTS and APPROVER_MUST_DIFFER they make the
policy (`settings.policy()`, failing closed: bot/core/people.py). A file that is not valid, a
setting made both in the file and by a variable, or a protected environment left without
approvers is refused at start, one line per problem.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Self
from urllib.parse import urlsplit

from pydantic import PrivateAttr, model_validator

from bot.config import access, settings_file
from bot.config.channels import (
    DEFAULT_MODELS,
    EmailSettings,
    LlmSettings,
    NotifyWebhookSettings,
    SlackSettings,
    read_email,
    read_llm,
    read_notify_webhook,
    read_slack,
)
from bot.config.fields import Fields
from bot.config.github import GitHubAppSettings, GitHubSettings, read_github, read_github_app
from bot.config.reading import ConfigError, config_problems
from bot.config.redaction import deploy_passthrough, secrets, url_passwords
from bot.config.services import ServiceSettings, catalog, service_conflicts, services
from bot.config.settings_file import FileConfig, FileError
from bot.config.store import read_redis, store_named
from bot.config.triggering import gate_problems, trigger_problems
from bot.config.web import bind_host, host_names
from bot.core import wording
from bot.core.catalog import Catalog
from bot.core.gate import GateRule
from bot.core.people import Directory, Normalise
from bot.core.policy import Policy, PolicyError
from bot.core.redis_target import RedisTarget
from bot.core.triggers import Schedule, Trigger
from bot.core.verification import VerifyPlan

# Read from here by the rest of the bot (each defined by its concern's module).
__all__ = [
    "DEFAULT_MODELS", "STORE_SETTINGS", "BridgeSettings", "ConfigError", "EmailSettings", "GitHubAppSettings",
    "GitHubSettings", "LlmSettings", "NotifyWebhookSettings", "ServiceSettings", "Settings", "SlackSettings",
    "config_problems", "url_passwords",
]


class Settings(Fields):
    _file: FileConfig | None = PrivateAttr(None)
    _policy: Policy | None = PrivateAttr(None)
    _policies: dict[tuple[tuple[str, Normalise], ...], Policy] = PrivateAttr(default_factory=dict)

    @model_validator(mode="after")
    def _complete(self) -> Self:
        """Refuse half a configuration at start, with every problem at once."""
        problems = []
        for read in (read_redis, read_llm, read_slack, read_email, read_github, read_notify_webhook,
                     _read_github_app):
            try:
                read(self)
            except ConfigError as e:
                problems.append(str(e))
        problems += access.approvers_naming_nobody(self) or self._read_people()
        if not problems:
            problems += trigger_problems(self, self._file, self.policy())
            problems += gate_problems(self, self._file, self.policy(), self.services())
        if problems:
            raise ConfigError("\n".join(problems))
        return self

    def _read_people(self) -> list[str]:
        """Read deploybot.toml and build the policy: the problems, one line each."""
        try:
            self._file = settings_file.read(access.people_variables(self), Path.cwd())
        except FileError as e:
            return e.problems
        if self._file is not None:
            clashes = settings_file.conflicts(self._file, access.people_variables(self))
            clashes += service_conflicts(self, self._file, self.policy_environments())
            clashes += self._file.freeze_problems(self.policy_environments())
            clashes += self._file.agent_environment_problems(self.policy_environments())
            clashes += self._file.promotion_problems(self.policy_environments())
            if clashes:
                return clashes
        clashes = access.approval_conflicts(self, self._file)
        if clashes:
            return clashes
        try:
            self._policy = access.build_policy(self, self._file)
        except PolicyError as e:
            return e.problems
        return []

    def policy_environments(self) -> frozenset[str]:
        """Every environment's name, as the policy will have them."""
        return access.policy_environments(self, self._file)

    def catalog(self) -> Catalog:
        """The services: deploybot.toml's [services.*], else backend and frontend."""
        return catalog(self, self._file)

    def services(self) -> list[ServiceSettings]:
        """How each service deploys. Without [services.*]: backend and frontend from one
        repository, by DEPLOYER."""
        return services(self, self._file)

    def triggers(self) -> tuple[Trigger, ...]:
        """[[triggers]] of deploybot.toml (none without it)."""
        return self._file.trigger_list() if self._file is not None else ()

    def schedules(self) -> tuple[Schedule, ...]:
        """[[schedules]] of deploybot.toml (none without it)."""
        return self._file.schedule_list() if self._file is not None else ()

    @property
    def notify_webhook(self) -> NotifyWebhookSettings | None:
        return read_notify_webhook(self)

    def verify_plans(self) -> dict[tuple[str, str], VerifyPlan]:
        """[services.NAME.verify.ENV]: each (service, environment) verified after a deploy."""
        return access.verify_plans(self._file)

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
        return read_redis(self)

    @property
    def slack(self) -> SlackSettings | None:
        return read_slack(self)

    @property
    def email(self) -> EmailSettings | None:
        return read_email(self)

    @property
    def github(self) -> GitHubSettings | None:
        return read_github(self)

    @property
    def github_app(self) -> GitHubAppSettings | None:
        """The GitHub App, when GITHUB_APP_ID is set (the gate needs it and its rules)."""
        return _read_github_app(self)

    def gate_rules(self) -> tuple[GateRule, ...]:
        """[[github_environments]] of deploybot.toml (none without it)."""
        return self._file.gate_rules() if self._file is not None else ()

    @property
    def llm(self) -> LlmSettings | None:
        return read_llm(self)

    def bind_host(self) -> str:
        """Without API_TOKEN the approval endpoints must not be reachable from other hosts."""
        return bind_host(self)

    def host_names(self) -> frozenset[str]:
        """The names, besides loopback, the bot answers to (bot.adapters.http.front_door checks Host):
        ALLOWED_HOSTS, PUBLIC_URL's host, and the address HOST binds to unless it is all of them."""
        return host_names(self)

    def policy(self, kinds: Mapping[str, Normalise] | None = None) -> Policy:
        """Environments and who may approve, lock and unlock: deploybot.toml and the
        variables together (checked when Settings was). `kinds`: each channel's kind of ids
        and how they compare (the root's registry hands them in); without them ids compare
        as written, trimmed."""
        if self._policy is None:  # built by model_construct, which skips validation
            self._policy = access.build_policy(self, self._file)
        if not kinds:
            return self._policy
        key = tuple(sorted(kinds.items(), key=lambda kind: kind[0]))
        if key not in self._policies:
            self._policies[key] = access.build_policy(self, self._file, kinds)
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
        return store_named(self)

    def secrets(self) -> tuple[str, ...]:
        """Values that must never reach the model, a transcript, a log or the deploy command's
        output: every secret setting, and the password of any URL in any other setting
        (REDIS_URL=redis://:pw@host, LLM_BASE_URL=https://user:pw@host/v1)."""
        return secrets(self, os.environ)

    def deploy_passthrough(self) -> tuple[str, ...]:
        """DEPLOY_ENV_PASSTHROUGH: names of variables the deploy command may see."""
        return deploy_passthrough(self)


def _read_github_app(s: Settings) -> GitHubAppSettings | None:
    return read_github_app(s, s.gate_rules())


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

