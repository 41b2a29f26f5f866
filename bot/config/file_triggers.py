"""deploybot.toml's triggers, schedules and gated GitHub environments: `[[triggers]]`,
`[[schedules]]`, `[[github_environments]]`."""

from __future__ import annotations

from typing import Any

from croniter import croniter  # type: ignore[import-untyped]
from pydantic import BaseModel, ConfigDict, field_validator

from bot.config.file_values import _NAME, _REPOSITORY, _targets
from bot.core.freeze_windows import zone
from bot.core.gate import GateRule
from bot.core.triggers import KINDS, Schedule, Trigger


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
        zone(value)
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
