"""Carry out the steps that are not deploys: listing tags, locks and "what's on". Never
calls the LLM; each returns the event that records what happened. (Deploys: deploying.py.)"""

from __future__ import annotations

from datetime import datetime

from bot import wording
from bot.events import (
    CommandResult,
    CommandStep,
    Error,
    Event,
    GitTagsResult,
    ListGitTags,
    LockEnvironment,
    ShowDeploys,
    UnlockEnvironment,
)
from bot.people import Identity
from bot.policy import Policy, lock_owner
from bot.ports import Deployer, DeployerError, DeployRecord, History, Lock, Locks
from bot.thread import Thread


async def list_tags(step: ListGitTags, deployer: Deployer) -> Event:
    try:
        return GitTagsResult(step_id=step.id, tags=await deployer.list_tags())
    except DeployerError as e:
        return Error(kind="deployer", step_id=step.id, message=wording.listing_tags_failed(e))


async def run_command(
    step: CommandStep, thread: Thread, locks: Locks, history: History, policy: Policy, now: datetime
) -> Event:
    env = step.environment
    instruction = thread.latest_instruction()  # who asked: locking is theirs to do, or not
    who = instruction.identity if instruction else Identity(None, "", "")
    if env not in policy.environments:
        text = wording.no_such_environment(env, policy.environments)
        return CommandResult(step_id=step.id, ok=False, text=text)
    match step:
        case LockEnvironment():
            why = policy.may_lock(who, env)
            if why:
                return CommandResult(step_id=step.id, ok=False, text=wording.not_locked_by(why))
            holder = await locks.acquire(Lock(env, lock_owner(who), step.reason, now), ttl_ms=None)
            if holder:
                text = wording.already_locked(holder.describe())
                return CommandResult(step_id=step.id, ok=False, text=text)
            return CommandResult(step_id=step.id, ok=True, text=wording.locked(env, step.reason))
        case UnlockEnvironment():
            holder = await locks.holder(env)
            if holder is None:
                return CommandResult(step_id=step.id, ok=False, text=wording.not_locked(env))
            why = policy.may_unlock(who, env, holder.owner)
            if why:
                return CommandResult(step_id=step.id, ok=False, text=wording.not_unlocked(why))
            await locks.release(env, holder.owner)
            return CommandResult(step_id=step.id, ok=True, text=wording.unlocked(env, holder.by()))
        case ShowDeploys():
            return CommandResult(step_id=step.id, ok=True, text=await whats_on(env, history, locks))
    raise TypeError(f"not a command step: {step!r}")


async def whats_on(environment: str, history: History, locks: Locks) -> str:
    latest: dict[str, DeployRecord] = {}
    for record in await history.recent(environment, 100):
        if record.ok:
            latest.setdefault(record.service, record)
    lines = [
        wording.whats_on_line(r.service, r.tag, r.commit, r.at, r.approved_by, r.url)
        for r in sorted(latest.values(), key=lambda r: r.service)
    ]
    text = wording.whats_on(environment, lines) if lines else wording.nothing_deployed(environment)
    holder = await locks.holder(environment)
    return f"{text} {wording.lock_note(holder.describe())}" if holder else text
