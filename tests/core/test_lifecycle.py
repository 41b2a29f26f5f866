"""Approvals that behave over time (issue 14), over the in-memory fakes: reminders,
escalation and expiry fired by timers, N-of-M approvals, approved deploys waiting in line
for a lock or a freeze, freezes in their time zone, "deploy anyway" and stop-the-line.

Runners come from make_runner, with MemoryTimers, MemoryDeployQueue and MemoryFreezes; a
"worker" here is `Bench.fire` (what is due, run) and `Bench.woken` (the threads handed over
when a line moves). Time moves only by `parts.clock.advance`."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

import pytest

from bot.core import wording
from bot.core.control import EXPIRY_GRACE, QUEUE_RETRY, Expire, Remind, ever_due, next_action, next_due
from bot.core.events import (
    ApprovalEscalated,
    ApprovalExpired,
    ApprovalReminded,
    ApprovalRequested,
    CommandResult,
    DeployQueued,
    DeployResult,
    DeployService,
    DoneForNow,
    Error,
    HumanResponse,
    ListGitTags,
    UserMessage,
)
from bot.core.freeze_windows import weekly
from bot.core.people import Written
from bot.core.policy import Policy, Timing
from bot.core.thread import Thread
from bot.runtime.service import Forbidden, ThreadService, WrongState
from bot.testing.memory import MemoryDeployQueue, MemoryFreezes, MemoryTimers
from tests.memory_parts import NOW, Parts, make_runner
from tests.people_kinds import a_person, directory_of

PEOPLE = directory_of([
    a_person("alice", ("UALICE",), ("alice@example.com",)),  # asks; approves nothing in production
    a_person("bob", ("UBOB",), ("bob@example.com",)),
    a_person("carol", (), ("carol@example.com",)),
    a_person("dave", ("UDAVE",), ()),  # approves production where a test says so
    a_person("erin", (), ("erin@example.com",)),  # on call: production's approvals escalate to her
])
HOUR = timedelta(hours=1)
REMIND = timedelta(minutes=15)
ESCALATE = timedelta(minutes=20)
DEPLOY = "deploy backend v1.2.3 to production"
LEASE_MS = 30_000


def policy(
    approvers: tuple[str, ...] = ("bob", "carol"), required: int = 1, must_differ: bool = False,
    escalate: bool = False, **changes: object,
) -> Policy:
    written = {
        "production": Written(approvers=approvers, approver_must_differ=must_differ),
        "staging": Written(approvers=("*",)),
        "development": Written(approvers=("*",)),
    }
    timing = Timing(
        remind_after=REMIND, required=required,
        escalate_after=ESCALATE if escalate else None, escalate_to=frozenset({"erin"}) if escalate else frozenset(),
    )
    return Policy.configured(
        directory=PEOPLE, written=written, approval_ttl=HOUR, timing={"production": timing},
        default_timing=Timing(remind_after=REMIND), **changes,  # type: ignore[arg-type]
    )


@dataclass
class Bench:
    """A runner with timers, a deploy queue and freezes, and the service people answer by."""

    parts: Parts
    timers: MemoryTimers = field(default_factory=MemoryTimers)
    queue: MemoryDeployQueue = field(default_factory=MemoryDeployQueue)
    woken: list[str] = field(default_factory=list)
    freezes: MemoryFreezes = field(init=False)

    def __post_init__(self) -> None:
        self.freezes = MemoryFreezes(self.parts.clock)
        self.service = ThreadService(self.parts.store, self.parts.policy, None, self.parts.clock)

        async def wake(thread_id: str) -> None:
            self.woken.append(thread_id)

        self.runner = make_runner(
            self.parts, llm=None, timers=self.timers, queue=self.queue, freezes=self.freezes, wake=wake,
        )

    @property
    def now(self) -> datetime:
        return self.parts.clock()

    def later(self, **delta: float) -> None:
        self.parts.clock.advance(**delta)

    async def say(self, text: str, user: str = "alice") -> Thread:
        """A new thread, run until it pauses."""
        thread = await self.service.launch(text, PEOPLE.by_name(user))
        return await self.run(thread.id)

    async def reply(self, thread: Thread, text: str, user: str) -> Thread:
        await self.service.respond(thread.id, text, PEOPLE.by_name(user))
        return await self.run(thread.id)

    async def run(self, thread_id: str) -> Thread:
        ran = await self.runner.run(thread_id)
        assert ran is not None
        return ran

    async def decide(self, thread: Thread, user: str, approve: bool = True) -> Thread:
        request = next((await self.service.get(thread.id)).of(ApprovalRequested))
        await self.service.respond(thread.id, "", PEOPLE.by_name(user), approval_id=request.approval_id,
                                   approve=approve)
        return await self.run(thread.id)

    async def fire(self) -> list[str]:
        """What a worker's timer chore does, run to the end: each thread due now, run."""
        fired = await self.timers.due(self.now, LEASE_MS, 100)
        for thread_id in fired:
            await self.run(thread_id)
        return fired

    async def drain(self) -> list[str]:
        """Run the threads handed over (the next in line), and theirs, until none is left."""
        ran = []
        while self.woken:
            thread_id = self.woken.pop(0)
            ran.append(thread_id)
            await self.run(thread_id)
        return ran

    async def load(self, thread: Thread) -> Thread:
        return await self.service.get(thread.id)

    def deployed(self) -> list[str]:
        return [r.deploy_id.partition("-")[0] for r in self.parts.deployer.requests]


def bench(**changes: object) -> Bench:
    return Bench(Parts(policy=policy(**changes)))  # type: ignore[arg-type]


def of(thread: Thread, kind: type) -> list:
    return list(thread.of(kind))


def request_of(thread: Thread) -> ApprovalRequested:
    return next(thread.of(ApprovalRequested))


def pending() -> tuple[Thread, ApprovalRequested]:
    """A thread waiting for the approval of a production deploy asked for at NOW."""
    step = DeployService(service="backend", tag="v1.2.3", environment="production", at=NOW)
    request = ApprovalRequested(
        step_id=step.id, thread_id="t1", args_hash="h", service="backend", tag="v1.2.3", commit="c" * 40,
        environment="production", requested_by="alice", expires_at=NOW + HOUR, at=NOW,
    )
    return Thread("t1", (step, request)), request


# --- reminders ------------------------------------------------------------------------------


async def test_a_pending_approval_is_reminded_once_per_interval():
    b = bench()
    thread = await b.say(DEPLOY)
    assert thread.status() == "waiting_for_approval"
    request = request_of(thread)
    assert b.timers.due_at[thread.id] == request.at + REMIND

    b.later(minutes=14, seconds=59)
    assert await b.fire() == []  # nothing is due yet
    b.later(seconds=1)
    assert await b.fire() == [thread.id]
    thread = await b.load(thread)
    assert [(e.approval_id, e.count) for e in of(thread, ApprovalReminded)] == [(request.approval_id, 1)]
    assert b.timers.due_at[thread.id] == request.at + 2 * REMIND

    await b.run(thread.id)  # fired again (a worker died after taking it): nothing more
    assert [e.count for e in of(await b.load(thread), ApprovalReminded)] == [1]

    b.later(minutes=15)
    await b.fire()
    thread = await b.load(thread)
    assert [e.count for e in of(thread, ApprovalReminded)] == [1, 2]
    assert thread.status() == "waiting_for_approval" and b.parts.deployer.requests == []


async def test_missed_intervals_make_one_reminder_numbered_for_the_latest():
    b = bench()
    thread = await b.say(DEPLOY)
    request = request_of(thread)
    b.later(minutes=50)  # every worker was down for three intervals
    await b.fire()
    thread = await b.load(thread)
    assert [e.count for e in of(thread, ApprovalReminded)] == [3]
    # The fourth would fall on the expiry: the next thing due is the expiry itself.
    assert b.timers.due_at[thread.id] == request.expires_at + EXPIRY_GRACE


def test_next_due_is_the_soonest_of_the_next_reminder_the_escalation_and_the_expiry():
    at = NOW
    thread, request = pending()
    plain, escalating = policy(), policy(escalate=True)
    assert next_due(thread, plain, at) == at + REMIND
    assert next_due(thread, escalating, at) == at + REMIND  # reminder at 15 min before escalation at 20
    reminded = thread.extended([ApprovalReminded(approval_id=request.approval_id, count=1, at=at + REMIND)])
    assert next_due(reminded, plain, at + REMIND) == at + 2 * REMIND
    assert next_due(reminded, escalating, at + REMIND) == at + ESCALATE
    escalated = reminded.extended([ApprovalEscalated(approval_id=request.approval_id, to=["erin"])])
    assert next_due(escalated, escalating, at + ESCALATE) == at + 2 * REMIND
    last = thread.extended([ApprovalReminded(approval_id=request.approval_id, count=3)])
    assert next_due(last, plain, at + 3 * REMIND) == at + HOUR + EXPIRY_GRACE
    unreminded = Policy.configured(
        directory=PEOPLE, written={"production": Written(approvers=("bob",))}, approval_ttl=HOUR,
        environments=("production",), default_timing=Timing(remind_after=None),
    )
    assert next_due(thread, unreminded, at) == at + HOUR + EXPIRY_GRACE
    expired = thread.extended([ApprovalExpired(approval_id=request.approval_id, step_id=request.step_id,
                                               expires_at=request.expires_at)])
    assert next_due(expired, plain, at + HOUR) is None


def test_the_reducer_reminds_only_after_a_whole_interval_and_expires_only_after_the_moment():
    thread, request = pending()
    p = policy()
    assert next_action(thread, p, NOW + REMIND - timedelta(microseconds=1)).__class__.__name__ == "Stop"
    assert next_action(thread, p, NOW + REMIND) == Remind(request, 1)
    assert next_action(thread, p, NOW + HOUR - timedelta(microseconds=1)) == Remind(request, 3)
    # At the moment itself: not expired yet, and a fourth reminder would fall on the expiry.
    assert next_action(thread, p, NOW + HOUR).__class__.__name__ == "Stop"
    assert next_action(thread, p, NOW + HOUR + EXPIRY_GRACE) == Expire(request)
    assert next_action(thread, p).__class__.__name__ == "Stop"  # without a clock nothing is due


async def test_a_cancelled_or_rejected_request_is_no_longer_due_anything():
    b = bench()
    cancelled = await b.say(DEPLOY)
    rejected = await b.say(DEPLOY)
    assert set(b.timers.due_at) == {cancelled.id, rejected.id}
    await b.service.cancel(cancelled.id, PEOPLE.by_name("alice"))
    await b.run(cancelled.id)
    await b.decide(rejected, "bob", approve=False)
    assert b.timers.due_at == {}
    b.later(hours=2)
    assert await b.fire() == []
    for thread in (cancelled, rejected):
        thread = await b.load(thread)
        assert of(thread, ApprovalReminded) == [] and of(thread, ApprovalExpired) == []


# --- escalation -----------------------------------------------------------------------------


async def test_nobody_deciding_escalates_once_and_the_escalated_person_may_then_decide():
    b = bench(escalate=True)
    thread = await b.say(DEPLOY)
    request = request_of(thread)
    with pytest.raises(Forbidden):  # erin is no approver of production, yet
        await b.decide(thread, "erin")

    b.later(minutes=20)
    await b.fire()
    thread = await b.load(thread)
    assert [(e.approval_id, e.to) for e in of(thread, ApprovalEscalated)] == [(request.approval_id, ["erin"])]
    await b.run(thread.id)
    b.later(minutes=10)
    await b.fire()
    thread = await b.load(thread)
    assert len(of(thread, ApprovalEscalated)) == 1  # once, whatever fires later
    assert thread.status() == "waiting_for_approval"

    thread = await b.decide(thread, "erin")
    assert b.deployed() == [thread.id]
    [result] = of(thread, DeployResult)
    assert result.ok and result.approved_by == "erin"


async def test_feedback_from_the_escalated_person_rejects_as_an_approvers_would():
    b = bench(escalate=True)
    thread = await b.say(DEPLOY)
    b.later(minutes=20)
    await b.fire()
    thread = await b.reply(thread, "not during the incident, please", "erin")
    request = request_of(thread)
    decision = thread.decision_for(request.approval_id)
    assert decision is not None and decision.approve is False and decision.person == "erin"
    assert thread.status() != "waiting_for_approval" and b.parts.deployer.requests == []


async def test_an_escalated_person_may_reject_and_the_approvers_still_may_approve():
    b = bench(escalate=True)
    first = await b.say(DEPLOY)
    second = await b.say(DEPLOY)
    b.later(minutes=21)
    await b.fire()
    first = await b.decide(first, "erin", approve=False)
    assert b.parts.deployer.requests == [] and first.status() != "waiting_for_approval"
    second = await b.decide(second, "bob")
    assert b.deployed() == [second.id]


# --- expiry ---------------------------------------------------------------------------------


async def test_an_approval_nobody_decided_expires_once_and_nothing_deploys():
    b = bench()
    thread = await b.say(DEPLOY)
    request = request_of(thread)
    b.later(hours=1)
    await b.fire()  # the third reminder is due at the expiry itself: none, and no expiry yet
    thread = await b.load(thread)
    assert of(thread, ApprovalExpired) == [] and thread.status() == "waiting_for_approval"

    b.later(seconds=1)
    assert thread.id in await b.fire()
    thread = await b.load(thread)
    [expired] = of(thread, ApprovalExpired)
    assert (expired.approval_id, expired.step_id, expired.expires_at) == (
        request.approval_id, request.step_id, request.expires_at)
    assert b.parts.deployer.requests == []
    # The requester is told, in the thread, that it expired and nothing was deployed.
    assert thread.events[-1].type == "done_for_now"
    assert "expired" in thread.events[-1].message and "nothing was deployed" in thread.events[-1].message
    assert thread.status() == "done" and thread.status(b.now) == "done"
    assert thread.pending_approval() is None and b.timers.due_at.get(thread.id) is None

    for _ in range(3):  # fired again and again (workers that died after taking it)
        await b.run(thread.id)
    b.later(hours=5)
    await b.fire()
    thread = await b.load(thread)
    assert len(of(thread, ApprovalExpired)) == 1
    assert thread.status() != "waiting_for_approval" and b.parts.deployer.requests == []


async def test_two_workers_running_an_expired_thread_at_once_record_one_expiry():
    b = bench()
    thread = await b.say(DEPLOY)
    other = make_runner(b.parts, name="other-worker", llm=None, timers=b.timers, queue=b.queue,
                        freezes=b.freezes)
    b.later(hours=2)
    fired = await b.timers.due(b.now, LEASE_MS, 100)
    assert fired == [thread.id] and await b.timers.due(b.now, LEASE_MS, 100) == []  # taken once
    await asyncio.gather(b.runner.run(thread.id), other.run(thread.id), b.runner.run(thread.id))
    await other.run(thread.id)
    thread = await b.load(thread)
    assert len(of(thread, ApprovalExpired)) == 1 and thread.status() == "done"
    assert len([e for e in thread.events if e.type == "done_for_now"]) == 1


async def test_a_late_approval_is_refused_with_the_expiry_and_never_deploys():
    b = bench()
    thread = await b.say(DEPLOY)
    request = request_of(thread)
    b.later(hours=1, seconds=1)
    # Past the expiry, before any timer fired: refused, nothing recorded.
    with pytest.raises(WrongState) as early:
        await b.decide(thread, "bob")
    assert early.value.message == wording.approval_expired_ask_again(request.approval_id, request.expires_at)
    await b.fire()
    versions = (await b.load(thread)).version
    with pytest.raises(WrongState) as late:
        await b.decide(thread, "bob")
    assert late.value.message == wording.expired_not_deployed(request.expires_at)
    assert (await b.load(thread)).version == versions
    with pytest.raises(WrongState):  # a rejection is refused as well: it is closed
        await b.decide(thread, "carol", approve=False)
    assert b.parts.deployer.requests == []


async def test_an_approval_given_in_time_but_run_after_the_expiry_is_refused_by_the_recheck():
    """Approved one second before the expiry and no worker got to it before: decided, so
    it never expires; the deploy's own re-check refuses to start past the expiry."""
    b = bench()
    thread = await b.say(DEPLOY)
    b.later(minutes=59, seconds=59)
    request = request_of(thread)
    await b.service.respond(thread.id, "", PEOPLE.by_name("bob"), approval_id=request.approval_id, approve=True)
    b.later(seconds=5)
    thread = await b.run(thread.id)
    assert of(thread, ApprovalExpired) == []
    [error] = [e for e in of(thread, Error) if e.kind == "recheck"]
    assert wording.approval_expired(request.expires_at) in error.message
    assert b.parts.deployer.requests == []


# --- N of M ---------------------------------------------------------------------------------


async def test_two_approvals_from_two_people_deploy_and_one_does_not():
    b = bench(required=2)
    thread = await b.say(DEPLOY)
    assert request_of(thread).required == 2
    thread = await b.decide(thread, "bob")
    assert thread.status() == "waiting_for_approval" and b.parts.deployer.requests == []
    assert [e.user for e in thread.approvals_for(request_of(thread).approval_id)] == ["bob"]
    b.later(minutes=15)
    await b.fire()  # still reminded: it needs one more
    assert [e.count for e in of(await b.load(thread), ApprovalReminded)] == [1]
    thread = await b.decide(thread, "carol")
    assert b.deployed() == [thread.id]
    [result] = of(thread, DeployResult)
    assert result.ok and thread.status() == "done"


async def test_one_approval_of_two_needed_still_expires_and_nothing_deploys():
    b = bench(required=2)
    thread = await b.say(DEPLOY)
    thread = await b.decide(thread, "bob")
    b.later(hours=1, seconds=1)
    await b.fire()
    thread = await b.load(thread)
    assert len(of(thread, ApprovalExpired)) == 1 and b.parts.deployer.requests == []
    with pytest.raises(WrongState):
        await b.decide(thread, "carol")


async def test_the_same_person_twice_is_one_approval_by_any_channel():
    b = bench(required=2)
    thread = await b.say(DEPLOY)
    request = request_of(thread)
    thread = await b.decide(thread, "bob")
    with pytest.raises(WrongState) as again:
        await b.decide(thread, "bob")
    assert again.value.message == wording.already_approved_by_you(1, 2)
    # bob by Slack, then bob by email: one person. A thread that holds both anyway (recorded
    # before the service refused it) still waits for someone else.
    twice = thread.extended([HumanResponse(text="", user="bob@example.com", person="bob", via="email",
                                           approval_id=request.approval_id, approve=True)])
    assert twice.decision_for(request.approval_id) is None
    assert len(twice.approvals_for(request.approval_id)) == 1
    assert b.parts.deployer.requests == []
    assert (await b.load(thread)).status() == "waiting_for_approval"


async def test_the_requesters_own_approval_never_counts_where_approvers_must_differ():
    b = bench(approvers=("bob", "carol", "dave"), required=2, must_differ=True)
    thread = await b.say(DEPLOY, user="bob")
    with pytest.raises(Forbidden) as own:
        await b.decide(thread, "bob")
    assert own.value.message == wording.requester_cannot_approve("bob")
    thread = await b.decide(thread, "carol")
    assert b.parts.deployer.requests == []
    thread = await b.decide(thread, "dave")
    assert b.deployed() == [thread.id]


async def test_a_rejection_after_one_approval_rejects():
    b = bench(required=2)
    thread = await b.say(DEPLOY)
    request = request_of(thread)
    thread = await b.decide(thread, "bob")
    thread = await b.decide(thread, "carol", approve=False)
    decision = thread.decision_for(request.approval_id)
    assert decision is not None and decision.approve is False and decision.user == "carol"
    assert b.parts.deployer.requests == [] and thread.status() != "waiting_for_approval"
    with pytest.raises(WrongState):  # decided: a third person's approval comes too late
        await b.decide(thread, "dave")
    b.later(hours=2)
    await b.fire()
    assert of(await b.load(thread), ApprovalExpired) == []  # a decided request never expires


# --- waiting in line for a lock -------------------------------------------------------------


async def three_in_line(b: Bench, apart: timedelta = timedelta(0)) -> tuple[Thread, list[Thread]]:
    """Three deploys asked for (`apart` from each other), production locked by hand, then
    each approved in turn: they wait in line, in the order they were approved."""
    asked = []
    for tag in ("v1.2.1", "v1.2.2", "v1.2.3"):
        asked.append(await b.say(f"deploy backend {tag} to production"))
        b.later(seconds=apart.total_seconds())
    lock = await b.say("lock production: database maintenance", user="carol")
    assert lock.events[-2].type == "command_result" and lock.events[-2].ok
    waiting = []
    for thread in asked:
        b.later(seconds=1)
        waiting.append(await b.decide(thread, "bob"))
    assert [t.status() for t in waiting] == ["waiting_for_lock"] * 3
    assert [t.queued(t.last_step()[1].id).position for t in waiting] == [1, 2, 3]
    assert b.parts.deployer.requests == []
    return lock, waiting


async def test_three_approved_deploys_behind_a_lock_start_one_after_another_in_order():
    b = bench()
    lock, waiting = await three_in_line(b)
    assert "carol" in waiting[0].queued(waiting[0].last_step()[1].id).behind
    for _ in waiting:  # the line's safety net fires: nobody jumps it, nothing starts
        b.later(seconds=16)
        await b.fire()
    assert b.parts.deployer.requests == []
    unlocked = await b.reply(lock, "unlock production", "carol")
    assert unlocked.events[-2].type == "command_result" and unlocked.events[-2].ok
    assert b.woken == [waiting[0].id]  # the first in line is handed to a worker
    for thread in reversed(waiting[1:]):  # the others' timers fire first: they keep waiting
        assert (await b.run(thread.id)).status() == "waiting_for_lock"
    assert b.parts.deployer.requests == []
    await b.drain()
    assert b.deployed() == [t.id for t in waiting]
    assert [r.tag for r in b.parts.deployer.requests] == ["v1.2.1", "v1.2.2", "v1.2.3"]
    for thread in waiting:
        thread = await b.load(thread)
        assert thread.status() == "done" and [r.ok for r in of(thread, DeployResult)] == [True]
    assert b.queue.lines.get(("production", "backend"), {}) == {}


async def test_the_first_in_line_keeps_its_place_when_its_start_loses_a_race():
    """Someone writes in the thread just as its turn comes (the deploy_started append meets
    a newer thread and is decided again): it is still first, and starts."""
    b = bench()
    lock, waiting = await three_in_line(b)
    acquire = b.parts.environments.acquire
    raced: list[str] = []

    async def acquire_while_someone_writes(lock_, ttl_ms):
        held = await acquire(lock_, ttl_ms)
        if held is None and lock_.owner.startswith(waiting[0].id) and not raced:
            raced.append(lock_.owner)
            await b.service.respond(waiting[0].id, "is it going out now?", PEOPLE.by_name("alice"))
        return held

    b.parts.environments.acquire = acquire_while_someone_writes  # type: ignore[method-assign]
    await b.reply(lock, "unlock production", "carol")
    await b.drain()
    assert raced and b.deployed() == [t.id for t in waiting]


async def test_a_cancelled_deploy_leaves_the_line_and_the_next_goes():
    b = bench()
    lock, [first, second, third] = await three_in_line(b)
    await b.service.cancel(first.id, PEOPLE.by_name("alice"))
    await b.run(first.id)
    await b.drain()  # the second is now first, still behind the lock
    assert b.parts.deployer.requests == []
    assert (await b.load(second)).status() == "waiting_for_lock"
    await b.reply(lock, "unlock production", "carol")
    await b.drain()
    assert b.deployed() == [second.id, third.id]
    assert (await b.load(first)).status() == "cancelled"


async def test_an_approval_that_expires_in_line_leaves_it_and_the_next_goes():
    b = bench()
    lock, [first, second, third] = await three_in_line(b, apart=timedelta(minutes=10))
    first_request = request_of(first)
    # Waiting in line, its timer looks again every QUEUE_RETRY, and at its expiry.
    assert b.timers.due_at[first.id] == b.now + QUEUE_RETRY - timedelta(seconds=2)  # approved 2 s ago
    await b.service.cancel(third.id, PEOPLE.by_name("alice"))
    await b.run(third.id)
    b.later(minutes=31)  # past the first one's expiry (asked 10 minutes before the second)
    assert b.now > first_request.expires_at and b.now < request_of(second).expires_at
    for _ in range(2):
        await b.fire()
        await b.drain()
    first = await b.load(first)
    assert first.status() != "waiting_for_lock" and b.parts.deployer.requests == []
    assert ("production", "backend") in b.queue.lines
    assert list(b.queue.lines[("production", "backend")]) == [f"{second.id}-{second.last_step()[1].id}"]
    await b.reply(lock, "unlock production", "carol")
    await b.drain()
    assert b.deployed() == [second.id]


async def test_an_unprotected_deploy_that_meets_a_lock_fails_instead_of_waiting():
    b = bench()
    await b.say("lock staging: tests running", user="carol")
    thread = await b.say("deploy backend v1.2.3 to staging")
    assert [e.kind for e in of(thread, Error)] == ["locked"]
    assert of(thread, DeployQueued) == [] and b.queue.lines.get(("staging", "backend"), {}) == {}


# --- freezes --------------------------------------------------------------------------------

WEEKEND = weekly("staging", "Fri 18:00", "Mon 06:00", timezone="Europe/Berlin", reason="weekend")


@pytest.mark.parametrize(("at", "frozen"), [
    # The autumn switch is on Sunday 2026-10-25: the freeze starts in summer time (UTC+2)...
    (datetime(2026, 10, 23, 15, 59, tzinfo=UTC), False),
    (datetime(2026, 10, 23, 16, 0, tzinfo=UTC), True),
    (datetime(2026, 10, 25, 1, 30, tzinfo=UTC), True),  # the repeated hour
    # ...and ends in winter time (UTC+1): 06:00 in Berlin is 05:00 UTC, not 04:00.
    (datetime(2026, 10, 26, 4, 30, tzinfo=UTC), True),
    (datetime(2026, 10, 26, 4, 59, tzinfo=UTC), True),
    (datetime(2026, 10, 26, 5, 0, tzinfo=UTC), False),
    # The next week, all in winter time.
    (datetime(2026, 10, 30, 16, 30, tzinfo=UTC), False),
    (datetime(2026, 10, 30, 17, 0, tzinfo=UTC), True),
])
async def test_a_weekly_freeze_in_berlin_blocks_at_the_right_instants_across_the_autumn_switch(at, frozen):
    b = Bench(Parts(policy=policy(freezes=(WEEKEND,))))
    b.parts.clock.now = at
    thread = await b.say("deploy backend v1.2.3 to staging")
    if frozen:
        [error] = of(thread, Error)
        assert error.kind == "frozen" and "weekend" in error.message
        assert b.parts.deployer.requests == []
    else:
        assert of(thread, Error) == [] and b.deployed() == [thread.id]


async def test_a_freeze_stops_a_production_deploy_before_anyone_is_asked():
    b = Bench(Parts(policy=policy(freezes=(weekly("production", "Fri 18:00", "Mon 06:00",
                                                  timezone="Europe/Berlin", reason="weekend"),))))
    b.parts.clock.now = datetime(2026, 10, 24, 12, 0, tzinfo=UTC)
    thread = await b.say(DEPLOY)
    assert of(thread, ApprovalRequested) == [] and [e.kind for e in of(thread, Error)] == ["frozen"]
    assert thread.status() == "done"


async def frozen_production() -> tuple[Bench, Thread]:
    freeze = weekly("production", "Fri 18:00", "Mon 06:00", timezone="Europe/Berlin", reason="weekend")
    b = Bench(Parts(policy=policy(freezes=(freeze,))))
    b.parts.clock.now = datetime(2026, 10, 24, 12, 0, tzinfo=UTC)
    thread = await b.say(DEPLOY)
    assert [e.kind for e in of(thread, Error)] == ["frozen"]
    return b, thread


async def test_deploy_anyway_by_an_approver_deploys_through_a_freeze_and_is_flagged():
    b, thread = await frozen_production()
    thread = await b.reply(thread, "deploy anyway: hotfix for incident 12", "bob")
    request = of(thread, ApprovalRequested)[-1]
    assert (request.force, request.forced_by) == ("hotfix for incident 12", "bob")
    thread = await b.decide(thread, "carol")
    assert b.deployed() == [thread.id]
    [result] = of(thread, DeployResult)
    assert result.ok and (result.force, result.forced_by) == ("hotfix for incident 12", "bob")
    [record] = await b.parts.environments.recent("production", 10)
    assert (record.force, record.forced_by, record.approved_by) == ("hotfix for incident 12", "bob", "carol")


async def test_chat_while_a_forced_deploy_waits_for_approval_does_not_undo_the_force():
    """People talk in the thread while the approval waits; the force was given with the step
    and still holds when the approved deploy starts."""
    b, thread = await frozen_production()
    thread = await b.reply(thread, "deploy anyway: hotfix for incident 12", "bob")
    thread = await b.reply(thread, "thanks bob, standing by", "alice")
    assert thread.status() == "waiting_for_approval"
    thread = await b.decide(thread, "carol")
    assert [e.kind for e in of(thread, Error)] == ["frozen"]  # the first try only
    assert b.deployed() == [thread.id]
    assert of(thread, DeployResult)[0].forced_by == "bob"


async def test_deploy_anyway_by_someone_who_may_not_approve_is_refused():
    b, thread = await frozen_production()
    thread = await b.reply(thread, "deploy anyway: I am in a hurry", "alice")
    assert of(thread, ApprovalRequested) == [] and b.parts.deployer.requests == []
    refused = of(thread, Error)[-1]
    assert refused.kind == "validation" and wording.may_not_force("alice", "production") in refused.message
    # The blocked deploy is still there for an approver to force.
    thread = await b.reply(thread, "deploy anyway: approved by the incident lead", "bob")
    assert of(thread, ApprovalRequested)[-1].forced_by == "bob"


async def test_deploy_anyway_to_an_unprotected_environment_deploys_at_once():
    b = Bench(Parts(policy=policy(freezes=(WEEKEND,))))
    b.parts.clock.now = datetime(2026, 10, 24, 12, 0, tzinfo=UTC)
    thread = await b.say("deploy backend v1.2.3 to staging")
    thread = await b.reply(thread, "deploy anyway: the demo is today", "alice")  # staging: anyone approves
    [result] = of(thread, DeployResult)
    assert result.ok and (result.force, result.forced_by) == ("the demo is today", "alice")


async def test_stop_the_line_blocks_deploys_until_resumed_and_only_those_who_may_lock_do_it():
    b = bench()
    refused = await b.say("stop all deploys: I don't like Fridays", user="alice")  # not a production locker
    assert refused.events[-2].type == "command_result" and not refused.events[-2].ok
    assert await b.freezes.current() == []

    stopped = await b.say("stop all deploys: incident 4711", user="bob")
    assert isinstance(stopped.events[-2], CommandResult) and stopped.events[-2].ok
    blocked = await b.say("deploy backend v1.2.3 to staging")
    [error] = of(blocked, Error)
    assert error.kind == "frozen" and "incident 4711" in error.message and "bob" in error.message
    asked = await b.say(DEPLOY)
    assert of(asked, ApprovalRequested) == []  # nobody is asked while the line is stopped

    not_yours = await b.say("resume deploys", user="alice")
    assert not not_yours.events[-2].ok and len(await b.freezes.current()) == 1
    resumed = await b.say("resume deploys", user="carol")  # anyone who may lock everywhere
    assert resumed.events[-2].ok and await b.freezes.current() == []
    again = await b.say("resume deploys", user="bob")
    assert not again.events[-2].ok  # nothing to resume

    thread = await b.say("deploy backend v1.2.3 to staging")
    assert b.deployed() == [thread.id]


async def test_stop_the_line_for_one_environment_leaves_the_others_alone():
    b = bench()
    stopped = await b.say("stop deploys to staging: flaky database", user="alice")  # staging: anyone locks
    assert stopped.events[-2].ok
    assert [e.kind for e in of(await b.say("deploy backend v1.2.3 to staging"), Error)] == ["frozen"]
    thread = await b.say("deploy backend v1.2.3 to development")
    assert b.deployed() == [thread.id]


async def test_an_approved_deploy_waits_for_a_freeze_that_ends_before_its_approval_expires():
    b = bench()
    thread = await b.say(DEPLOY)  # asked at 12:00, expires at 13:00
    b.later(minutes=5)
    stop = await b.say("stop deploys to production until 2026-11-05T12:30Z: migration", user="bob")
    assert stop.events[-2].ok
    b.later(minutes=5)
    thread = await b.decide(thread, "carol")
    assert thread.status() == "waiting_for_lock" and b.parts.deployer.requests == []
    [queued] = of(thread, DeployQueued)
    assert "migration" in queued.behind
    assert b.timers.due_at[thread.id] == b.now + QUEUE_RETRY
    while b.now < datetime(2026, 11, 5, 12, 30, tzinfo=UTC):
        b.later(seconds=15)
        await b.fire()
    thread = await b.load(thread)
    assert b.deployed() == [thread.id] and thread.status() == "done"
    assert len(of(thread, DeployQueued)) == 1  # looking again said nothing new


async def test_resuming_hands_a_deploy_waiting_for_the_freeze_to_a_worker_at_once():
    b = bench()
    thread = await b.say(DEPLOY)
    await b.say("stop deploys to production until 2026-11-05T12:30Z: migration", user="bob")
    thread = await b.decide(thread, "carol")
    assert thread.status() == "waiting_for_lock"
    await b.say("resume deploys to production", user="bob")
    assert thread.id in b.woken
    await b.drain()
    assert b.deployed() == [thread.id]


async def test_an_approved_deploy_does_not_wait_for_a_freeze_outlasting_its_approval():
    b = bench()
    thread = await b.say(DEPLOY)
    await b.say("stop deploys to production until 2026-11-05T14:00Z: migration", user="bob")
    thread = await b.decide(thread, "carol")
    assert [e.kind for e in of(thread, Error)] == ["frozen"] and of(thread, DeployQueued) == []
    assert thread.status() not in ("waiting_for_lock", "waiting_for_approval")
    assert b.parts.deployer.requests == []


def test_only_a_thread_that_could_be_due_has_its_timer_cleared():
    # A read-only run never had a due time: its run skips clearing one (a round trip per run).
    tags = Thread("t", (UserMessage(text="list tags", user="alice"), ListGitTags(),
                        DoneForNow(message="v1.0.0", at=NOW)))
    assert not ever_due(tags) and next_due(tags, policy(), NOW) is None
    thread, request = pending()
    assert ever_due(thread)
    # decided since: nothing is due any more, but the timer it had must still be cleared
    approved = thread.extended([HumanResponse(approve=True, user="erin", approval_id=request.approval_id)])
    assert ever_due(approved)
