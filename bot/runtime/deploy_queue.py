"""The deploy path's lines: an approved deploy that meets a lock, or others waiting before
it, waits in line for its turn; the lock itself; leaving the line and waking the next."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from datetime import datetime

from bot.core import wording
from bot.core.deploys import deploy_id, thread_of
from bot.core.events import DEPLOY_STEPS, Deploy, DeployQueued, Error
from bot.core.thread import Thread
from bot.runtime.deploy_parts import Parts
from bot.runtime.ports import Lock

log = logging.getLogger("bot.runtime.deploying")  # the deploy path logs as one, whichever part


class Queueing(Parts):
    """The environment's lock for a deploy, and the line approved deploys wait in for it."""

    async def _started(self, step: Deploy, deploy_id: str) -> None:
        """A deploy whose start is recorded leaves the line it may have waited in."""
        if self.queue is None:
            return
        try:
            await self.queue.leave(step.environment, step.service, deploy_id)
        except Exception:  # the run's end leaves it again (Runner._paused); the deploy goes on
            log.exception("deploy %s: leaving the line failed", deploy_id)

    async def _wait(self, thread: Thread, step: Deploy, now: datetime, behind: str) -> DeployQueued:
        position = 1
        if self.queue is not None:
            position = await self.queue.join(step.environment, step.service, deploy_id(thread.id, step.id), now)
        return DeployQueued(step_id=step.id, position=position, behind=behind)

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
        holder = await self.locks.acquire(Lock(env, owner, reason, now, service), self.lock_ttl_ms)
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


def _placed(thread: Thread) -> Iterator[Deploy]:
    """Every deploy step of `thread` that may have taken a place in a line: one queued or
    approved (its place may have been taken before a crash or a lost race kept
    deploy_queued from being recorded)."""
    for step in (e for e in thread.events if isinstance(e, DEPLOY_STEPS)):
        if thread.queued(step.id) is not None or thread.approval_for(step.id) is not None:
            yield step
