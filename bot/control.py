"""The reducer: given a thread, what must happen next? Pure, so every process that loads
the same thread reaches the same answer, and a crash is only a pause."""

from __future__ import annotations

from dataclasses import dataclass

from bot import wording
from bot.events import (
    COMMAND_STEPS,
    DEPLOY_STEPS,
    ApprovalRequested,
    CommandStep,
    Deploy,
    DeployStarted,
    DoneForNow,
    Error,
    HumanResponse,
    ListGitTags,
    RequestMoreInformation,
    RollBack,
)
from bot.policy import Policy
from bot.thread import Status, Thread


@dataclass(frozen=True)
class Stop:
    status: Status


@dataclass(frozen=True)
class Decide:
    """Ask the agent (exact-command parser or LLM) for the next step."""


@dataclass(frozen=True)
class RunTags:
    step: ListGitTags


@dataclass(frozen=True)
class RunCommand:
    step: CommandStep


@dataclass(frozen=True)
class PlanRollback:
    """Find what to roll back to, in the history: a deploy step, or why there is none."""

    step: RollBack


@dataclass(frozen=True)
class AskApproval:
    step: Deploy


@dataclass(frozen=True)
class RunDeploy:
    """Deploy now: unprotected, or approved by `decision` on `request`."""

    step: Deploy
    request: ApprovalRequested | None = None
    decision: HumanResponse | None = None


@dataclass(frozen=True)
class Interrupted:
    """A deploy started and no result was recorded (the process died): its outcome is
    unknown. It carries what RunDeploy carries, so a resume needs to derive nothing."""

    step: Deploy
    started: DeployStarted
    request: ApprovalRequested | None = None
    decision: HumanResponse | None = None


@dataclass(frozen=True)
class Escalate:
    message: str


Action = Stop | Decide | RunTags | RunCommand | PlanRollback | AskApproval | RunDeploy | Interrupted | Escalate


def next_action(thread: Thread, policy: Policy) -> Action:
    if thread.cancelled():
        return Stop("cancelled")
    last = thread.last_step()
    if last:
        index, step = last
        if isinstance(step, ListGitTags) and thread.outcome(step) is None:
            return RunTags(step)
        if isinstance(step, COMMAND_STEPS) and thread.outcome(step) is None:
            return RunCommand(step)
        if isinstance(step, RollBack) and thread.outcome(step) is None:
            return PlanRollback(step)
        if isinstance(step, DEPLOY_STEPS) and thread.outcome(step) is None:
            return _deploy_action(thread, step, policy)
        if isinstance(step, (RequestMoreInformation, DoneForNow)):
            if not thread.human_input_after(index):
                return Stop(thread.status())
    status = thread.status()
    if status == "failed":
        return Stop(status)
    if thread.consecutive_errors() >= policy.max_errors:
        return Escalate(_too_many_errors(thread, policy.max_errors))
    if thread.steps_since_human() >= policy.max_steps:
        return Escalate(wording.too_many_steps(policy.max_steps))
    return Decide()


def _deploy_action(thread: Thread, step: Deploy, policy: Policy) -> Action:
    request = thread.approval_for(step.id)
    decision = thread.decision_for(request.approval_id) if request else None
    started = thread.started(step.id)
    if started:
        return Interrupted(step, started, request, decision)
    if not policy.needs_approval(step.environment):
        return RunDeploy(step)
    if request is None:
        return AskApproval(step)
    if decision is None:
        return Stop("waiting_for_approval")
    return RunDeploy(step, request, decision)  # a rejection already closed the step


def _too_many_errors(thread: Thread, count: int) -> str:
    last = next(e for e in reversed(thread.events) if isinstance(e, Error))
    return wording.too_many_errors(count, last.message)
