"""run(thread_id): load -> next action -> carry it out -> append -> repeat, until a pause.

Nothing lives in memory between runs: any process can run any thread at any time. Every
decision is appended with compare-and-set, so a run that lost a race re-reads and
decides again instead of overwriting. The loop only sequences: what an action does lives
in agent.py (deciding), steps.py (tags, locks) and deploying.py (deploys).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from bot.core import prompt, verification, wording
from bot.core.control import (
    Action,
    AnswerVerify,
    AskApproval,
    CheckNow,
    Decide,
    EndVerification,
    Escalate,
    EscalateApproval,
    Expire,
    ExpireSenderConfirmation,
    Finish,
    Interrupted,
    PlanPromotion,
    PlanRollback,
    Remind,
    RunCommand,
    RunDeploy,
    RunTags,
    StartVerification,
    Stop,
    ever_due,
    next_action,
    next_due,
)
from bot.core.events import (
    ApprovalEscalated,
    ApprovalExpired,
    ApprovalReminded,
    CommandResult,
    CommandStep,
    DeployService,
    DoneForNow,
    Error,
    Event,
    ListGitTags,
    RequestMoreInformation,
    ResumeDeploys,
    SenderConfirmationExpired,
    UnlockEnvironment,
    VerificationEnded,
    new_id,
    stamped,
)
from bot.core.policy import Policy
from bot.core.prompt import redact
from bot.core.thread import Thread
from bot.runtime import agent, promoting, steps
from bot.runtime.clock import utcnow
from bot.runtime.deploying import Deploying, Renewal
from bot.runtime.ports import Conflict, LeaseLost, NextStepModel, Notifier, ThreadStore, Timers
from bot.runtime.retry import retrying
from bot.runtime.verifying import Verifying

# Decisions a run may hold back and store with what follows them in one append (one Redis
# round trip instead of three for "list tags"): listing tags only reads, and a
# closing message ends the run. Only those an exact command decided (no model): a crash, or
# someone writing meanwhile (the append is refused, and the run decides again from what is
# stored), costs nothing but deciding them again; a model's answer is stored at once. Every
# step that acts on the world (a deploy, a lock, an approval request) is stored first, with
# whatever was held.
HELD_DECISIONS = (ListGitTags, DoneForNow)

log = logging.getLogger(__name__)

LEASE_TTL_MS = 4_000  # a thread whose runner died can be taken over after this
FACT_RETRY_WAITS = (0.1, 0.2, 0.5, 1, *(2,) * 29)  # about a minute (DEPLOY_LEASE), then give up


@dataclass
class Runner:
    store: ThreadStore
    deploying: Deploying
    llm: NextStepModel | None
    notifier: Notifier
    policy: Policy
    secrets: tuple[str, ...] = ()
    context_budget: int = prompt.CONTEXT_BUDGET  # estimated tokens the model is shown
    # Errors of the store's connection (Redis restarting): the run stops and is retried
    # later, instead of the thread being marked failed by a fault that is not its own.
    transient: tuple[type[Exception], ...] = ()
    clock: Callable[[], datetime] = utcnow
    name: str = field(default_factory=lambda: f"runner-{new_id()}")
    timers: Timers | None = None  # when each thread is next due (reminders, expiry, the queue)
    verifying: Verifying | None = None  # deploys verified after they succeed (None: none are)

    async def run(self, thread_id: str) -> Thread | None:
        """Advance the thread until it pauses. None if another runner holds it right now:
        only one runner at a time may advance a thread, so none of them ever mistakes a deploy
        another one is running for an interrupted one."""
        owner = f"{self.name}:{new_id()}"  # per run: two runs in one process exclude each other too
        while True:
            claimed = await self.store.claim(thread_id, owner, LEASE_TTL_MS)
            if claimed is None:
                return None
            thread = claimed
            journal = RunJournal(self, owner, thread_id)
            try:
                thread = await self._run(claimed, journal)
                # While the lease is held: a run that claims the thread after ours sets its
                # own due time later, never overwritten by ours.
                if journal.released is None:
                    await self._paused(thread)
            except LeaseLost:
                log.error("thread %s: lost its lease to another run; this run stops", thread_id)
                return None
            finally:
                journal.lease.cancel()
                latest = journal.released or await self.store.release(thread, owner)
            # Whoever appended while we held the lease could not run the thread: look again.
            if latest.version == thread.version:
                return thread

    async def _tell(self, thread_id: str, event: Event) -> None:
        """Record a fact in another thread (whose lock was taken) and let its channel say so.
        Never fails the run that does it: the lock is lifted either way."""
        try:
            other = await self.store.load(thread_id)
            [recorded] = stamped([event], self.clock())
            other = await self.store.append_fact(other, [recorded])
            await self.notifier.publish(other, [recorded])
        except Exception:
            log.exception("thread %s: could not tell it about %s", thread_id, event.type)

    async def _wake_waiting(self, step: CommandStep) -> None:
        """After an unlock or a resume, the first deploy waiting in each line it freed may go."""
        services = self.policy.catalog.names
        match step:
            case UnlockEnvironment():
                freed = [(step.environment, s) for s in ([step.service] if step.service else services)]
            case ResumeDeploys():
                envs = sorted(self.policy.environments) if step.environment == "*" else [step.environment]
                freed = [(env, s) for env in envs for s in services]
            case _:
                return
        for environment, service in freed:
            await self.deploying.wake_next(environment, service)

    async def _paused(self, thread: Thread) -> None:
        """What a paused thread leaves behind: when it is next due, and no place in a line
        it no longer waits in. (leaves_nothing() says when none of it applies.)"""
        if thread.status() != "waiting_for_lock":
            await self.deploying.leave_queue(thread)
        if self.verifying is not None and (dropped := verification.abandoned(thread)) is not None:
            await self.verifying.abandon(dropped)  # cancelled mid-bake: the lock is not kept for it
        if self.timers is not None and ever_due(thread):
            await self.timers.set(thread.id, next_due(thread, self.policy, self.clock()))

    def leaves_nothing(self, thread: Thread) -> bool:
        """Whether _paused(thread) would do nothing (a read-only run: no line it stood in,
        no bake, never a due time): then its last events and the release can be one write."""
        return (
            not self.deploying.may_stand_in_line(thread)
            and (self.verifying is None or verification.abandoned(thread) is None)
            and not (self.timers is not None and ever_due(thread))
        )

    async def _run(self, thread: Thread, journal: RunJournal) -> Thread:
        # A backstop only: the policy's step limit pauses a run long before this.
        for _ in range(4 * self.policy.max_steps + 20):
            action = next_action(thread, self.policy, self.clock())
            try:
                if isinstance(action, Stop):
                    return await journal.pause(thread)  # a lost race here decides again, as below
                thread = await self._advance(thread, action, journal)
                if isinstance(action, RunDeploy) and thread.status() == "waiting_for_lock":
                    return thread  # in line: woken when its turn may have come
            except Conflict:
                thread = await self.store.refresh(journal.drop_held(thread))
            except LeaseLost:
                raise
            except self.transient:
                raise
            except Exception as e:  # a bug must pause the thread visibly, not kill the process
                log.exception("thread %s: %s failed", thread.id, type(action).__name__)
                error = Error(kind="internal", message=f"internal error: {type(e).__name__}: {e}")
                return await journal.fact(thread, [error])
        return thread

    async def _decide(self, thread: Thread, journal: RunJournal) -> Thread:
        step = await agent.decide(thread, self.llm, self.secrets, self.context_budget, self.policy.catalog)
        if isinstance(step, HELD_DECISIONS) and step.source != "llm":
            return journal.hold(thread, [step])
        return await journal.decide(thread, [step])

    async def _advance(self, thread: Thread, action: Action, journal: RunJournal) -> Thread:
        now = self.clock()
        deploying = self.deploying
        match action:
            case Decide():
                return await self._decide(thread, journal)
            case RunTags():
                return journal.hold(thread, await steps.list_tags(action.step, deploying.deployers))
            case PlanPromotion():
                planned = await promoting.plan(action.step, deploying.history, deploying.deployers, self.policy, now)
                return await journal.decide(thread, [planned])
            case PlanRollback():
                planned = await steps.plan_rollback(action.step, deploying.history, deploying.deployers, self.policy)
                return await journal.decide(thread, [_by_the_bot(thread, action.step.source, planned)])
            case RunCommand():
                result = await steps.run_command(
                    action.step, thread, deploying.locks, deploying.history, self.policy, now, deploying.freezes,
                    tell=self._tell,
                )
                thread = await journal.fact(thread, [result])
                if isinstance(result, CommandResult) and result.ok:
                    await self._wake_waiting(action.step)
                return thread
            case AskApproval():
                return await journal.decide(thread, [await deploying.ask_approval(thread, action.step, now)])
            case Interrupted():
                return await deploying.resume(thread, action, journal, now)
            case RunDeploy():
                return await deploying.run(thread, action, journal, now)
            case StartVerification() | CheckNow() | AnswerVerify() | EndVerification():
                return await self._verify(thread, action, journal, now)
            case _:
                recorded = bot_event(action)
                if recorded is not None:
                    return await journal.decide(thread, [recorded])
        raise TypeError(f"unknown action {action!r}")


    async def _verify(
        self, thread: Thread, action: StartVerification | CheckNow | AnswerVerify | EndVerification,
        journal: RunJournal, now: datetime,
    ) -> Thread:
        verifying = self.verifying
        if verifying is None:  # a plan in the policy, but no probe built: a wiring bug
            raise RuntimeError("deploy verification is configured but this runner cannot verify")
        match action:
            case StartVerification():
                return await verifying.start(thread, action, journal, now)
            case CheckNow():
                return await verifying.check(thread, action, journal)
            case AnswerVerify():
                return await verifying.answer(thread, action, journal)
        return await verifying.end(thread, action, journal)


def _by_the_bot(thread: Thread, source: str, planned: Event) -> Event:
    """A rollback the bot asked for (a failed verification) is the bot's, with why."""
    failed = next((e for e in reversed(thread.events) if isinstance(e, VerificationEnded)), None)
    if source != "bot" or not isinstance(planned, DeployService) or failed is None or failed.outcome != "failed":
        return planned
    return planned.model_copy(update={
        "source": "bot", "reason": wording.automatic_rollback_reason(failed.check, failed.value),
    })


def bot_event(action: Action) -> Event | None:
    """The one event an action that only records what the bot decided records (asking a
    person, a reminder, an escalation, an expiry); None for an action that runs something."""
    match action:
        case Escalate():
            return RequestMoreInformation(source="bot", message=action.message)
        case Finish():
            return DoneForNow(source="bot", message=action.message)
        case Remind():
            return ApprovalReminded(approval_id=action.request.approval_id, count=action.count)
        case EscalateApproval():
            return ApprovalEscalated(approval_id=action.request.approval_id, to=sorted(action.to))
        case ExpireSenderConfirmation():
            asked = action.request
            return SenderConfirmationExpired(confirmation_id=asked.confirmation_id, expires_at=asked.expires_at)
        case Expire():
            request = action.request
            return ApprovalExpired(approval_id=request.approval_id, step_id=request.step_id,
                                   expires_at=request.expires_at)
    return None


@dataclass
class RunJournal:
    """Records for one run: every event is stamped with the runner's clock, error messages
    are redacted (a deployer's or a bug's text can hold a secret, and it is shown in chat, the
    API and the model's context), decisions are fenced by the run's lease (`owner`), and the
    channels hear of each event once stored."""

    runner: Runner
    owner: str
    thread_id: str = ""
    # Events decided but not stored yet (`hold`), and the thread as stored before them: see
    # HELD_DECISIONS. Whatever is recorded next takes them along in the same append.
    held: list[Event] = field(default_factory=list)
    stored: Thread | None = None
    # The thread as let go, when pause() stored the last events and released the lease at once.
    released: Thread | None = None
    lease: Renewal = field(init=False)  # the run's lease, renewed from the claim on

    def __post_init__(self) -> None:
        self.lease = self._renewal(LEASE_TTL_MS)

    def _renewal(self, ttl_ms: int) -> Renewal:
        store, thread_id, owner = self.runner.store, self.thread_id, self.owner
        return Renewal(lambda: store.lease(thread_id, owner, ttl_ms), ttl_ms, f"the lease on thread {thread_id}")

    async def lease_for(self, ttl_ms: int | None) -> None:
        """The lease renewed now, to last `ttl_ms` (None: LEASE_TTL_MS), and so on every third
        of it: a running deploy's is long (deploy_parts.DEPLOY_LEASE_MS), so another worker
        never takes a deploy whose worker only lost Redis for a while for an interrupted one."""
        ttl = ttl_ms or LEASE_TTL_MS
        self.lease.cancel()
        self.lease = self._renewal(ttl)
        try:
            if not await self.runner.store.lease(self.thread_id, self.owner, ttl):
                log.error("thread %s: its lease is no longer this run's", self.thread_id)
        except Exception:  # renewed again within a third of it; what is appended next says if it is gone
            log.exception("thread %s: renewing its lease failed", self.thread_id)

    def hold(self, thread: Thread, events: Sequence[Event]) -> Thread:
        """Decide `events` without storing them yet: the thread as it will be once they are."""
        events = self._recorded(events)
        if self.stored is None:
            self.stored = thread
        self.held += events
        return thread.extended(events)

    def drop_held(self, thread: Thread) -> Thread:
        """Forget what was held (the thread changed under it: it is decided again from what is
        stored): the thread as stored."""
        stored = self.stored or thread
        self.held, self.stored = [], None
        return stored

    async def flush(self, thread: Thread) -> Thread:
        """Store what was held (the run pauses, or records a fact)."""
        return await self.decide(thread, []) if self.held else thread

    async def pause(self, thread: Thread) -> Thread:
        """Store what was held as the run pauses. When pausing leaves nothing else behind
        (Runner.leaves_nothing), the lease is let go in the same write (ThreadStore.finish:
        one round trip) and `released` is the thread as let go; a lost race raises as flush() does,
        the lease still held."""
        if not self.held or not self.runner.leaves_nothing(thread):
            return await self.flush(thread)
        stored, events = self._with_held(thread, [])
        self.released = await self.runner.store.finish(stored, events, self.owner)
        self.held, self.stored = [], None
        thread = stored.extended(events)
        await self._publish(thread, events)
        return thread

    def _with_held(self, thread: Thread, events: list[Event]) -> tuple[Thread, list[Event]]:
        if not self.held or self.stored is None:
            return thread, events
        return self.stored, [*self.held, *events]

    def _recorded(self, events: Sequence[Event]) -> list[Event]:
        clean = [
            e.model_copy(update={"message": redact(e.message, self.runner.secrets)}) if isinstance(e, Error) else e
            for e in events
        ]
        return stamped(clean, self.runner.clock())

    async def decide(self, thread: Thread, events: Sequence[Event]) -> Thread:
        thread, events = self._with_held(thread, self._recorded(events))
        thread = await self.runner.store.append(thread, events, self.owner)
        self.held, self.stored = [], None
        await self._publish(thread, events)
        return thread

    async def fact(self, thread: Thread, events: Sequence[Event]) -> Thread:
        """It must land whatever else did, so it waits out a store that is briefly
        unreachable (appending is idempotent: a resent append recognises itself)."""
        thread = await self.flush(thread)
        events = self._recorded(events)
        async for attempt in retrying(FACT_RETRY_WAITS, self.runner.transient, f"recording {events[0].type}"):
            with attempt:
                thread = await self.runner.store.append_fact(thread, events)
        await self._publish(thread, events)
        return thread

    async def _publish(self, thread: Thread, events: Sequence[Event]) -> None:
        try:
            await self.runner.notifier.publish(thread, events)
        except Exception:  # the events are stored; a channel outage must not stop the run
            log.exception("thread %s: notifying its channel failed", thread.id)
