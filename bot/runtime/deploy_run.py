"""The deploy itself: run by its deployer while its lock is held and renewed, its result
recorded (redacted) and remembered in the history, a rollback's aftermath."""

from __future__ import annotations

import asyncio
import logging

from bot.core import people, verification, wording
from bot.core.audit import audit_trail
from bot.core.control import Interrupted, RunDeploy
from bot.core.deploys import started_here
from bot.core.events import Deploy, DeployResult, DeployStarted, Error, Event
from bot.core.identity import THE_BOT
from bot.core.policy import lock_owner
from bot.core.prompt import redact
from bot.core.thread import NOBODY, Thread
from bot.runtime.deploy_parts import Journal, _field
from bot.runtime.deploy_queue import Queueing
from bot.runtime.ports import DeployerError, DeployOutcome, DeployRecord, DeployRequest, DeployRunner, Lock
from bot.runtime.renewal import Renewal

log = logging.getLogger("bot.runtime.deploying")  # the deploy path logs as one, whichever part


class Running(Queueing):
    """A recorded deploy run, its result recorded and remembered."""

    def keep_lock(self, step: Deploy, deploy_id: str) -> Renewal:
        """The deploy's lock, just taken, renewed every third of its time to live until cancelled."""
        return Renewal(
            lambda: self.locks.renew(step.environment, deploy_id, self.lock_ttl_ms, step.service), self.lock_ttl_ms,
            f"the lock on {step.service} in {step.environment} for {deploy_id}",
        )

    async def _execute(
        self, thread: Thread, action: RunDeploy | Interrupted, started: DeployStarted, journal: Journal,
        renewing: Renewal,
    ) -> Thread:
        """Run a recorded deploy while holding its environment's lock, `renewing` it."""
        step = action.step
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
        await journal.lease_for(None)  # nothing runs now that another worker could mistake
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
