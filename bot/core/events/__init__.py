"""Every fact about a thread is one of these events; the list of them is the whole state.

New fields must get defaults so that threads written by older versions still load.
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Annotated, Literal, TypeVar, cast

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from bot.core.identity import Identity


def new_id() -> str:
    return secrets.token_hex(8)


# An event's time is when it was recorded, by the injected clock of whoever records it
# (`stamped`): the core reads no clock. An event not recorded yet carries this.
UNRECORDED = datetime(1970, 1, 1, tzinfo=UTC)


class _Event(BaseModel):
    model_config = ConfigDict(frozen=True)
    id: str = Field(default_factory=new_id)
    at: datetime = UNRECORDED


# --- what people say -----------------------------------------------------------------


# `user` is the channel's own id for whoever did it, as channels always stored it (a Slack
# user id, an email address, the API's user); `person` is who the directory resolved them
# to (None: unknown, or a thread older than people), `via` how they came (slack, email,
# token, session, name) and `evidence` the channel's detail for an audit (the Slack user
# id; the address and Message-ID; the token id). See `principal_of`.


class UserMessage(_Event):
    type: Literal["user_message"] = "user_message"
    text: str
    user: str
    channel: str = "api"
    person: str | None = None
    via: str = ""
    evidence: str = ""


class HumanResponse(_Event):
    """A human's answer: free text, or a decision on the approval named by `approval_id`."""

    type: Literal["human_response"] = "human_response"
    text: str = ""
    user: str
    channel: str = "api"
    approval_id: str | None = None
    approve: bool | None = None
    person: str | None = None
    via: str = ""
    evidence: str = ""


class Cancelled(_Event):
    type: Literal["cancelled"] = "cancelled"
    user: str
    reason: str = ""
    person: str | None = None
    via: str = ""
    evidence: str = ""


Said = UserMessage | HumanResponse | Cancelled


def principal_of(event: Said) -> str:
    """Who the rules take `event`'s human to be: the person, else `<via>:<user>` (someone
    unknown, as people.Identity.principal), else (a thread older than people) the raw user."""
    if event.person is not None:
        return event.person
    return f"{event.via}:{event.user}" if event.via else event.user


LEGACY = "legacy"  # the `via` of someone recorded before people were known


def identity_of(event: Said) -> Identity:
    """The identity that did `event`, for powers (locking): its principal is
    `principal_of(event)`, but for a thread older than people, whose raw user proves
    nothing: someone unknown, `legacy:<user>`, with no powers but `*`."""
    return Identity(event.person, event.via or LEGACY, event.user)


# --- steps: what the agent chose to do next (the BAML types, plus where they came from) ---

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


# --- what happened when a step ran -----------------------------------------------------


class GitTag(BaseModel):
    model_config = ConfigDict(frozen=True)
    name: str
    commit: str
    date: str = ""


class GitTagsResult(_Event):
    type: Literal["list_git_tags_result"] = "list_git_tags_result"
    step_id: str
    tags: list[GitTag]
    service: str = ""  # whose tags ("": the one repository of a thread older than services)


class CommitSummary(BaseModel):
    model_config = ConfigDict(frozen=True)
    sha: str
    subject: str
    author: str = ""


PREVIEW_COMMITS = 20  # commit subjects a change preview lists at most


class Change(BaseModel):
    """What a deploy changes against what is deployed now: shown to whoever decides.
    `ahead`/`behind`: commits the new commit has that the deployed one lacks, and the other
    way round (a rollback or a downgrade goes back `behind` commits). `commits`: up to
    PREVIEW_COMMITS of them, newest first: the ones added, or (going back) the ones removed."""

    model_config = ConfigDict(frozen=True)
    from_tag: str = ""  # "": nothing deployed there yet
    from_commit: str = ""
    to_commit: str
    ahead: int = 0
    behind: int = 0
    commits: list[CommitSummary] = Field(default_factory=list)
    unknown: str = ""  # why the change could not be worked out ("" when it could)


class ApprovalRequested(_Event):
    """Guards exactly one deploy step: its id, a hash of its arguments and the commit."""

    type: Literal["approval_requested"] = "approval_requested"
    approval_id: str = Field(default_factory=new_id)
    step_id: str
    thread_id: str
    args_hash: str
    service: str
    tag: str
    commit: str
    environment: str
    requested_by: str  # the principal who asked (old threads: the raw user)
    requesters: list[str] = Field(default_factory=list)  # principals of everyone who gave instructions
    reason: str | None = None
    expires_at: datetime
    change: Change | None = None  # what it changes against what is deployed there now
    required: int = 1  # approvals from different people it needs (bound when asked)
    approvers: list[str] = Field(default_factory=list)  # who could decide when it was asked (principals)
    rollback_of: str | None = None  # the deploy it rolls back
    force: str | None = None  # why it goes ahead past failing checks, and who said so
    forced_by: str | None = None
    # How people see who asked, when that is more than the principal: an agent with its
    # owner ("claude-code (agent of alice)"). Only words: the rules read `requested_by`.
    asked_by: str = ""

    @property
    def asker(self) -> str:
        return self.asked_by or self.requested_by


class ApprovalReminded(_Event):
    """A pending approval was reminded (the `count`-th time) to whoever may decide."""

    type: Literal["approval_reminded"] = "approval_reminded"
    approval_id: str
    count: int


class ApprovalEscalated(_Event):
    """Nobody decided in time: `to` (people, as principals) are asked too, and may decide."""

    type: Literal["approval_escalated"] = "approval_escalated"
    approval_id: str
    to: list[str]


class ApprovalRulesChanged(_Event):
    """The rules for approval `approval_id` are not those it was asked under (the settings
    changed since): from here on it needs `required` approvals from different people among
    `approvers` (principals; `*`: anyone), or whoever it was escalated to, and an approval
    given by anyone else no longer counts. Recorded just before the decision taken under
    them, or right before the deploy runs: a decision always follows the rules of its time,
    and what applied to it is the newest of these before it (else the request's own)."""

    type: Literal["approval_rules_changed"] = "approval_rules_changed"
    approval_id: str
    required: int
    approvers: list[str]


class ApprovalExpired(_Event):
    """Nobody decided before `expires_at`: not a rejection, not a human's decision. It closes
    the deploy step; nothing was deployed."""

    type: Literal["approval_expired"] = "approval_expired"
    approval_id: str
    step_id: str
    expires_at: datetime


class SenderConfirmationRequested(_Event):
    """A new request came with nothing proving its sender (an email's From is a claim): it
    waits, with no powers, until a reply from `address` confirms it (`SenderConfirmed`) or
    `expires_at` passes (`SenderConfirmationExpired`). `claimed`: who the request says it is
    from (a person, or `email:<address>`); `text`: the request, recorded as theirs once
    confirmed."""

    type: Literal["sender_confirmation_requested"] = "sender_confirmation_requested"
    confirmation_id: str = Field(default_factory=new_id)
    address: str  # where the confirmation was mailed: the person's stored address
    claimed: str
    text: str
    expires_at: datetime


class SenderConfirmed(_Event):
    """The claimed sender confirmed from their own mailbox: the request goes on as theirs
    (the UserMessage recorded with this is said by them)."""

    type: Literal["sender_confirmed"] = "sender_confirmed"
    confirmation_id: str
    evidence: str = ""  # the confirming reply's address and Message-ID


class SenderConfirmationExpired(_Event):
    """Nobody confirmed before `expires_at`: the request is dropped; nothing ran."""

    type: Literal["sender_confirmation_expired"] = "sender_confirmation_expired"
    confirmation_id: str
    expires_at: datetime


class DeployQueued(_Event):
    """An approved deploy met a lock (or a freeze that ends before its approval expires):
    it waits in line, `position` of the waiting ones, and starts when it is its turn."""

    type: Literal["deploy_queued"] = "deploy_queued"
    step_id: str
    position: int
    behind: str  # what it waits for, for people ("production is locked by ...")


class DeployStarted(_Event):
    """Written before the deployer runs: a started deploy without a result is never re-run blindly."""

    type: Literal["deploy_started"] = "deploy_started"
    step_id: str
    deploy_id: str
    commit: str = ""
    past_freeze: str = ""  # an automatic rollback goes past a freeze: which (recorded as its `force`)


class DeployResult(_Event):
    type: Literal["deploy_result"] = "deploy_result"
    step_id: str
    deploy_id: str
    service: str
    tag: str
    environment: str
    commit: str = ""
    ok: bool
    exit_code: int | None = None
    output: str = ""
    approved_by: str | None = None
    url: str = ""
    rollback_of: str | None = None
    force: str | None = None
    forced_by: str | None = None


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


class CommandResult(_Event):
    type: Literal["command_result"] = "command_result"
    step_id: str
    ok: bool
    text: str


class LockTaken(_Event):
    """Recorded in the thread that set a lock by hand when someone else lifted it with
    `unlock ... --force: REASON`, so whoever set it is told where they set it."""

    type: Literal["lock_taken"] = "lock_taken"
    environment: str
    service: str = ""
    by: str
    reason: str


class ToolCalled(_Event):
    """An agent called an MCP tool about this thread (bot/adapters/channels/mcp.py): a fact for the
    audit, which changes nothing the reducer decides."""

    type: Literal["tool_called"] = "tool_called"
    tool: str
    agent: str  # the agent's principal (agent:NAME)
    evidence: str = ""  # the token id it came with (set by the stdio server of earlier versions)
    detail: str = ""  # what it said with it (a request's reason)


class DeliveryFailed(_Event):
    """A message to a human could not be delivered, even after retries."""

    type: Literal["delivery_failed"] = "delivery_failed"
    channel: str
    to: str
    reason: str


class GitHubAnswered(_Event):
    """A gated GitHub deployment (bot/core/gate.py) was answered, and GitHub took the answer:
    a fact for the audit, which changes nothing the reducer decides."""

    type: Literal["github_answered"] = "github_answered"
    state: str  # approved, rejected
    comment: str


ErrorKind = Literal[
    "llm", "validation", "deployer", "recheck", "locked", "checks", "frozen", "interrupted", "internal",
    "promotion",  # not yet passed the environment before (bot/core/promotion.py)
]


class Error(_Event):
    type: Literal["error"] = "error"
    kind: ErrorKind
    message: str
    step_id: str | None = None


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


V = TypeVar("V")


def entry_for(table: Mapping[type, V], event: object) -> V | None:
    """`table`'s entry for `event`'s class, else for its nearest base class that has one (what
    an `isinstance` match would pick), or None: how a table per event type is read."""
    return next((table[kind] for kind in type(event).__mro__ if kind in table), None)
