"""deploybot.toml's freezes: `[[freezes]]`, the windows no deploy starts in."""

from __future__ import annotations

from datetime import date, datetime, time
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator, model_validator

from bot.config.file_values import _NAME, _unique
from bot.core.freeze_windows import Freeze, one_off, parse_moment, parse_weekly, weekly, zone
from bot.core.people import ANYONE


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
