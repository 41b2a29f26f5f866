"""After a deploy: its verification carried out (the rules are bot/core/verification.py and
control._verification_action). Every round of checks is recorded as events, and the next round
is a timer (Runner._paused), so whichever worker runs the thread next goes on where the bake
is. The deploy's lock stays held until the verification ends: renewed when the bake starts,
and all through every run of it (a round, its verdict), for long enough to reach the next
round; a round ends by its deadline, however slowly a server answers, so none outlasts it."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import datetime

from bot.core import authority, verification, wording
from bot.core.control import AnswerVerify, CheckNow, EndVerification, StartVerification
from bot.core.events import (
    CheckObserved,
    RollBack,
    VerificationEnded,
    VerificationRefused,
    VerificationStarted,
    VerifyCheck,
    identity_of,
    principal_of,
)
from bot.core.policy import Policy
from bot.core.thread import Instruction, Thread
from bot.runtime.deploying import Journal, Renewal
from bot.runtime.ports import History, Locks, Observation, Probe

log = logging.getLogger(__name__)

LOCK_MARGIN_S = 60  # a verifying deploy's lock outlives its last renewal by two intervals and this


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
        async with self._held(started):  # from the deploy's minute to the bake's, before Slack hears of it
            return await journal.decide(thread, [started])

    async def check(self, thread: Thread, action: CheckNow, journal: Journal) -> Thread:
        async with self._held(action.started):
            return await journal.decide(thread, await self._round(action.started))

    async def answer(self, thread: Thread, action: AnswerVerify, journal: Journal) -> Thread:
        """`verify now` ends the bake if every check holds right now; `skip verification`
        ends it without. Either only by whoever may approve deploys there."""
        started, message = action.started, action.message
        position = thread.events.index(message)
        said = Instruction(position, message.text, message.user, principal_of(message), identity_of(message))
        who = thread.authority(said)  # nobody, for a message copied into a fork
        why = authority.why_not(self.policy, who, authority.SkipVerification(started.environment))
        if why is not None:
            refused = VerificationRefused(deploy_id=started.deploy_id, message_id=message.id, text=why)
            return await journal.decide(thread, [refused])
        if action.ask == "skip":
            ended = VerificationEnded(deploy_id=started.deploy_id, outcome="skipped", by=who.label,
                                      reason=action.reason)
            async with self._held(started):
                thread = await journal.decide(thread, [ended])
            await self._mark_verified(thread, started)
            await self._release(started, wake=True)
            return thread
        return await self._verify_now(thread, started, message.id, who.label, journal)

    async def _verify_now(
        self, thread: Thread, started: VerificationStarted, message_id: str, by: str, journal: Journal
    ) -> Thread:
        async with self._held(started):
            observed = await self._round(started)
            bad = verification.round_failing(observed)
            if bad is not None:
                text = wording.verify_now_refused(bad.check, bad.value)
                refused = VerificationRefused(deploy_id=started.deploy_id, message_id=message_id, text=text)
                return await journal.decide(thread, [*observed, refused])
            ended = VerificationEnded(deploy_id=started.deploy_id, outcome="verified", by=by, early=True)
            thread = await journal.decide(thread, [*observed, ended])
            await self._mark_verified(thread, started)
        await self._release(started, wake=True)
        return thread

    async def end(self, thread: Thread, action: EndVerification, journal: Journal) -> Thread:
        started, ended = action.started, action.ended
        async with self._held(started):
            if ended.outcome == "failed":
                thread = await self._failed(thread, action, journal)
            else:
                thread = await journal.decide(thread, [ended])
                await self._mark_verified(thread, started)
        # An automatic rollback takes the lock next, in this run: the line is not woken for it.
        await self._release(started, wake=ended.outcome != "failed" or started.on_failure != "rollback")
        return thread

    async def abandon(self, started: VerificationStarted) -> None:
        """The thread was cancelled during the bake: no verdict, and its lock goes."""
        await self._release(started, wake=True)

    async def _failed(self, thread: Thread, action: EndVerification, journal: Journal) -> Thread:
        started = action.started
        # Faulty first: the rollback planned next must never pick it as its target.
        try:
            await self.history.mark_faulty(started.environment, started.deploy_id)
        except Exception:
            log.exception("thread %s: could not mark %s faulty", thread.id, started.deploy_id)
        rollback = RollBack(service=started.service, environment=started.environment, source="bot")
        return await journal.decide(thread, [action.ended, rollback])

    async def _mark_verified(self, thread: Thread, started: VerificationStarted) -> None:
        """The verdict on the deploy's history record, which outlives the thread: verified (by
        whom, if early) or skipped (by whom, why)."""
        recorded = verification.ended(thread, started.deploy_id)
        env, deploy_id = started.environment, started.deploy_id
        try:
            if recorded is not None and recorded.outcome == "verified":
                await self.history.mark_verified(env, deploy_id, recorded.at, recorded.by if recorded.early else "")
            elif recorded is not None and recorded.outcome == "skipped":
                await self.history.mark_skipped(env, deploy_id, recorded.at, recorded.by, recorded.reason)
        except Exception:  # the thread has it; the history's mark is for promotion, metrics and the audit
            log.exception("thread %s: could not mark %s %s", thread.id, deploy_id, recorded and recorded.outcome)

    async def _round(self, started: VerificationStarted) -> list[CheckObserved]:
        """Every check asked at once, and all of them answered (or given up on) by the round's
        deadline: a check that has not answered by then is unanswered, like a server that is down."""
        seconds = verification.round_deadline(started)
        deadline = asyncio.get_running_loop().time() + seconds
        answers = await asyncio.gather(*(self._observe(c, deadline, seconds) for c in started.checks))
        return [CheckObserved(deploy_id=started.deploy_id, check=c.name, ok=a.ok, value=a.value[:300])
                for c, a in zip(started.checks, answers, strict=True)]

    async def _observe(self, check: VerifyCheck, deadline: float, seconds: float) -> Observation:
        try:
            async with asyncio.timeout_at(deadline):
                return await self.probe.observe(check)
        except TimeoutError:
            return Observation(None, wording.check_not_in_time(seconds))

    @asynccontextmanager
    async def _held(self, started: VerificationStarted) -> AsyncIterator[None]:
        """The deploy's lock renewed now, and every third of its time to live for as long as
        the block runs: however long a round or a verdict takes, the lock is held throughout,
        and for two intervals and the margin past its latest renewal (to the next round, or for
        a dead worker's successor to take over)."""
        await self._renew(started)
        renewal = Renewal(lambda: self._extend_lock(started), self._ttl_ms(started),
                          f"the lock on {started.service} in {started.environment} for {started.deploy_id}")
        try:
            yield
        finally:
            renewal.cancel()

    def _ttl_ms(self, started: VerificationStarted) -> int:
        return int((2 * started.interval + self.lock_margin) * 1000)

    def _extend_lock(self, started: VerificationStarted) -> Awaitable[bool]:
        return self.locks.renew(started.environment, started.deploy_id, self._ttl_ms(started), started.service)

    async def _renew(self, started: VerificationStarted) -> None:
        try:
            if not await self._extend_lock(started):
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
