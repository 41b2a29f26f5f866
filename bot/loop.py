"""run(thread_id): load -> next action -> carry it out -> append -> repeat, until a pause.

Nothing lives in memory between runs: any process can run any thread at any time. Every
decision is appended with compare-and-set, so a run that lost a race re-reads and
decides again instead of overwriting.
"""

from __future__ import annotations

import asyncio
import logging
from contextvars import ContextVar
from dataclasses import dataclass, field
from datetime import datetime
from typing import Awaitable, Callable, Sequence

from bot import agent, handler
from bot.control import (
    AskApproval,
    Decide,
    Escalate,
    Interrupted,
    RunCommand,
    RunDeploy,
    RunTags,
    Stop,
    next_action,
)
from bot.events import Deploy, DeployResult, DeployStarted, Error, Event, HumanResponse, new_id, utcnow
from bot.policy import Policy
from bot.ports import (
    Conflict,
    LeaseLost,
    Deployer,
    DeployRecord,
    History,
    Lock,
    Locks,
    NextStepModel,
    Notifier,
    ThreadStore,
)
from bot.thread import Thread

log = logging.getLogger(__name__)
# The lease owner of the run in progress in this task: its decisions are fenced by it.
_holder: ContextVar[str] = ContextVar("holder")


LOCK_TTL_MS = 60_000  # a deploy's lock outlives a dead holder by at most this
LEASE_TTL_MS = 4_000  # a thread whose runner died can be taken over after this
FACT_RETRY_WAITS = (0.1, 0.2, 0.5, 1, 2, 2, 2, 2, 2, 2, None)  # about 14 s, then give up


@dataclass
class Runner:
    store: ThreadStore
    deployer: Deployer
    llm: NextStepModel | None
    notifier: Notifier
    policy: Policy
    locks: Locks
    history: History
    secrets: tuple[str, ...] = ()
    # Errors of the store's connection (Redis restarting): the run stops and is retried
    # later, instead of the thread being marked failed by a fault that is not its own.
    transient: tuple[type[Exception], ...] = ()
    clock: Callable[[], datetime] = utcnow
    name: str = field(default_factory=lambda: f"runner-{new_id()}")

    async def run(self, thread_id: str) -> Thread | None:
        """Advance the thread until it pauses. None if another runner holds it right now:
        only one runner at a time may advance a thread, so none of them ever mistakes a deploy
        another one is running for an interrupted one."""
        owner = f"{self.name}:{new_id()}"  # per run: two runs in one process exclude each other too
        while True:
            claimed = await self.store.claim(thread_id, owner, LEASE_TTL_MS)
            if claimed is None:
                return None
            renewing = asyncio.create_task(_keep_renewing(
                lambda: self.store.lease(thread_id, owner, LEASE_TTL_MS), LEASE_TTL_MS,
                f"the lease on thread {thread_id}",
            ))
            thread, holding = claimed, _holder.set(owner)
            try:
                thread = await self._run(claimed)
            except LeaseLost:
                log.error("thread %s: lost its lease to another run; this run stops", thread_id)
                return None
            finally:
                _holder.reset(holding)
                renewing.cancel()
                latest = await self.store.release(thread, owner)
            # Whoever appended while we held the lease could not run the thread: look again.
            if latest.version == thread.version:
                return thread

    async def _run(self, thread: Thread) -> Thread:
        # A backstop only: the policy's step limit pauses a run long before this.
        for _ in range(4 * self.policy.max_steps + 20):
            action = next_action(thread, self.policy, self.clock())
            if isinstance(action, Stop):
                return thread
            try:
                thread = await self._advance(thread, action)
            except Conflict:
                thread = await self.store.refresh(thread)
            except (LeaseLost, *self.transient):
                raise
            except Exception as e:  # a bug must pause the thread visibly, not kill the process
                log.exception("thread %s: %s failed", thread.id, type(action).__name__)
                error = Error(kind="internal", message=f"internal error: {type(e).__name__}: {e}")
                return await self._record_fact(thread, [error])
        return thread

    async def _advance(self, thread: Thread, action: object) -> Thread:
        now = self.clock()
        match action:
            case Decide():
                step = await agent.decide(thread, self.llm, self.secrets)
                return await self._record(thread, [step])
            case RunTags():
                result = await handler.list_tags(action, self.deployer)
                return await self._record(thread, [result])
            case RunCommand():
                result = await handler.run_command(action, thread, self.locks, self.history, self.policy, now)
                return await self._record_fact(thread, [result])
            case AskApproval():
                event = await handler.ask_approval(action, thread, self.deployer, self.policy, self.locks, now)
                return await self._record(thread, [event])
            case RunDeploy():
                return await self._deploy(thread, action, now)
            case Interrupted() if self.deployer.resumable and action.ours(thread):
                return await self._resume(thread, action, now)
            case Interrupted():
                return await self._record(thread, handler.interrupted(action))
            case Escalate():
                return await self._record(thread, [handler.escalate(action)])
        raise TypeError(f"unknown action {action!r}")

    async def _deploy(self, thread: Thread, action: RunDeploy, now: datetime) -> Thread:
        step = action.step
        checked = await handler.preflight(action, thread, self.deployer, self.policy, now)
        if isinstance(checked, DeployStarted):
            checked = await self._lock(thread, step, now) or checked
        try:
            # Only the run whose DeployStarted wins the compare-and-set may deploy.
            thread = await self._record(thread, [checked])
        except Conflict:
            if isinstance(checked, DeployStarted):
                await self.locks.release(step.environment, checked.deploy_id)
            raise
        if not isinstance(checked, DeployStarted):
            return thread
        return await self._execute(thread, step, checked, action.decision)

    async def _resume(self, thread: Thread, action: Interrupted, now: datetime) -> Thread:
        """A deployer that finds runs by deploy id follows the interrupted deploy (or starts
        it, if it never got going) instead of starting a second one."""
        locked = await self._lock(thread, action.step, now)
        if locked:
            return await self._record(thread, [locked])
        request = thread.approval_for(action.step.id)
        decision = thread.decision_for(request.approval_id) if request else None
        return await self._execute(thread, action.step, action.started, decision)

    async def _lock(self, thread: Thread, step: Deploy, now: datetime) -> Error | None:
        reason = f"deploying {step.service} {step.tag}"
        owner = handler.deploy_id(thread, step)
        holder = await self.locks.acquire(Lock(step.environment, owner, reason, now), LOCK_TTL_MS)
        if holder is None:
            return None
        return Error(kind="locked", step_id=step.id, message=f"not deploying: {holder.describe()}")

    async def _execute(
        self, thread: Thread, step: Deploy, started: DeployStarted, decision: HumanResponse | None
    ) -> Thread:
        """Run a recorded deploy while holding, and renewing, its environment's lock."""
        renewing = asyncio.create_task(_keep_renewing(
            lambda: self.locks.renew(step.environment, started.deploy_id, LOCK_TTL_MS), LOCK_TTL_MS,
            f"the lock on {step.environment} for {started.deploy_id}",
        ))
        deploying = asyncio.ensure_future(
            handler.deploy(step, started, decision, self.deployer, self.secrets)
        )
        stopping = False
        while True:
            try:
                result = await asyncio.shield(deploying)
                break
            except asyncio.CancelledError:
                # A worker stopping (SIGTERM) never abandons a deploy: handing it to another
                # worker would only get it reported as interrupted. It finishes, is recorded,
                # and then the run stops.
                stopping = True
                if deploying.done():
                    result = deploying.result()
                    break
                log.warning("thread %s: stopping after deploy %s finishes", thread.id, started.deploy_id)
        try:
            thread = await self._record_fact(thread, [result])
        finally:
            # Held until the result is recorded, so nobody deploys there before it is known.
            renewing.cancel()
            try:
                await self.locks.release(step.environment, started.deploy_id)
            except Exception:  # it expires by itself within LOCK_TTL_MS
                log.exception("thread %s: releasing the lock on %s failed", thread.id, step.environment)
        if isinstance(result, DeployResult):
            await self._remember(thread, result)
        if stopping:
            raise asyncio.CancelledError
        return thread

    async def _remember(self, thread: Thread, result: DeployResult) -> None:
        record = DeployRecord(
            result.environment, result.service, result.tag, result.commit, result.ok, result.at,
            result.approved_by, thread.id, result.deploy_id, result.url,
        )
        try:
            await self.history.record(record)
        except Exception:  # the result is in the thread; the index can be rebuilt from it
            log.exception("thread %s: could not add %s to the deploy history", thread.id, result.deploy_id)

    async def _record(self, thread: Thread, events: Sequence[Event]) -> Thread:
        """Append a decision: raises Conflict if the thread moved since we read it, and
        LeaseLost if this run no longer holds the thread."""
        thread = await self.store.append(thread, events, _holder.get(None))
        await self._publish(thread, events)
        return thread

    async def _publish(self, thread: Thread, events: Sequence[Event]) -> None:
        try:
            await self.notifier.publish(thread, events)
        except Exception:  # the events are stored; a channel outage must not stop the run
            log.exception("thread %s: notifying its channel failed", thread.id)

    async def _record_fact(self, thread: Thread, events: Sequence[Event]) -> Thread:
        """Append what already happened (a deploy's result): it must land whatever else did,
        so it waits out a store that is briefly unreachable (appending is idempotent)."""
        for wait in FACT_RETRY_WAITS:
            try:
                thread = await self.store.append_fact(thread, events)
                break
            except self.transient:
                if wait is None:
                    raise
                log.warning("thread %s: the store is unreachable; recording %s again in %.1f s",
                            thread.id, events[0].type, wait)
                await asyncio.sleep(wait)
        await self._publish(thread, events)
        return thread


async def _keep_renewing(renew: Callable[[], Awaitable[bool]], ttl_ms: int, what: str) -> None:
    """Renew at a third of the TTL until cancelled; a failed renewal is logged, not fatal,
    so a Redis blip does not end the renewals for good."""
    while True:
        await asyncio.sleep(ttl_ms / 3000)
        try:
            if not await renew():
                log.error("lost %s to someone else", what)
        except Exception:
            log.exception("renewing %s failed", what)
