"""Steps: what the agent chose to do next (the BAML types, plus where they came from), and the
steps only exact commands produce."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from bot.core.events.base import _Event

StepSource = Literal["llm", "command", "bot"]


class ListGitTags(_Event):
    type: Literal["list_git_tags"] = "list_git_tags"
    service: str | None = None  # None: every service's (or the one repository's)
    source: StepSource = "llm"


class _Deploy(_Event):
    tag: str
    environment: str
    reason: str | None = None
    source: StepSource = "llm"


class DeployService(_Deploy):
    """Deploy `service` (a name from the catalog). `rollback_of`: the deploy id this one
    rolls back (it succeeded; this one puts the one before it back). `force`: the reason an
    approver gave to deploy past what would stop it (failing CI checks), `forced_by` who."""

    type: Literal["deploy"] = "deploy"
    service: str
    rollback_of: str | None = None
    rollback_from: str = ""  # the tag being rolled back, for people
    force: str | None = None
    forced_by: str | None = None


# Threads older than the service catalog: one class per service, which had no name field.
class DeployBackend(_Deploy):
    type: Literal["deploy_backend"] = "deploy_backend"

    @property
    def service(self) -> str:
        return "backend"


class DeployFrontend(_Deploy):
    type: Literal["deploy_frontend"] = "deploy_frontend"

    @property
    def service(self) -> str:
        return "frontend"


class RequestMoreInformation(_Event):
    type: Literal["request_more_information"] = "request_more_information"
    message: str
    source: StepSource = "llm"


class DoneForNow(_Event):
    type: Literal["done_for_now"] = "done_for_now"
    message: str
    source: StepSource = "llm"


# Steps only exact commands produce (the model is not offered them).


class LockEnvironment(_Event):
    type: Literal["lock_environment"] = "lock_environment"
    environment: str
    reason: str = ""
    service: str = ""  # "": the whole environment
    source: StepSource = "command"


class UnlockEnvironment(_Event):
    type: Literal["unlock_environment"] = "unlock_environment"
    environment: str
    service: str = ""
    force: str | None = None  # taking someone else's lock: why (its holder is told)
    source: StepSource = "command"


class ShowDeploys(_Event):
    type: Literal["show_deploys"] = "show_deploys"
    environment: str
    source: StepSource = "command"


class StopDeploys(_Event):
    """Stop the line: no deploy to `environment` ("*": any) starts until resumed (or `until`)."""

    type: Literal["stop_deploys"] = "stop_deploys"
    environment: str
    reason: str
    until: datetime | None = None
    source: StepSource = "command"


class ResumeDeploys(_Event):
    type: Literal["resume_deploys"] = "resume_deploys"
    environment: str
    source: StepSource = "command"


class RollBack(_Event):
    """Put back what was on `environment` before the current deploy of `service`: becomes a
    deploy (`rollback_of`) once the target is found in the history."""

    type: Literal["roll_back"] = "roll_back"
    service: str
    environment: str
    source: StepSource = "command"


class Promote(_Event):
    """Deploy to `environment` the newest commit of `service` that passed the environment
    before it (bot/core/promotion.py): becomes a deploy once it is found in the history."""

    type: Literal["promote"] = "promote"
    service: str
    environment: str
    source: StepSource = "command"


Deploy = DeployService | DeployBackend | DeployFrontend
DEPLOY_STEPS = (DeployService, DeployBackend, DeployFrontend)
CommandStep = LockEnvironment | UnlockEnvironment | ShowDeploys | StopDeploys | ResumeDeploys
COMMAND_STEPS = (LockEnvironment, UnlockEnvironment, ShowDeploys, StopDeploys, ResumeDeploys)
Step = ListGitTags | Deploy | RequestMoreInformation | DoneForNow | CommandStep | RollBack | Promote
STEP_TYPES = (ListGitTags, *DEPLOY_STEPS, RequestMoreInformation, DoneForNow, *COMMAND_STEPS, RollBack, Promote)
