"""After a deploy: its verification carried out (the rules are bot/core/verification.py and
control._verification_action). Every round of checks is recorded as events, and the next round
is a timer (Runner._paused), so whichever worker runs the thread next goes on where the bake
is; the deploy's lock stays held, renewed each round, until the verification ends."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime

from bot.core import verification, wording
from bot.core.control import AnswerVerify, CheckNow, EndVerification, StartVerification
from bot.core.events import (
    CheckObserved,
    Event,
    RollBack,
    VerificationEnded,
    VerificationRefused,
    VerificationStarted,
    identity_of,
    principal_of,
)
from bot.core.policy import Policy
from bot.core.thread import Instruction, Thread
from bot.runtime.deploying import Journal
from bot.runtime.ports import History, Locks, Probe

log = logging.getLogger(__name__)

LOCK_MARGIN_S = 60  # a verifying deploy's lock outlives its last round by two intervals and this


@dataclass
class Verifying:
    probe: Probe
    locks: Locks
    history: History
    policy: Policy
    wake_next: Callable[[str, str], Awaitable[None]]  # Deploying.wake_next: the line may go on
    lock_margin: float = LOCK_MARGIN_S  # seconds; tests shorten it to see a lapse without waiting a minute

    async def start(self, thread: Thread, action: StartVerification, journal: Journal, now: datetime) -> Thread:
        started = verification.started_for(action.result, action.plan, now)
        thread = await journal.decide(thread, [started])
        await self._hold(started)
        return thread

    async def check(self, thread: Thread, action: CheckNow, journal: Journal) -> Thread:
        await self._hold(action.started)
        return await journal.decide(thread, await self._round(action.started))

    async def answer(self, thread: Thread, action: AnswerVerify, journal: Journal) -> Thread:
        """`verify now` ends the bake if every check holds right now; `skip verification`
        ends it without. Either only by whoever may approve deploys there."""
        started, message = action.started, action.message
        position = thread.events.index(message)
        said = Instruction(position, message.text, message.user, principal_of(message), identity_of(message))
        who = thread.authority(said)  # nobody, for a message copied into a fork
        why = self.policy.may_skip_verification(who, started.environment)
        if why is not None:
            refused = VerificationRefused(deploy_id=started.deploy_id, message_id=message.id, text=why)
            return await journal.decide(thread, [refused])
        if action.ask == "skip":
            ended = VerificationEnded(deploy_id=started.deploy_id, outcome="skipped", by=who.label,
                                      reason=action.reason)
            thread = await journal.decide(thread, [ended])
            await self._release(started, wake=True)
            return thread
        observed = await self._round(started)
        bad = verification.round_failing(observed)
        if bad is not None:
            text = wording.verify_now_refused(bad.check, bad.value)
            refused = VerificationRefused(deploy_id=started.deploy_id, message_id=message.id, text=text)
            return await journal.decide(thread, [*observed, refused])
        ended = VerificationEnded(deploy_id=started.deploy_id, outcome="verified", by=who.label, early=True)
        thread = await journal.decide(thread, [*observed, ended])
        return await self._verified(thread, started)

    async def end(self, thread: Thread, action: EndVerification, journal: Journal) -> Thread:
        started, ended = action.started, action.ended
        if ended.outcome != "failed":
            thread = await journal.decide(thread, [ended])
            return await self._verified(thread, started)
        # Faulty first: the rollback planned next must never pick it as its target.
        try:
            await self.history.mark_faulty(started.environment, started.deploy_id)
        except Exception:
            log.exception("thread %s: could not mark %s faulty", thread.id, started.deploy_id)
        events: list[Event] = [ended, RollBack(service=started.service, environment=started.environment, source="bot")]
        thread = await journal.decide(thread, events)
        # An automatic rollback takes the lock next, in this run: the line is not woken for it.
        await self._release(started, wake=started.on_failure != "rollback")
        return thread

    async def abandon(self, started: VerificationStarted) -> None:
        """The thread was cancelled during the bake: no verdict, and its lock goes."""
        await self._release(started, wake=True)

    async def _verified(self, thread: Thread, started: VerificationStarted) -> Thread:
        recorded = verification.ended(thread, started.deploy_id)
        try:
            if recorded is not None and recorded.outcome == "verified":
                await self.history.mark_verified(started.environment, started.deploy_id, recorded.at)
        except Exception:  # the thread has it; the history's mark is for promotion and metrics
            log.exception("thread %s: could not mark %s verified", thread.id, started.deploy_id)
        await self._release(started, wake=True)
        return thread

    async def _round(self, started: VerificationStarted) -> list[CheckObserved]:
        answers = await asyncio.gather(*(self.probe.observe(c) for c in started.checks))
        return [CheckObserved(deploy_id=started.deploy_id, check=c.name, ok=a.ok, value=a.value[:300])
                for c, a in zip(started.checks, answers, strict=True)]

    async def _hold(self, started: VerificationStarted) -> None:
        ttl_ms = int((2 * started.interval + self.lock_margin) * 1000)
        try:
            if not await self.locks.renew(started.environment, started.deploy_id, ttl_ms, started.service):
                log.error("deploy %s: its lock was lost during its verification", started.deploy_id)
        except Exception:
            log.exception("deploy %s: renewing its lock failed", started.deploy_id)

    async def _release(self, started: VerificationStarted, wake: bool) -> None:
        try:
            await self.locks.release(started.environment, started.deploy_id, started.service)
            if wake:
                await self.wake_next(started.environment, started.service)
        except Exception:  # it lapses by itself
            log.exception("deploy %s: releasing its lock failed", started.deploy_id)
