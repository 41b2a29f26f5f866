"""What happened when a step ran (tags listed, a command's result, a deploy queued, started and
its result, an error), and the facts recorded beside (a lock taken, a tool called, a delivery
failed, GitHub answered)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from bot.core.events.base import _Event


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
    """An agent called an MCP tool about this thread (bot/adapters/channels/mcp/server.py): a fact for the
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
