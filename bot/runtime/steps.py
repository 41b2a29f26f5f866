"""Carry out the steps that are not deploys: listing tags, locks, "what's on", and finding
what a rollback puts back. Never calls the LLM; each returns the event that records what
happened. (Deploys: deploying.py.)"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from datetime import datetime

from bot.core import authority, wording
from bot.core.catalog import Catalog
from bot.core.events import (
    CommandResult,
    CommandStep,
    DeployService,
    Error,
    Event,
    GitTagsResult,
    ListGitTags,
    LockEnvironment,
    LockTaken,
    ResumeDeploys,
    RollBack,
    ShowDeploys,
    StopDeploys,
    UnlockEnvironment,
)
from bot.core.freeze_windows import ALL, stop_the_line
from bot.core.people import Identity
from bot.core.policy import Policy, lock_owner
from bot.core.thread import Thread
from bot.runtime.ports import DeployerError, DeployRecord, FreezeStore, History, Lock, Locks, Versions


async def list_tags(step: ListGitTags, deployers: Mapping[str, Versions]) -> list[Event]:
    """One result per repository asked: the service's, or (none named) every service's; one
    for services that share a repository (backend and frontend without a catalog)."""
    if step.service is not None and step.service not in deployers:
        return [Error(kind="validation", step_id=step.id, message=wording.unknown_service(step.service, deployers))]
    asked = {step.service: deployers[step.service]} if step.service else deployers
    shared = len({id(d) for d in asked.values()}) == 1 and not step.service
    results: list[Event] = []
    for service, deployer in ({"": next(iter(asked.values()))} if shared else asked).items():
        try:
            results.append(GitTagsResult(step_id=step.id, tags=await deployer.list_tags(), service=service))
        except DeployerError as e:
            return [Error(kind="deployer", step_id=step.id, message=wording.listing_tags_failed(e))]
    return results


async def plan_rollback(step: RollBack, history: History, deployers: Mapping[str, Versions], policy: Policy) -> Event:
    """The deploy that rolls `step.service` in `step.environment` back: to the newest deploy
    before the current one that succeeded, is not marked faulty and whose tag still points
    to the same commit. Else a CommandResult saying why there is none."""
    service, env = step.service, step.environment
    invalid = policy.catalog.invalid(service, env) or (
        None if env in policy.environments else wording.unknown_environment(env, policy.environments)
    )
    if invalid:
        return CommandResult(step_id=step.id, ok=False, text=invalid)
    deploys = [r for r in await history.recent(env, 1000, service=service) if r.ok]
    if not deploys:
        return CommandResult(step_id=step.id, ok=False, text=wording.never_deployed(service, env))
    current = deploys[0]
    if current.rollback_of:
        return CommandResult(step_id=step.id, ok=False, text=wording.no_rollback_of_rollback(service, env, current.tag))
    target = await _target(current, deploys[1:], deployers[service])
    if target is None:
        return CommandResult(step_id=step.id, ok=False, text=wording.nothing_to_roll_back(service, env))
    return DeployService(
        service=service, tag=target.tag, environment=env, source="command",
        reason=wording.rollback_reason(target.tag, current.tag),
        rollback_of=current.deploy_id, rollback_from=current.tag,
    )


async def _target(current: DeployRecord, older: list[DeployRecord], deployer: Versions) -> DeployRecord | None:
    for record in older:
        if record.faulty or record.commit == current.commit:
            continue
        try:
            if await deployer.resolve(record.tag) == record.commit:
                return record
        except DeployerError:
            continue
    return None


Tell = Callable[[str, Event], Awaitable[None]]  # record an event in another thread


async def run_command(
    step: CommandStep, thread: Thread, locks: Locks, history: History, policy: Policy, now: datetime,
    freezes: FreezeStore | None = None, tell: Tell | None = None,
) -> Event:
    env = step.environment
    # Who asked: locking is theirs to do, or not (nobody's, for a request copied into a fork).
    who = thread.authority(thread.instruction_for(step.id))
    if isinstance(step, StopDeploys | ResumeDeploys):
        return await _stop_or_resume(step, who, policy, now, freezes)
    if env not in policy.environments:
        text = wording.no_such_environment(env, policy.environments)
        return CommandResult(step_id=step.id, ok=False, text=text)
    service = getattr(step, "service", "")
    if service and service not in policy.catalog.services:
        return CommandResult(step_id=step.id, ok=False, text=wording.unknown_service(service, policy.catalog.names))
    match step:
        case LockEnvironment():
            return await _lock(step, thread, who, locks, policy, now)
        case UnlockEnvironment():
            return await _unlock(step, thread, who, locks, policy, tell)
        case ShowDeploys():
            return CommandResult(step_id=step.id, ok=True, text=await whats_on(env, history, locks, policy.catalog))
    raise TypeError(f"not a command step: {step!r}")


async def _lock(
    step: LockEnvironment, thread: Thread, who: Identity, locks: Locks, policy: Policy, now: datetime
) -> Event:
    env, service = step.environment, step.service
    why = authority.why_not(policy, who, authority.Lock(env))
    if why:
        return CommandResult(step_id=step.id, ok=False, text=wording.not_locked_by(why))
    holder = await locks.acquire(Lock(env, lock_owner(who), step.reason, now, service, thread.id), ttl_ms=None)
    if holder:
        return CommandResult(step_id=step.id, ok=False, text=wording.already_locked(holder.describe()))
    return CommandResult(step_id=step.id, ok=True, text=wording.locked(wording.lock_target(env, service), step.reason))


async def _unlock(
    step: UnlockEnvironment, thread: Thread, who: Identity, locks: Locks, policy: Policy, tell: Tell | None
) -> Event:
    env, service = step.environment, step.service
    target = wording.lock_target(env, service)
    held = await locks.held(env, [service] if service else [])
    holder = next((lock for lock in held if lock.service == service), None)
    if holder is None:
        return CommandResult(step_id=step.id, ok=False, text=wording.not_locked(target))
    why = authority.why_not(policy, who, authority.Unlock(env, holder.owner, target, holder.by()))
    if why:
        return CommandResult(step_id=step.id, ok=False, text=wording.not_unlocked(why))
    theirs = holder.owner != lock_owner(who)
    if theirs and not step.force:
        # Someone else's lock is taken only on purpose, with a reason: one set by hand
        # (they are told), or a deploy's (lifting it lets another deploy start while
        # that one may still be running; it lapses by itself within a minute of its
        # process dying).
        return CommandResult(step_id=step.id, ok=False, text=wording.take_with_force(target, holder.by()))
    await locks.release(env, holder.owner, service)
    if not (theirs and step.force):  # their own lock (taking another's needs the reason, above)
        return CommandResult(step_id=step.id, ok=True, text=wording.unlocked(target, holder.by()))
    if holder.thread and holder.thread != thread.id and tell is not None:
        await tell(holder.thread, LockTaken(environment=env, service=service, by=who.label, reason=step.force))
    return CommandResult(step_id=step.id, ok=True, text=wording.lock_taken(target, holder.by(), step.force))


async def _stop_or_resume(
    step: StopDeploys | ResumeDeploys, who: Identity, policy: Policy, now: datetime, freezes: FreezeStore | None
) -> Event:
    scope = step.environment
    if scope != ALL and scope not in policy.environments:
        return CommandResult(step_id=step.id, ok=False, text=wording.no_such_environment(scope, policy.environments))
    if freezes is None:
        return CommandResult(step_id=step.id, ok=False, text=wording.cannot_stop_here())
    why = authority.why_not(policy, who, authority.Stop(scope))
    if why:
        return CommandResult(step_id=step.id, ok=False, text=wording.not_stopped(why))
    where = wording.freeze_scope(scope)
    if isinstance(step, StopDeploys):
        if step.until is not None and step.until <= now:
            return CommandResult(step_id=step.id, ok=False, text=wording.until_in_the_past(step.until))
        await freezes.set(stop_the_line(scope, reason=step.reason, set_by=who.label, since=now, until=step.until))
        return CommandResult(step_id=step.id, ok=True, text=wording.deploys_stopped(where, step.reason, step.until))
    if not await freezes.lift(scope):
        return CommandResult(step_id=step.id, ok=False, text=wording.not_stopped_now(where))
    return CommandResult(step_id=step.id, ok=True, text=wording.deploys_resumed(where))


async def whats_on(environment: str, history: History, locks: Locks, catalog: Catalog | None = None) -> str:
    """What is deployed there now, service by service, and the locks in the way."""
    catalog = catalog or Catalog()
    latest: dict[str, DeployRecord] = {}
    for record in await history.recent(environment, 1000):
        if record.ok:
            latest.setdefault(record.service, record)
    lines = [
        wording.whats_on_line(r.service, r.tag, r.commit, r.at, r.approved_by, r.url)
        for r in sorted(latest.values(), key=lambda r: r.service)
    ]
    text = wording.whats_on(environment, lines) if lines else wording.nothing_deployed(environment)
    held = await locks.held(environment, catalog.names)
    notes = " ".join(wording.lock_note(lock.describe()) for lock in held)
    return f"{text} {notes}" if notes else text
