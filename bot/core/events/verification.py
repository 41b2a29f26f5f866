"""A deploy's verification after it succeeded: its checks, each round's answers, its outcome
(docs/verification.md)."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict

from bot.core.events.base import _Event


class VerifyCheck(BaseModel):
    """One check of a deploy's verification, as deploybot.toml said it when the verification
    started (kept in the event, so a resume after a crash checks what the bake began with)."""

    model_config = ConfigDict(frozen=True)
    kind: Literal["prometheus", "http"]
    name: str  # how people see it, unique in its verification: the query, or the URL
    url: str
    query: str = ""  # prometheus: the PromQL
    condition: str = ""  # prometheus: "< 0.01"
    status: int = 200  # http: the status it must answer
    contains: str = ""  # http: a text the body must hold
    timeout: float = 5.0  # seconds


class VerificationStarted(_Event):
    """A deploy that succeeded is watched until `ends_at` (its bake) before it counts as
    verified; its lock stays held. The remaining bake is `ends_at` minus the clock, so a
    worker that dies during it changes nothing."""

    type: Literal["verification_started"] = "verification_started"
    step_id: str
    deploy_id: str
    service: str
    environment: str
    tag: str
    ends_at: datetime
    interval: float  # seconds between rounds of checks
    grace: float  # seconds a check may be unanswerable before it fails
    on_failure: Literal["propose", "rollback"] = "propose"
    checks: list[VerifyCheck]


class CheckObserved(_Event):
    """One check's answer in a round: `ok` None when it could not be evaluated (server down,
    empty result), which never counts as passing."""

    type: Literal["check_observed"] = "check_observed"
    deploy_id: str
    check: str
    ok: bool | None
    value: str


class VerificationEnded(_Event):
    """The verification's outcome: `verified` (every check held for the whole bake, or
    `early` by `verify now`), `failed` (`check` at `value`), or `skipped` (`by`, `reason`)."""

    type: Literal["verification_ended"] = "verification_ended"
    deploy_id: str
    outcome: Literal["verified", "failed", "skipped"]
    check: str = ""
    value: str = ""
    by: str = ""
    reason: str = ""
    early: bool = False


class VerificationRefused(_Event):
    """The answer to a `verify now` while a check does not hold, or to a skip by someone who
    may not: the message (`message_id`) is answered, and the bake goes on."""

    type: Literal["verification_refused"] = "verification_refused"
    deploy_id: str
    message_id: str
    text: str
