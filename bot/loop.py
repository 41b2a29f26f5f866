"""run(thread_id): load -> next action -> carry it out -> append -> repeat, until a pause.

Nothing lives in memory between runs: any process can run any thread at any time. Every
decision is appended with compare-and-set, so a run that lost a race re-reads and
decides again instead of overwriting.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime
from typing import Callable, Sequence

from bot import agent, handler
from bot.control import (
    AskApproval,
    Decide,
    Escalate,
    Interrupted,
    RunDeploy,
    RunTags,
    Stop,
    next_action,
)
from bot.events import DeployStarted, Error, Event, utcnow
from bot.policy import Policy
from bot.ports import Conflict, Deployer, NextStepModel, Notifier, ThreadStore
from bot.thread import Thread

log = logging.getLogger(__name__)


@dataclass
class Runner:
    store: ThreadStore
    deployer: Deployer
    llm: NextStepModel | None
    notifier: Notifier
    policy: Policy
    secrets: tuple[str, ...] = ()
    clock: Callable[[], datetime] = utcnow

    async def run(self, thread_id: str) -> Thread:
        thread = await self.store.load(thread_id)
        # A backstop only: the policy's step limit pauses a run long before this.
        for _ in range(4 * self.policy.max_steps + 20):
            action = next_action(thread, self.policy, self.clock())
            if isinstance(action, Stop):
                await self.store.touch(thread.id)
                return thread
            try:
                thread = await self._advance(thread, action)
            except Conflict:
                thread = await self.store.refresh(thread)
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
            case AskApproval():
                event = await handler.ask_approval(action, thread, self.deployer, self.policy, now)
                return await self._record(thread, [event])
            case RunDeploy():
                return await self._deploy(thread, action, now)
            case Interrupted():
                return await self._record(thread, handler.interrupted(action))
            case Escalate():
                return await self._record(thread, [handler.escalate(action)])
        raise TypeError(f"unknown action {action!r}")

    async def _deploy(self, thread: Thread, action: RunDeploy, now: datetime) -> Thread:
        checked = await handler.preflight(action, thread, self.deployer, self.policy, now)
        # Only the run whose DeployStarted wins the compare-and-set may deploy.
        thread = await self._record(thread, [checked])
        if not isinstance(checked, DeployStarted):
            return thread
        result = await handler.deploy(action, checked, self.deployer)
        return await self._record_fact(thread, [result])

    async def _record(self, thread: Thread, events: Sequence[Event]) -> Thread:
        """Append a decision: raises Conflict if the thread moved since we read it."""
        thread = await self.store.append(thread, events)
        try:
            await self.notifier.publish(thread, events)
        except Exception:  # the events are stored; a channel outage must not stop the run
            log.exception("thread %s: notifying its channel failed", thread.id)
        return thread

    async def _record_fact(self, thread: Thread, events: Sequence[Event]) -> Thread:
        """Append what already happened (a deploy's result): it must land whatever else did."""
        for _ in range(50):
            try:
                return await self._record(thread, events)
            except Conflict:
                thread = await self.store.refresh(thread)
        raise RuntimeError(f"thread {thread.id}: could not record {events} after 50 conflicts")
