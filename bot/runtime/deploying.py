"""The deploy path, top to bottom, in one place.

    ask_approval   a protected deploy: check it, then ask (the approval binds the commit)
    run            preflight -> lock -> record deploy_started -> execute -> record result
    resume         after a crash between deploy_started and its result

`deploy_started` is recorded (compare-and-set, fenced by the run's lease) before the
deployer is called, so exactly one run ever starts a given deploy, and a crash after it
is never mistaken for "not deployed yet". The environment lock is held, and renewed,
from before `deploy_started` until the result is recorded.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from bot.core import authority, deploy_rules, people, verification, wording
from bot.core.audit import audit_trail
from bot.core.control import Interrupted, RunDeploy
from bot.core.deploys import deploy_id, started_here, thread_of
from bot.core.events import (
    DEPLOY_STEPS,
    PREVIEW_COMMITS,
    ApprovalRequested,
    Change,
    Deploy,
    DeployQueued,
    DeployResult,
    DeployStarted,
    Error,
    Event,
    RequestMoreInformation,
)
from bot.core.identity import THE_BOT
from bot.core.people import Identity
from bot.core.policy import Policy, args_hash, lock_owner
from bot.core.prompt import redact
from bot.core.thread import NOBODY, Thread
from bot.runtime import gathering
from bot.runtime.ports import (
    Deployer,
    DeployerError,
    DeployOutcome,
    DeployQueue,
    DeployRecord,
    DeployRequest,
    DeployRunner,
    FreezeStore,
    History,
    Lock,
    Locks,
    Versions,
)

log = logging.getLogger(__name__)

LOCK_TTL_MS = 60_000  # a deploy's lock outlives a dead holder by at most this


class Journal(Protocol):
    """How a run records what it does."""

    async def decide(self, thread: Thread, events: Sequence[Event]) -> Thread:
        """Append a decision: raises Conflict if the thread moved since it was read, and
        LeaseLost if the run no longer holds the thread."""
        ...

    async def fact(self, thread: Thread, events: Sequence[Event]) -> Thread:
        """Append what already happened: it lands whatever else was appended meanwhile."""
        ...


@dataclass
class Deploying:
    # Each service's: its versions (tags, commits, checks) and how its deploys run (backend and
    # frontend may share one).
    deployers: Mapping[str, Deployer]
    locks: Locks
    history: History
    policy: Policy
    secrets: tuple[str, ...] = ()  # redacted from deploy output, which people and the model read
    queue: DeployQueue | None = None  # approved deploys wait here for a lock (None: they fail)
    freezes: FreezeStore | None = None  # stop-the-line freezes people set
    wake: Callable[[str], Awaitable[None]] | None = None  # hands a thread to a worker
    rules: tuple[deploy_rules.Rule, ...] = deploy_rules.RULES  # asked before asking and before deploying


    # --- before: asking for approval ------------------------------------------------

    async def ask_approval(self, thread: Thread, step: Deploy, now: datetime) -> Event:
        checked = await self._check(step, thread)
        if isinstance(checked, Error):
            return checked
        holder = await self.locks.holder(step.environment, step.service)  # don't ask for what cannot start
        if holder:
            return Error(kind="locked", step_id=step.id, message=wording.not_deploying(holder.describe()))
        refused = deploy_rules.first(await self.gather(step, checked, now, thread), self.rules)
        if refused is not None:
            return _refused(step, refused)
        instruction = thread.instruction_for(step.id)
        asking = thread.authority(instruction)
        # Whoever acts on the request asks: in a fork, the forker asks again what was asked then.
        requested_by = asking.principal if asking != NOBODY else instruction.principal if instruction else ""
        return ApprovalRequested(
            step_id=step.id,
            thread_id=thread.id,
            args_hash=args_hash(step.service, step.tag, step.environment),
            service=step.service,
            tag=step.tag,
            commit=checked,
            environment=step.environment,
            requested_by=requested_by,
            asked_by=self.policy.directory.display(requested_by) if requested_by else "",
            requesters=thread.requesters(),
            reason=step.reason,
            expires_at=now + self.policy.approval_ttl,
            change=await self.change(step, checked),
            required=self.policy.approval_rules(step.environment).required,
            approvers=list(self.policy.approval_rules(step.environment).approvers or ()),
            rollback_of=_field(step, "rollback_of"),
            force=_field(step, "force"),
            forced_by=_field(step, "forced_by"),
        )

    async def current(self, step: Deploy) -> DeployRecord | None:
        """What is deployed now for the step's service in its environment: its newest deploy
        there that succeeded."""
        return await gathering.current(self.history, step)

    async def change(self, step: Deploy, commit: str) -> Change:
        """What deploying `commit` changes against what is deployed there now."""
        current = await self.current(step)
        if current is None:
            return Change(to_commit=commit)
        base = Change(from_tag=current.tag, from_commit=current.commit, to_commit=commit)
        try:
            versions: Versions = self.deployers[step.service]
            found = await versions.compare(current.commit, commit, PREVIEW_COMMITS)
        except DeployerError as e:
            return base.model_copy(update={"unknown": str(e)[:300]})
        commits = found.added if found.ahead else found.removed
        return base.model_copy(update={"ahead": found.ahead, "behind": found.behind, "commits": list(commits)})

    async def gather(self, step: Deploy, commit: str, now: datetime, thread: Thread | None = None,
                     asking: Identity | None = None) -> deploy_rules.Facts:
        """What the deploy rules read of deploying `commit` as `step` now (bot/runtime/gathering.py)."""
        return await gathering.gather(self, step, commit, now, thread, asking)

    # --- the deploy ------------------------------------------------------------------

    async def run(self, thread: Thread, action: RunDeploy, journal: Journal, now: datetime) -> Thread:
        step = action.step
        if action.request is not None and (changed := self.policy.rules_changed(thread, action.request)):
            # The rules changed since the decision (a restart with new settings while it waited
            # for its turn): recorded, and those in force now decide whether it still holds.
            thread = await journal.decide(thread, [changed])
            decision = thread.decision_for(action.request.approval_id)
            if decision is None:
                return thread  # it waits for the approvals the rules need now
            action = RunDeploy(step, action.request, decision)
        checked = await self._preflight(thread, action, now)
        if isinstance(checked, DeployQueued):
            blocked: Error | DeployQueued | None = checked
        elif isinstance(checked, DeployStarted):
            blocked = await self._lock(thread, step, now, waits=action.decision is not None)
            if blocked is None and (stale := await self._overtaken(step)):
                await self.locks.release(step.environment, checked.deploy_id, step.service)
                blocked = stale
        else:
            blocked = None
        if blocked is not None:
            if isinstance(blocked, DeployQueued):
                said = thread.queued(step.id)
                if said and (said.position, said.behind) == (blocked.position, blocked.behind):
                    return thread  # still waiting, nothing new to say
                return await journal.decide(thread, [blocked])
            checked = blocked
        try:
            # Only the run whose deploy_started wins the compare-and-set may deploy.
            thread = await journal.decide(thread, [checked])
        except BaseException:
            if isinstance(checked, DeployStarted):
                await self.locks.release(step.environment, checked.deploy_id, step.service)
            raise
        if not isinstance(checked, DeployStarted):
            return thread
        await self._started(step, checked.deploy_id)
        return await self._execute(thread, action, checked, journal)

    async def _started(self, step: Deploy, deploy_id: str) -> None:
        """A deploy whose start is recorded leaves the line it may have waited in."""
        if self.queue is None:
            return
        try:
            await self.queue.leave(step.environment, step.service, deploy_id)
        except Exception:  # the run's end leaves it again (Runner._paused); the deploy goes on
            log.exception("deploy %s: leaving the line failed", deploy_id)

    async def resume(self, thread: Thread, action: Interrupted, journal: Journal, now: datetime) -> Thread:
        """A deployer that finds runs by deploy id follows the interrupted deploy (or starts
        it, if it never got going) instead of starting a second one. Any other deploy's
        outcome is unknown: it is reported, never run again."""
        runner: DeployRunner | None = self.deployers.get(action.step.service)
        if not (runner is not None and runner.resumable and started_here(thread, action.started)):
            return await journal.decide(thread, _interrupted(action))
        locked = await self._lock(thread, action.step, now)
        if locked:
            return await journal.decide(thread, [locked])
        return await self._execute(thread, action, action.started, journal)

    async def _wait(self, thread: Thread, step: Deploy, now: datetime, behind: str) -> DeployQueued:
        position = 1
        if self.queue is not None:
            position = await self.queue.join(step.environment, step.service, deploy_id(thread.id, step.id), now)
        return DeployQueued(step_id=step.id, position=position, behind=behind)

    async def _preflight(
        self, thread: Thread, action: RunDeploy, now: datetime
    ) -> Error | DeployStarted | DeployQueued:
        """Everything that must still hold right before a deploy starts, but the environment
        lock: taking that names any other holder."""
        step, request = action.step, action.request
        if request and action.decision:
            why = self.policy.recheck(thread.id, step, request, action.decision, now)
            if why:
                return Error(kind="recheck", step_id=step.id, message=wording.not_deploying(why))
        checked = await self._check(step, thread)
        if isinstance(checked, Error):
            return checked
        if request and checked != request.commit:
            return Error(
                kind="recheck",
                step_id=step.id,
                message=wording.not_deploying(wording.tag_moved(step.tag, checked, request.commit)),
            )
        facts = await self.gather(step, checked, now, thread)  # again, right before running
        # A failed verification's rollback goes past a freeze, a stop-the-line and CI: it puts
        # back what ran before. Recorded (the deploy's `force`, by deploybot).
        automatic = verification.automatic_rollback(thread, step) is not None
        refused = deploy_rules.first(facts, self.rules, automatic_rollback=automatic)
        hit = facts.hit
        if refused is None:
            past = wording.rollback_past_freeze(hit.reason) if automatic and hit is not None else ""
            return DeployStarted(step_id=step.id, deploy_id=deploy_id(thread.id, step.id), commit=checked,
                                 past_freeze=past)
        if refused.kind == "frozen" and request and action.decision:
            if hit is not None and hit.until is not None and hit.until < request.expires_at:
                # Approved, and the freeze ends before the approval does: wait in line for it.
                behind = wording.frozen_waits(step.environment, hit.reason, hit.until)
                return await self._wait(thread, step, now, behind)
        return _refused(step, refused)

    async def _overtaken(self, step: Deploy) -> Error | None:
        """A rollback looked at again under the lock: a deploy that finished while this one
        waited for it is what the rollback would now replace (deploy_rules.rollback_still_on)."""
        if not _field(step, "rollback_of"):
            return None
        refused = deploy_rules.overtaken(step, await self.current(step))
        return _refused(step, refused) if refused is not None else None

    async def _lock(
        self, thread: Thread, step: Deploy, now: datetime, waits: bool = False
    ) -> Error | DeployQueued | None:
        """Take the service's lock in the environment for this deploy. An approved deploy
        (`waits`) that meets a lock, or others waiting before it, waits in line instead of
        failing: it starts when it is first and the lock is free."""
        env, service = step.environment, step.service
        owner = deploy_id(thread.id, step.id)
        queue = self.queue if waits else None
        if queue is not None:
            first = await queue.first(env, service)
            if first is not None and first != owner:
                position = await queue.join(env, service, owner, now)
                return DeployQueued(step_id=step.id, position=position, behind=wording.waiting_for_turn(position))
        reason = wording.deploy_lock_reason(service, step.tag)
        holder = await self.locks.acquire(Lock(env, owner, reason, now, service), LOCK_TTL_MS)
        if holder is None:
            # It keeps its place in line until its deploy_started is recorded (see `run`): a
            # run that loses that race decides again, and must still be first.
            return None
        if queue is not None:
            position = await queue.join(env, service, owner, now)
            return DeployQueued(step_id=step.id, position=position, behind=holder.describe())
        return Error(kind="locked", step_id=step.id, message=wording.not_deploying(holder.describe()))

    async def leave_queue(self, thread: Thread) -> None:
        """A thread that no longer waits (it deployed, was cancelled, its approval expired)
        leaves every line it stood in, and the next in line is woken."""
        if self.queue is None:
            return
        for step in _placed(thread):
            if await self.queue.leave(step.environment, step.service, deploy_id(thread.id, step.id)):
                await self.wake_next(step.environment, step.service)

    def may_stand_in_line(self, thread: Thread) -> bool:
        """Whether leave_queue() has anything to look at for `thread` (a read-only run: no)."""
        return self.queue is not None and next(_placed(thread), None) is not None

    async def wake_next(self, environment: str, service: str) -> None:
        """Hand the first deploy waiting for `service` in `environment` to a worker."""
        if self.queue is None or self.wake is None:
            return
        first = await self.queue.first(environment, service)
        if first is not None:
            await self.wake(thread_of(first))

    async def _execute(
        self, thread: Thread, action: RunDeploy | Interrupted, started: DeployStarted, journal: Journal
    ) -> Thread:
        """Run a recorded deploy while holding, and renewing, its environment's lock."""
        step = action.step
        renewing = asyncio.create_task(keep_renewing(
            lambda: self.locks.renew(step.environment, started.deploy_id, LOCK_TTL_MS, step.service), LOCK_TTL_MS,
            f"the lock on {step.service} in {step.environment} for {started.deploy_id}",
        ))
        approvers = _approvers(thread, action)
        if approvers is None and verification.automatic_rollback(thread, step) is not None:
            approvers = people.BOT_USER  # no new approval: deploybot, because a check failed
        deploying = asyncio.ensure_future(self._deploy(step, started, approvers))
        stopping = False
        try:
            while True:
                try:
                    result = await asyncio.shield(deploying)
                    break
                except asyncio.CancelledError:
                    # A worker stopping (SIGTERM) never abandons a deploy: handing it to another
                    # worker would only get it reported as interrupted. It finishes, is
                    # recorded, and then the run stops.
                    stopping = True
                    if deploying.done():
                        result = deploying.result()
                        break
                    log.warning("thread %s: stopping after deploy %s finishes", thread.id, started.deploy_id)
            thread = await journal.fact(thread, [result])
        except BaseException:
            # The outcome is unknown or unrecorded: the lock stays until it expires (within
            # LOCK_TTL_MS), so nobody deploys there before someone has looked.
            renewing.cancel()
            log.error("thread %s: deploy %s ended without a recorded result", thread.id, started.deploy_id)
            raise
        # Held until the result is recorded, and in the history (which rollbacks and the
        # change preview read), so nobody deploys there before it is known.
        renewing.cancel()
        recorded = next(e for e in reversed(thread.events) if e.id == result.id)
        handed_over = False
        if isinstance(recorded, DeployResult):
            await self._remember(thread, recorded)
            if recorded.ok and recorded.rollback_of:
                handed_over = await self._rolled_back(thread, step, recorded, started.deploy_id)
            elif recorded.ok and self.policy.verify_plan(recorded.service, recorded.environment) is not None:
                # Verified next (bot/runtime/verifying.py): the lock stays held through the bake.
                handed_over = started_here(thread, started)
        try:
            if not handed_over:
                await self.locks.release(step.environment, started.deploy_id, step.service)
                await self.wake_next(step.environment, step.service)
        except Exception:  # it expires by itself within LOCK_TTL_MS
            log.exception("thread %s: releasing the lock on %s failed", thread.id, step.environment)
        if stopping:
            raise asyncio.CancelledError
        return thread

    async def _rolled_back(self, thread: Thread, step: Deploy, result: DeployResult, owner: str) -> bool:
        """A rollback that succeeded: the deploy it replaced is faulty (never a target again),
        and, unless the environment says otherwise, the service stays locked there so nobody
        deploys the faulty version again before someone has looked: the deploy's own lock
        (`owner`) is handed over, in one step, to a lock in the requester's name. True when it
        was (the deploy's lock is then gone)."""
        assert result.rollback_of is not None
        try:
            await self.history.mark_faulty(result.environment, result.rollback_of)
        except Exception:
            log.exception("thread %s: could not mark %s faulty", thread.id, result.rollback_of)
        if result.environment in self.policy.no_lock_after_rollback:
            return False
        who = thread.authority(thread.instruction_for(step.id))
        if verification.automatic_rollback(thread, step) is not None:
            who = THE_BOT  # nobody asked for it: the bot rolled back, and its lock says so
        elif who == NOBODY:  # an old fork replaying someone's request: no lock in their name
            return False
        reason = wording.rolled_back_lock_reason(_field(step, "rollback_from") or "?", who.label)
        lock = Lock(result.environment, lock_owner(who), reason, result.at, result.service, thread.id)
        try:
            return await self.locks.hand_over(lock, owner)
        except Exception:
            log.exception("thread %s: could not lock %s after the rollback", thread.id, lock.target)
            return False

    async def _deploy(self, step: Deploy, started: DeployStarted, approvers: str | None) -> Event:
        request = DeployRequest(started.deploy_id, step.service, step.tag, step.environment, started.commit)
        try:
            runner: DeployRunner = self.deployers[step.service]
            outcome = await runner.deploy(request)
        except DeployerError as e:
            # It never ran (its command was not found, the workflow could not be dispatched): a
            # failed deploy like any other, so the history, the metrics and the lists all say so.
            said = DeployOutcome(False, None, wording.deploy_could_not_run(e))
            return self._result(step, started, approvers, said)
        except Exception as e:  # a bug in a deployer: it may have started something, so say so
            log.exception("deploy %s: the deployer failed", started.deploy_id)
            return Error(kind="deployer", step_id=step.id, message=wording.deployer_broke(e))
        return self._result(step, started, approvers, outcome)

    def _result(self, step: Deploy, started: DeployStarted, approvers: str | None, outcome: DeployOutcome) -> Event:
        return DeployResult(
            step_id=step.id,
            deploy_id=started.deploy_id,
            service=step.service,
            tag=step.tag,
            environment=step.environment,
            commit=started.commit,
            ok=outcome.ok,
            exit_code=outcome.exit_code,
            output=redact(outcome.output, self.secrets),  # shown in chat, email and the API
            approved_by=approvers,
            url=outcome.url,
            rollback_of=_field(step, "rollback_of"),
            force=_field(step, "force") or started.past_freeze or None,
            forced_by=_field(step, "forced_by") or (people.BOT_USER if started.past_freeze else None),
        )

    async def _remember(self, thread: Thread, result: DeployResult) -> None:
        record = DeployRecord(
            result.environment, result.service, result.tag, result.commit, result.ok, result.at,
            result.approved_by, thread.id, result.deploy_id, result.url,
            rollback_of=result.rollback_of, force=result.force, forced_by=result.forced_by,
            **audit_trail(thread, result, self.secrets),
        )
        try:
            await self.history.record(record)
        except Exception:  # the result is in the thread; the index can be rebuilt from it
            log.exception("thread %s: could not add %s to the deploy history", thread.id, result.deploy_id)

    async def _check(self, step: Deploy, thread: Thread) -> str | Error:
        """The commit the step's tag points to, or the error that stops it (an agent asking
        for an environment its entry does not list, too)."""
        asker = thread.authority(thread.instruction_for(step.id))
        invalid = self.policy.invalid_deploy(step) or \
            authority.why_not(self.policy, asker, authority.Ask(step.environment))
        if invalid:
            return Error(kind="validation", step_id=step.id, message=invalid)
        return await self.commit_for(step)

    async def commit_for(self, step: Deploy) -> str | Error:
        """The commit the step's tag points to now, or the error that says why there is none:
        an unknown service, no such tag (with the newest ones), the tags unreadable."""
        versions: Versions | None = self.deployers.get(step.service)
        if versions is None:  # in the policy's catalog, but not built (a thread older than it)
            unknown = wording.unknown_service(step.service, self.deployers)
            return Error(kind="validation", step_id=step.id, message=unknown)
        try:
            commit = await versions.resolve(step.tag)
            if commit:
                return commit
            newest = [t.name for t in (await versions.list_tags())[:5]]
        except DeployerError as e:
            return Error(kind="deployer", step_id=step.id, message=wording.tag_lookup_failed(step.tag, e))
        return Error(kind="validation", step_id=step.id, message=wording.no_such_tag(step.tag, newest))


def _approvers(thread: Thread, action: RunDeploy | Interrupted) -> str | None:
    """Who approved: everyone whose approval counted where it took several (N-of-M), else the
    one decision; each by their person's name (one person, one name, whichever channel they
    decided by), or as their channel named them when nobody knows who they are."""
    if action.request is None or action.decision is None:
        return None
    given = thread.approvals_for(action.request.approval_id)
    required = thread.required(action.request.approval_id)
    if required > 1 and given:
        return ", ".join(a.person or a.user for a in given[:required])
    return action.decision.person or action.decision.user


def _refused(step: Deploy, refused: deploy_rules.Refusal) -> Error:
    """A deploy rule's refusal, as the deploy path records it."""
    return Error(kind=refused.kind, step_id=step.id, message=refused.message)


def _field(step: Deploy, name: str) -> str | None:
    """A field only deploys of the catalog have (a thread's older steps lack it)."""
    value = getattr(step, name, None)
    return value if isinstance(value, str) and value else None


def _interrupted(action: Interrupted) -> list[Event]:
    step, deploy_id = action.step, action.started.deploy_id
    what = wording.what_to_deploy(step.service, step.tag, step.environment)
    return [
        Error(kind="interrupted", step_id=step.id, message=wording.interrupted_deploy(what, deploy_id)),
        RequestMoreInformation(source="bot", message=wording.interrupted_ask(what, deploy_id)),
    ]


def _placed(thread: Thread) -> Iterator[Deploy]:
    """Every deploy step of `thread` that may have taken a place in a line: one queued or
    approved (its place may have been taken before a crash or a lost race kept
    deploy_queued from being recorded)."""
    for step in (e for e in thread.events if isinstance(e, DEPLOY_STEPS)):
        if thread.queued(step.id) is not None or thread.approval_for(step.id) is not None:
            yield step


async def keep_renewing(renew: Callable[[], Awaitable[bool]], ttl_ms: int, what: str, wait_first: bool = True) -> None:
    """Renew at a third of the TTL until cancelled; a failed renewal is logged, not fatal,
    so a Redis blip does not end the renewals for good."""
    if wait_first:
        await asyncio.sleep(ttl_ms / 3000)
    while True:
        try:
            if not await renew():
                log.error("lost %s to someone else", what)
        except Exception:
            log.exception("renewing %s failed", what)
        await asyncio.sleep(ttl_ms / 3000)


class Renewal:
    """keep_renewing(), started only when the first renewal is due: a run that ends sooner
    (nearly every run) never makes a task for it: less CPU per run. `cancel()` as a task's."""

    def __init__(self, renew: Callable[[], Awaitable[bool]], ttl_ms: int, what: str) -> None:
        self._task: asyncio.Task[None] | None = None
        self._handle = asyncio.get_running_loop().call_later(ttl_ms / 3000, self._start, renew, ttl_ms, what)

    def _start(self, renew: Callable[[], Awaitable[bool]], ttl_ms: int, what: str) -> None:
        self._task = asyncio.ensure_future(keep_renewing(renew, ttl_ms, what, wait_first=False))

    def cancel(self) -> None:
        self._handle.cancel()
        if self._task is not None:
            self._task.cancel()
