"""AI agents asking for deploys (bot/adapters/channels/mcp/ serves them over MCP): what they are
told about a thread, Pure.

Who an agent is is bot/core/people.py's (Agent); what it may do (ask but never decide, lock or
deploy anyway; only its environments; within its limits) is bot/core/authority.py's. The typed
inputs and outputs here are the MCP tools' schemas.
"""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, Field

from bot.core import standing, views
from bot.core.events import ApprovalRequested, DeployResult, HumanResponse, ToolCalled
from bot.core.policy import Policy
from bot.core.thread import Thread

# The tools that only look at a thread: an agent polling one would otherwise grow it by an
# event a call, so only its first look is recorded (read_recorded).
READS = frozenset({"get_thread", "wait_for_thread"})

# --- what the tools take and return (their JSON Schema is these models') ---------------------


class ServiceInfo(BaseModel):
    name: str
    environments: list[str] = Field(description="where it may be deployed (empty: every environment)")


class TagInfo(BaseModel):
    name: str
    commit: str


class DeployedInfo(BaseModel):
    service: str
    tag: str
    commit: str
    deployed_at: datetime
    requested_by: str = ""
    approved_by: str = ""


class PendingApproval(BaseModel):
    approval_id: str
    service: str
    tag: str
    environment: str
    asked_by: str
    expires_at: datetime
    who_may_decide: list[str] = Field(description="the people who may approve or reject it ('anyone': anyone)")


class Outcome(BaseModel):
    ok: bool
    service: str
    tag: str
    environment: str
    exit_code: int | None = None
    output: str = ""
    url: str = ""


class Feedback(BaseModel):
    by: str
    text: str


class ThreadInfo(BaseModel):
    thread_id: str
    status: str = Field(description="running, waiting_for_approval, waiting_for_lock, waiting_for_human, verifying, "
                                    "done, failed or cancelled")
    pending_approval: PendingApproval | None = None
    deploy_result: Outcome | None = Field(None, description="the thread's newest deploy, once it ran")
    rejection: Feedback | None = Field(None, description="the newest rejection and its feedback: re-plan from it")
    transcript: str = Field("", description="the thread so far, in markdown")


# --- a thread as the agent sees it ------------------------------------------------------------


def read_recorded(thread: Thread, agent: str) -> bool:
    """Whether the thread already records a look by `agent` (its principal): the audit keeps
    that it read the thread, not each time. Asked of the events, so it holds across processes."""
    return any(isinstance(e, ToolCalled) and e.agent == agent and e.tool in READS for e in thread.events)


def thread_info(thread: Thread, policy: Policy, now: datetime, transcript: str = "") -> ThreadInfo:
    pending = thread.pending_approval(now)
    result = next((e for e in reversed(thread.events) if isinstance(e, DeployResult)), None)
    rejected = next(
        (e for e in reversed(thread.events) if isinstance(e, HumanResponse) and e.approve is False), None
    )
    return ThreadInfo(
        thread_id=thread.id,
        status=thread.status(now),
        pending_approval=_pending(thread, pending, policy) if pending else None,
        deploy_result=Outcome(
            ok=result.ok, service=result.service, tag=result.tag, environment=result.environment,
            exit_code=result.exit_code, output=result.output[-2000:], url=result.url,
        ) if result else None,
        rejection=Feedback(by=rejected.person or rejected.user, text=rejected.text) if rejected else None,
        transcript=transcript,
    )


def _pending(thread: Thread, request: ApprovalRequested, policy: Policy) -> PendingApproval:
    found = standing.of(thread, request, policy)
    return PendingApproval(
        approval_id=request.approval_id, service=request.service, tag=request.tag,
        environment=request.environment, asked_by=request.asker, expires_at=found.expires_at,
        who_may_decide=[views.shown_decider(policy, p) for p in found.deciders or ()],
    )
