"""The reducer: given a thread, what must happen next? Pure, so every process that loads
the same thread reaches the same answer, and a crash is only a pause."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from bot.core import commands, transcript, verification, wording
from bot.core.events import (
    COMMAND_STEPS,
    DEPLOY_STEPS,
    ApprovalExpired,
    ApprovalRequested,
    CommandStep,
    Deploy,
    DeployResult,
    DeployStarted,
    DoneForNow,
    Error,
    HumanResponse,
    ListGitTags,
    Promote,
    RequestMoreInformation,
    RollBack,
    SenderConfirmationRequested,
    Step,
    UserMessage,
    VerificationEnded,
    VerificationStarted,
)
from bot.core.policy import Policy, Timing
from bot.core.thread import Status, Thread
from bot.core.verification import VerifyAsk, VerifyPlan


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
class PlanPromotion:
    """Find the commit `promote` deploys (bot/runtime/promoting.py)."""

    step: Promote


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


@dataclass(frozen=True)
class Finish:
    """End the thread with the bot's `message` (done until a person writes again)."""

    message: str


@dataclass(frozen=True)
class Remind:
    """A pending approval is due its `count`-th reminder."""

    request: ApprovalRequested
    count: int


@dataclass(frozen=True)
class EscalateApproval:
    """Nobody decided in time: ask `to` (principals) too."""

    request: ApprovalRequested
    to: frozenset[str]


@dataclass(frozen=True)
class Expire:
    request: ApprovalRequested


@dataclass(frozen=True)
class ExpireSenderConfirmation:
    """Nobody confirmed the request's sender in time: it is dropped."""

    request: SenderConfirmationRequested


@dataclass(frozen=True)
class StartVerification:
    """A deploy succeeded where deploybot.toml verifies it: its bake begins (lock kept)."""

    result: DeployResult
    plan: VerifyPlan


@dataclass(frozen=True)
class CheckNow:
    """A round of the verification's checks is due."""

    started: VerificationStarted


@dataclass(frozen=True)
class EndVerification:
    """The verification is over: `ended` says how (verified, or failed at a check's value)."""

    started: VerificationStarted
    ended: VerificationEnded


@dataclass(frozen=True)
class AnswerVerify:
    """Someone said `verify now` or `skip verification: REASON` (`message`) during the bake."""

    started: VerificationStarted
    message: UserMessage | HumanResponse
    ask: VerifyAsk
    reason: str


Action = (
    Stop | Decide | RunTags | RunCommand | PlanRollback | PlanPromotion | AskApproval | RunDeploy | Interrupted
    | Escalate | Finish | Remind | EscalateApproval | Expire | ExpireSenderConfirmation
    | StartVerification | CheckNow | EndVerification | AnswerVerify
)


def next_action(thread: Thread, policy: Policy, now: datetime | None = None) -> Action:
    """`now`: the time, for what is due by then (reminders, escalation, expiry); without it
    nothing is due."""
    if not (thread.waiting_for_sender() or thread.unconfirmed()):
        verifying = _verification_action(thread, policy, now)
        if verifying is not None:
            return verifying
    action = _next_action(thread, policy)
    if now is not None and isinstance(action, Stop) and action.status == "waiting_for_sender":
        asked = thread.waiting_for_sender()
        if asked is not None and now > asked.expires_at:
            return ExpireSenderConfirmation(asked)
    if now is not None and isinstance(action, Stop) and action.status == "waiting_for_approval":
        request = thread.pending_approval()
        if request is not None:
            return _due(thread, request, policy, now) or action
    return action


def _verification_action(thread: Thread, policy: Policy, now: datetime | None) -> Action | None:
    """What a deploy's verification needs: to start, a person's ask answered, a round of
    checks, its end; Stop while the bake waits. None: no verification is under way."""
    result = verification.to_verify(thread, policy.verify_plan)
    if result is not None:
        plan = policy.verify_plan(result.service, result.environment)
        assert plan is not None  # to_verify found it
        return StartVerification(result, plan)
    started = verification.open_verification(thread)
    if started is None:
        return None
    ask = verification.asked(thread, started, commands.verify_command)
    if ask is not None:
        return AnswerVerify(started, *ask)
    if now is None:
        return Stop("verifying")
    last = verification.last_round(thread, started)
    final = last is not None and last >= started.ends_at
    failing = verification.failing(thread, started, now, final=final)
    if failing is not None:
        return EndVerification(started, VerificationEnded(
            deploy_id=started.deploy_id, outcome="failed", check=failing.check, value=failing.value,
        ))
    if final:
        return EndVerification(started, VerificationEnded(deploy_id=started.deploy_id, outcome="verified"))
    if now >= verification.next_round(thread, started):
        return CheckNow(started)
    return Stop("verifying")


def _due(thread: Thread, request: ApprovalRequested, policy: Policy, now: datetime) -> Action | None:
    if now > request.expires_at:
        return Expire(request)
    timing = policy.timing_for(request.environment)
    escalation = _escalation_at(thread, request, timing)
    if escalation is not None and now >= escalation:
        return EscalateApproval(request, timing.escalate_to)
    reminder = _reminder_at(thread, request, timing)
    if reminder is not None and now >= reminder and timing.remind_after:
        # Missed intervals (every worker down) make one reminder, numbered for the latest.
        count = int((now - request.at) / timing.remind_after)
        if request.at + count * timing.remind_after < request.expires_at:
            return Remind(request, count)
    return None


def next_due(thread: Thread, policy: Policy, now: datetime) -> datetime | None:
    """When the thread next needs a run without anyone writing to it: a pending approval's
    next reminder, escalation or expiry; a deploy waiting in line, a look at its lock (or
    freeze) every QUEUE_RETRY, and its approval's expiry. None: nothing is due."""
    if (started := verification.open_verification(thread)) is not None:
        return verification.next_round(thread, started)
    if thread.status() == "waiting_for_lock":
        last = thread.last_step()
        request = thread.approval_for(last[1].id) if last else None
        retry = now + QUEUE_RETRY
        return min(retry, request.expires_at + EXPIRY_GRACE) if request else retry
    if (asked := thread.waiting_for_sender()) is not None:
        return asked.expires_at + EXPIRY_GRACE
    request = thread.pending_approval()
    if request is None:
        return None
    timing = policy.timing_for(request.environment)
    due = [request.expires_at + EXPIRY_GRACE, _escalation_at(thread, request, timing),
           _reminder_at(thread, request, timing)]
    return min(d for d in due if d is not None)


def _escalation_at(thread: Thread, request: ApprovalRequested, timing: Timing) -> datetime | None:
    """When the request escalates; None: it does not (or did already)."""
    if timing.escalate_after is None or not timing.escalates() or thread.escalation(request.approval_id):
        return None
    return request.at + timing.escalate_after


def _reminder_at(thread: Thread, request: ApprovalRequested, timing: Timing) -> datetime | None:
    """When the request's next reminder is due; None: no more before it expires."""
    if not timing.remind_after:
        return None
    at = request.at + (thread.reminded(request.approval_id) + 1) * timing.remind_after
    return at if at < request.expires_at else None


# What can make a thread due (next_due): a deploy step (its line, its approval), a sender
# confirmation, a verification. A thread with none of them never had a due time to clear.
_EVER_DUE = (*DEPLOY_STEPS, ApprovalRequested, SenderConfirmationRequested, VerificationStarted)


def ever_due(thread: Thread) -> bool:
    """Whether the thread could ever have had a due time: False for the read-only runs ("list
    tags", "what's on"), so a run of one need not clear a timer it never had (a Redis round
    trip per run). A stale timer would only cost a run that finds nothing to do."""
    return any(isinstance(e, _EVER_DUE) for e in thread.events)


# An expiry is due just after the moment, so `now > expires_at` holds when it fires.
EXPIRY_GRACE = timedelta(milliseconds=10)
# A deploy waiting in line is woken when the lock it waits for is released; this is the
# safety net for a lock that lapsed instead (its holder died) and for a freeze that ended.
QUEUE_RETRY = timedelta(seconds=15)


def _next_action(thread: Thread, policy: Policy) -> Action:
    if thread.cancelled():
        return Stop("cancelled")
    if thread.waiting_for_sender() or thread.unconfirmed():
        # An unproven sender's request runs nothing, not even the model, until confirmed.
        return Stop(thread.status())
    last = thread.last_step()
    if last:
        action = _step_action(thread, *last, policy)
        if action is not None:
            return action
    status = thread.status()
    if status == "failed":
        return Stop(status)
    if thread.consecutive_errors() >= policy.max_errors:
        return Escalate(_too_many_errors(thread, policy.max_errors))
    if thread.steps_since_human() >= policy.max_steps:
        return Escalate(wording.too_many_steps(policy.max_steps))
    return Decide()


def _step_action(thread: Thread, index: int, step: Step, policy: Policy) -> Action | None:
    """What the last step (at `index`) still needs: running, if nothing closed it yet; a
    pause after the bot spoke, until a person writes. None: the step needs nothing more."""
    if isinstance(step, (RequestMoreInformation, DoneForNow)):
        if thread.human_input_after(index):
            return None
        if isinstance(step, RequestMoreInformation) and (late := thread.late_result(index)) is not None:
            # "Outcome unknown", then the result after all: it answers the question.
            return Finish(wording.finished_after_all(late.deploy_id, transcript.closing_word(late)))
        return Stop(thread.status())
    if thread.outcome(step) is not None:
        return None
    if isinstance(step, ListGitTags):
        return RunTags(step)
    if isinstance(step, COMMAND_STEPS):
        return RunCommand(step)
    if isinstance(step, RollBack):
        return PlanRollback(step)
    if isinstance(step, Promote):
        return PlanPromotion(step)
    if isinstance(step, DEPLOY_STEPS):
        return _deploy_action(thread, step, policy)
    return None


def _deploy_action(thread: Thread, step: Deploy, policy: Policy) -> Action:
    request = thread.approval_for(step.id)
    decision = thread.decision_for(request.approval_id) if request else None
    started = thread.started(step.id)
    if started:
        return Interrupted(step, started, request, decision)
    if not policy.needs_approval(step.environment) or verification.automatic_rollback(thread, step):
        # An automatic rollback (on_failure = "rollback") needs no new approval.
        return RunDeploy(step)
    if request is None:
        lapsed = _lapsed_before(thread, step)
        if lapsed is not None:
            # Asking again is for a person to want: a model proposing the deploy whose approval
            # nobody gave in time would ask every APPROVAL_TTL until the step limit.
            what = wording.what_to_deploy(lapsed.service, lapsed.tag, lapsed.environment)
            return Finish(wording.not_asking_again(what, lapsed.expires_at))
        return AskApproval(step)
    if decision is None:
        return Stop("waiting_for_approval")
    return RunDeploy(step, request, decision)  # a rejection already closed the step


def _lapsed_before(thread: Thread, step: Deploy) -> ApprovalRequested | None:
    """The request of the same deploy (service, tag, environment) that expired with no person
    writing since, or None."""
    for e in reversed(thread.events):
        if isinstance(e, (UserMessage, HumanResponse)):
            return None
        if isinstance(e, ApprovalExpired):
            request = thread.approval(e.approval_id)
            if request is not None and (request.service, request.tag, request.environment) == (
                step.service, step.tag, step.environment,
            ):
                return request
    return None


def _too_many_errors(thread: Thread, count: int) -> str:
    last = next(e for e in reversed(thread.events) if isinstance(e, Error))
    return wording.too_many_errors(count, last.message)
