"""The deploy path, top to bottom, in one place.

    ask_approval   a protected deploy: check it, then ask (the approval binds the commit)
    run            preflight -> lock -> record deploy_started -> execute -> record result
    resume         after a crash between deploy_started and its result

`deploy_started` is recorded (compare-and-set, fenced by the run's lease) before the
deployer is called, so exactly one run ever starts a given deploy, and a crash after it
is never mistaken for "not deployed yet". The environment lock is held, and renewed,
from before `deploy_started` until the result is recorded.

The parts, by concern: deploy_checks (asking, and the facts checked), deploy_queue (the lock
and the lines), deploy_run (the deploy and its result), deploy_parts (what they share),
renewal (keeping a lock); `Deploying` puts them together here.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from bot.core import deploy_rules, verification, wording
from bot.core.control import Interrupted, RunDeploy
from bot.core.deploys import deploy_id, started_here
from bot.core.events import Deploy, DeployQueued, DeployStarted, Error, Event, RequestMoreInformation
from bot.core.thread import Thread
from bot.runtime.deploy_checks import Checks
from bot.runtime.deploy_parts import LOCK_TTL_MS, Journal, _refused
from bot.runtime.deploy_run import Running
from bot.runtime.ports import DeployRunner
from bot.runtime.renewal import Renewal, keep_renewing

# Read from here by the loop, the verifier and the edges.
__all__ = ["LOCK_TTL_MS", "Deploying", "Journal", "Renewal", "keep_renewing"]


@dataclass
class Deploying(Checks, Running):
    """The deploy path (the module's docstring): its parts' fields (deploy_parts.Parts)."""

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
            if blocked is None:
                return await self._locked(thread, action, checked, journal)
        else:
            blocked = None
        if isinstance(blocked, DeployQueued):
            said = thread.queued(step.id)
            if said and (said.position, said.behind) == (blocked.position, blocked.behind):
                return thread  # still waiting, nothing new to say
        return await journal.decide(thread, [blocked or checked])

    async def _locked(self, thread: Thread, action: RunDeploy, started: DeployStarted, journal: Journal) -> Thread:
        """The lock is ours: renewed from now until the result is recorded, so a channel slow
        to hear of deploy_started (Slack's rate limit, a mail server) never outlasts it."""
        step = action.step
        renewing = self.keep_lock(step, started.deploy_id)
        try:
            await journal.lease_for(self.deploy_lease_ms)  # before deploy_started: see DEPLOY_LEASE_MS
            refused = await self._overtaken(step)
            # Only the run whose deploy_started wins the compare-and-set may deploy.
            thread = await journal.decide(thread, [refused or started])
        except BaseException:  # a lost race (decided again) or a stopped run: nothing started
            await self._let_go(step, started, journal, renewing)
            raise
        if refused is not None:
            await self._let_go(step, started, journal, renewing)
            return thread
        await self._started(step, started.deploy_id)
        return await self._execute(thread, action, started, journal, renewing)

    async def _let_go(self, step: Deploy, started: DeployStarted, journal: Journal, renewing: Renewal) -> None:
        """No deploy after all: the lock goes, and the run's lease is a run's again."""
        renewing.cancel()
        await self.locks.release(step.environment, started.deploy_id, step.service)
        await journal.lease_for(None)

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
        renewing = self.keep_lock(action.step, action.started.deploy_id)
        try:
            await journal.lease_for(self.deploy_lease_ms)
        except BaseException:
            renewing.cancel()
            raise
        return await self._execute(thread, action, action.started, journal, renewing)

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


def _interrupted(action: Interrupted) -> list[Event]:
    step, deploy_id = action.step, action.started.deploy_id
    what = wording.what_to_deploy(step.service, step.tag, step.environment)
    return [
        Error(kind="interrupted", step_id=step.id, message=wording.interrupted_deploy(what, deploy_id)),
        RequestMoreInformation(source="bot", message=wording.interrupted_ask(what, deploy_id)),
    ]
