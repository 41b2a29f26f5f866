"""deploybot.toml's people, agents and environments (with their approvals):
`[people.*]`, `[agents.*]`, `[environments.*]`."""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, StrictBool, field_validator, model_validator

from bot.config.file_values import _SLACK_ID, _targets, _unique
from bot.core.people import Agent, Written

_GITHUB_LOGIN = re.compile(r"^[a-z0-9](?:[a-z0-9-]{0,38})$")
_EMAIL = re.compile(r"^[^@\s<>,;:\"]+@[^@\s<>,;:\"]+\.[^@\s<>,;:\"]+$")


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
    """`[agents.claude-code]`: an AI agent that asks for deploys over MCP (bot/adapters/channels/mcp/server.py)
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
