"""An event of any type, as a thread stores it (the discriminated union every stored event loads
as), and how one is stamped, stored and loaded. New fields must get defaults so that threads
written by older versions still load."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Annotated, cast

from pydantic import Field, TypeAdapter

from bot.core.events.approvals import (
    ApprovalEscalated,
    ApprovalExpired,
    ApprovalReminded,
    ApprovalRequested,
    ApprovalRulesChanged,
)
from bot.core.events.base import _Event
from bot.core.events.results import (
    CommandResult,
    DeliveryFailed,
    DeployQueued,
    DeployResult,
    DeployStarted,
    Error,
    GitHubAnswered,
    GitTagsResult,
    LockTaken,
    ToolCalled,
)
from bot.core.events.said import Cancelled, HumanResponse, UserMessage
from bot.core.events.sender_confirmation import SenderConfirmationExpired, SenderConfirmationRequested, SenderConfirmed
from bot.core.events.steps import (
    DeployBackend,
    DeployFrontend,
    DeployService,
    DoneForNow,
    ListGitTags,
    LockEnvironment,
    Promote,
    RequestMoreInformation,
    ResumeDeploys,
    RollBack,
    ShowDeploys,
    StopDeploys,
    UnlockEnvironment,
)
from bot.core.events.verification import CheckObserved, VerificationEnded, VerificationRefused, VerificationStarted

Event = Annotated[
    UserMessage
    | HumanResponse
    | Cancelled
    | ListGitTags
    | DeployService
    | DeployBackend
    | DeployFrontend
    | RequestMoreInformation
    | DoneForNow
    | LockEnvironment
    | UnlockEnvironment
    | ShowDeploys
    | StopDeploys
    | ResumeDeploys
    | RollBack
    | Promote
    | CommandResult
    | GitTagsResult
    | ApprovalRequested
    | ApprovalReminded
    | ApprovalEscalated
    | ApprovalRulesChanged
    | ApprovalExpired
    | SenderConfirmationRequested
    | SenderConfirmed
    | SenderConfirmationExpired
    | DeployQueued
    | DeployStarted
    | DeployResult
    | DeliveryFailed
    | GitHubAnswered
    | ToolCalled
    | LockTaken
    | VerificationStarted
    | CheckObserved
    | VerificationEnded
    | VerificationRefused
    | Error,
    Field(discriminator="type"),
]

# mypy < 2 reads pydantic's `TypeForm[T]` parameter as `type[T]` once pydantic comes from its
# incremental cache (python/mypy#21587), and a union is no `type[...]`: the cast names T so
# that cached and uncached runs agree. It changes nothing at run time.
EVENT: TypeAdapter[Event] = TypeAdapter(cast("type[Event]", Event))


def stamped(events: Sequence[Event], now: datetime) -> list[Event]:
    """The events as recorded at `now`."""
    return [e.model_copy(update={"at": now}) for e in events]


def dump(event: _Event) -> str:
    return event.model_dump_json()


def load(raw: str | bytes) -> Event:
    return EVENT.validate_json(raw)
