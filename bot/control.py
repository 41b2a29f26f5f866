"""The reducer: given a thread, what must happen next? Pure, so every process that loads
the same thread reaches the same answer, and a crash is only a pause."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from bot.events import (
    COMMAND_STEPS,
    ApprovalRequested,
    CommandStep,
    DeployBackend,
    DeployFrontend,
    DeployStarted,
    DoneForNow,
    Error,
    HumanResponse,
    ListGitTags,
    RequestMoreInformation,
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
class AskApproval:
    step: DeployBackend | DeployFrontend


@dataclass(frozen=True)
class RunDeploy:
    step: DeployBackend | DeployFrontend
    request: ApprovalRequested | None = None
    decision: HumanResponse | None = None


@dataclass(frozen=True)
class Interrupted:
    """A deploy started and the process died before its result: its outcome is unknown."""

    step: DeployBackend | DeployFrontend
    started: DeployStarted

    def ours(self, thread: Thread) -> bool:
        """False for a deploy copied into a fork: it belongs to the thread it was started in,
        so the fork must never resume or repeat it."""
        return self.started.deploy_id.startswith(f"{thread.id}-")


@dataclass(frozen=True)
class Escalate:
    message: str


Action = Stop | Decide | RunTags | RunCommand | AskApproval | RunDeploy | Interrupted | Escalate


def next_action(thread: Thread, policy: Policy, now: datetime) -> Action:
    if thread.cancelled():
        return Stop("cancelled")
    last = thread.last_step()
    if last:
        index, step = last
        if isinstance(step, ListGitTags) and thread.outcome(step) is None:
            return RunTags(step)
        if isinstance(step, COMMAND_STEPS) and thread.outcome(step) is None:
            return RunCommand(step)
        if isinstance(step, (DeployBackend, DeployFrontend)) and thread.outcome(step) is None:
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
        return Escalate(
            f"I have taken {policy.max_steps} steps without finishing, so I am stopping here. "
            "What would you like me to do?"
        )
    return Decide()


def _deploy_action(thread: Thread, step: DeployBackend | DeployFrontend, policy: Policy) -> Action:
    started = thread.started(step.id)
    if started:
        return Interrupted(step, started)
    if not policy.needs_approval(step.environment):
        return RunDeploy(step)
    request = thread.approval_for(step.id)
    if request is None:
        return AskApproval(step)
    decision = thread.decision_for(request.approval_id)
    if decision is None:
        return Stop("waiting_for_approval")
    return RunDeploy(step, request, decision)  # a rejection already closed the step


def _too_many_errors(thread: Thread, count: int) -> str:
    last = next(e for e in reversed(thread.events) if isinstance(e, Error))
    return (
        f"I ran into {count} errors in a row and stopped instead of trying again. "
        f"The last one: {last.message} How should I proceed?"
    )
