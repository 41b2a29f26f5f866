"""Carry out one action with deterministic code. Never calls the LLM.

Each function returns the events that record what happened; the loop appends them.
"""

from __future__ import annotations

from datetime import datetime

from bot.control import AskApproval, Escalate, Interrupted, RunDeploy, RunTags
from bot.events import (
    ApprovalRequested,
    Deploy,
    DeployResult,
    DeployStarted,
    Error,
    Event,
    GitTagsResult,
    RequestMoreInformation,
)
from bot.policy import Policy, args_hash
from bot.ports import Deployer, DeployerError, DeployRequest
from bot.thread import Thread


async def list_tags(action: RunTags, deployer: Deployer) -> Event:
    try:
        return GitTagsResult(step_id=action.step.id, tags=await deployer.list_tags())
    except DeployerError as e:
        return Error(kind="deployer", step_id=action.step.id, message=f"listing tags failed: {e}")


async def ask_approval(
    action: AskApproval, thread: Thread, deployer: Deployer, policy: Policy, now: datetime
) -> Event:
    step = action.step
    checked = await _check(step, deployer, policy)
    if isinstance(checked, Error):
        return checked
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
        reason=step.reason,
        expires_at=now + policy.approval_ttl,
    )


async def preflight(
    action: RunDeploy, thread: Thread, deployer: Deployer, policy: Policy, now: datetime
) -> Error | DeployStarted:
    """Everything that must still hold right before a deploy starts."""
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
    return DeployStarted(step_id=step.id, deploy_id=f"{thread.id}-{step.id}", commit=checked)


async def deploy(action: RunDeploy, started: DeployStarted, deployer: Deployer) -> Event:
    step, commit = action.step, started.commit
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
        output=outcome.output,
        approved_by=action.decision.user if action.decision else None,
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
