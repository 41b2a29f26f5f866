"""Carry out one action with deterministic code. Never calls the LLM.

Each function returns the events that record what happened; the loop appends them.
"""

from __future__ import annotations

from datetime import datetime

from bot.control import AskApproval, Escalate, Interrupted, RunCommand, RunDeploy, RunTags
from bot.events import (
    ApprovalRequested,
    CommandResult,
    Deploy,
    DeployResult,
    DeployStarted,
    Error,
    Event,
    GitTagsResult,
    HumanResponse,
    LockEnvironment,
    RequestMoreInformation,
    ShowDeploys,
    UnlockEnvironment,
    UserMessage,
)
from bot.policy import Policy, args_hash
from bot.prompt import redact
from bot.ports import Deployer, DeployerError, DeployRecord, DeployRequest, History, Lock, Locks
from bot.thread import Thread


async def list_tags(action: RunTags, deployer: Deployer) -> Event:
    try:
        return GitTagsResult(step_id=action.step.id, tags=await deployer.list_tags())
    except DeployerError as e:
        return Error(kind="deployer", step_id=action.step.id, message=f"listing tags failed: {e}")


async def ask_approval(
    action: AskApproval, thread: Thread, deployer: Deployer, policy: Policy, locks: Locks, now: datetime
) -> Event:
    step = action.step
    checked = await _check(step, deployer, policy)
    if isinstance(checked, Error):
        return checked
    holder = await locks.holder(step.environment)  # don't ask approvers for what cannot start
    if holder:
        return Error(kind="locked", step_id=step.id, message=f"not deploying: {holder.describe()}")
    instruction = thread.latest_instruction()
    return ApprovalRequested(
        step_id=step.id,
        thread_id=thread.id,
        args_hash=args_hash(step.service, step.tag, step.environment),
        service=step.service,
        tag=step.tag,
        commit=checked,
        environment=step.environment,
        requested_by=instruction[2] if instruction else "",
        requesters=sorted({
            e.user for e in thread.events
            if isinstance(e, UserMessage) or (isinstance(e, HumanResponse) and e.approve is None)
        }),
        reason=step.reason,
        expires_at=now + policy.approval_ttl,
    )


async def preflight(
    action: RunDeploy, thread: Thread, deployer: Deployer, policy: Policy, now: datetime
) -> Error | DeployStarted:
    """Everything that must still hold right before a deploy starts, but the environment
    lock: the caller takes that, and taking it names any other holder."""
    step, request = action.step, action.request
    if request and action.decision:
        why = policy.recheck(thread.id, step, request, action.decision, now)
        if why:
            return Error(kind="recheck", step_id=step.id, message=f"not deploying: {why}")
    checked = await _check(step, deployer, policy)
    if isinstance(checked, Error):
        return checked
    if request and checked != request.commit:
        return Error(
            kind="recheck",
            step_id=step.id,
            message=(
                f"not deploying: tag {step.tag} now points to {checked[:7]}, "
                f"but {request.commit[:7]} was approved"
            ),
        )
    return DeployStarted(step_id=step.id, deploy_id=deploy_id(thread, step), commit=checked)


def deploy_id(thread: Thread, step: Deploy) -> str:
    """The idempotency key of one deploy step; also the owner of its environment lock."""
    return f"{thread.id}-{step.id}"


async def deploy(
    step: Deploy,
    started: DeployStarted,
    decision: HumanResponse | None,
    deployer: Deployer,
    secrets: tuple[str, ...] = (),
) -> Event:
    commit = started.commit
    request = DeployRequest(started.deploy_id, step.service, step.tag, step.environment, commit)
    try:
        outcome = await deployer.deploy(request)
    except DeployerError as e:
        return Error(kind="deployer", step_id=step.id, message=f"the deploy could not run: {e}")
    return DeployResult(
        step_id=step.id,
        deploy_id=started.deploy_id,
        service=step.service,
        tag=step.tag,
        environment=step.environment,
        commit=commit,
        ok=outcome.ok,
        exit_code=outcome.exit_code,
        output=redact(outcome.output, secrets),  # it is shown in chat, email and the API
        approved_by=decision.user if decision else None,
        url=outcome.url,
    )


def interrupted(action: Interrupted) -> list[Event]:
    step, deploy_id = action.step, action.started.deploy_id
    what = f"{step.service} {step.tag} to {step.environment}"
    return [
        Error(
            kind="interrupted",
            step_id=step.id,
            message=f"the deploy of {what} (deploy id {deploy_id}) was interrupted before "
            "its result was recorded; its outcome is unknown, so it was not run again",
        ),
        RequestMoreInformation(
            source="bot",
            message=f"I was interrupted while deploying {what} (deploy id {deploy_id}) and do "
            "not know whether it finished. Please check, then tell me whether to try again.",
        ),
    ]


async def run_command(
    action: RunCommand, thread: Thread, locks: Locks, history: History, policy: Policy, now: datetime
) -> Event:
    step, env = action.step, action.step.environment
    instruction = thread.latest_instruction()
    user = instruction[2] if instruction else ""
    if env not in policy.environments:
        known = ", ".join(sorted(policy.environments))
        return CommandResult(step_id=step.id, ok=False, text=f"There is no environment {env!r} (known: {known}).")
    match step:
        case LockEnvironment():
            holder = await locks.acquire(Lock(env, f"manual:{user}", step.reason, now), ttl_ms=None)
            if holder:
                return CommandResult(step_id=step.id, ok=False, text=f"Already locked: {holder.describe()}.")
            return CommandResult(
                step_id=step.id, ok=True,
                text=f"Locked {env}: {step.reason}. No deploy to {env} starts until it is unlocked.",
            )
        case UnlockEnvironment():
            holder = await locks.holder(env)
            if holder is None:
                return CommandResult(step_id=step.id, ok=False, text=f"{env} is not locked.")
            why = policy.may_unlock(user, env, holder.owner)
            if why:
                return CommandResult(step_id=step.id, ok=False, text=f"Not unlocked: {why}.")
            await locks.release(env, holder.owner)
            return CommandResult(step_id=step.id, ok=True, text=f"Unlocked {env}; it had been locked {holder.by()}.")
        case ShowDeploys():
            return CommandResult(step_id=step.id, ok=True, text=await whats_on(env, history, locks))
    raise TypeError(f"not a command step: {step!r}")


async def whats_on(environment: str, history: History, locks: Locks) -> str:
    latest: dict[str, DeployRecord] = {}
    for record in await history.recent(environment, 100):
        if record.ok:
            latest.setdefault(record.service, record)
    lines = [
        f"{r.service} {r.tag} ({r.commit[:7]}), deployed {r.at:%Y-%m-%d %H:%M} UTC"
        + (f", approved by {r.approved_by}" if r.approved_by else "")
        + (f", {r.url}" if r.url else "")
        for r in sorted(latest.values(), key=lambda r: r.service)
    ]
    text = f"On {environment}: " + "; ".join(lines) + "." if lines else f"Nothing has been deployed to {environment} by deploybot yet."
    holder = await locks.holder(environment)
    return text + (f" Note: {holder.describe()}." if holder else "")


def escalate(action: Escalate) -> Event:
    return RequestMoreInformation(source="bot", message=action.message)


async def _check(step: Deploy, deployer: Deployer, policy: Policy) -> str | Error:
    """The commit the step's tag points to, or the error that stops it."""
    invalid = policy.invalid_deploy(step)
    if invalid:
        return Error(kind="validation", step_id=step.id, message=invalid)
    try:
        commit = await deployer.resolve(step.tag)
        if commit:
            return commit
        newest = ", ".join(t.name for t in (await deployer.list_tags())[:5]) or "none"
    except DeployerError as e:
        return Error(kind="deployer", step_id=step.id, message=f"looking up tag {step.tag} failed: {e}")
    return Error(
        kind="validation",
        step_id=step.id,
        message=f"tag {step.tag!r} does not exist; newest tags: {newest}",
    )
