"""What two reviews of the lifecycle work found, each pinned: a fork never replays someone's
powers, a line never stalls on a place nobody recorded, "deploy anyway" does not override a
stop-the-line set after it, a deploy's own lock is lifted only on purpose, a rollback never
replaces a deploy that finished while it waited, and a question is never a command."""

from __future__ import annotations

import pytest

from bot.core.commands import deploy_anyway, parse
from bot.core.events import DeployService, LockEnvironment, StopDeploys
from bot.core.people import Written
from bot.core.policy import Policy, PolicyError, Timing
from bot.core.thread import Origin, Thread
from bot.runtime.ports import Lock
from tests.unit.conftest import Parts
from tests.unit.test_lifecycle import DEPLOY, PEOPLE, Bench, bench, policy


async def test_a_fork_never_replays_a_power_its_maker_does_not_have():
    b = bench()
    original = await b.say("stop all deploys: incident 4711", user="bob")
    assert [f.reason for f in await b.freezes.current()] == ["incident 4711"]
    resumed = await b.say("resume deploys", user="bob")
    assert await b.freezes.current() == []
    await b.say("stop all deploys: incident 4712", user="bob")
    # Anyone forks bob's "resume deploys" thread at its first event: the copied request is
    # nobody's, so the stop stays.
    fork = await b.service.fork(resumed.id, 1)
    assert fork.origin.forked_at == 1
    ran = await b.run(fork.id)
    assert [f.reason for f in await b.freezes.current()] == ["incident 4712"]
    assert "Not stopped" in ran.events[-2].text or "Not stopped" in ran.events[-1].message
    assert original.id != fork.id


def test_an_instruction_given_in_the_fork_itself_keeps_its_powers():
    said = LockEnvironment(environment="production", reason="x")
    thread = Thread("t", (said,), Origin(forked_at=1))
    assert thread.authority(None).via == ""


async def test_a_place_in_line_nobody_recorded_never_stalls_the_line():
    b = bench()
    first, second = await b.say(DEPLOY), await b.say(DEPLOY)  # both asked before the lock
    await b.parts.environments.acquire(Lock("production", "manual:carol", "migration", b.now), None)
    request = first.pending_approval()
    await b.service.respond(first.id, "", PEOPLE.by_name("bob"), approval_id=request.approval_id, approve=True)
    # Its run took a place, then lost the race to record it, and the thread was cancelled.
    step = next(e for e in first.events if isinstance(e, DeployService))
    await b.queue.join("production", "backend", f"{first.id}-{step.id}", b.now)
    await b.service.cancel(first.id, PEOPLE.by_name("alice"))
    await b.run(first.id)  # the cancel's run lets go of the place it never recorded
    assert await b.queue.first("production", "backend") is None
    second = await b.decide(second, "bob")
    assert second.status() == "waiting_for_lock"
    await b.parts.environments.release("production", "manual:carol")
    b.later(seconds=16)
    await b.fire()
    assert b.deployed() == [second.id]


async def test_deploy_anyway_does_not_override_a_stop_the_line_set_after_it():
    b = Bench(Parts(policy=policy(approvers=("bob",))))
    await b.say("stop deploys to production: weekend", user="bob")
    blocked = await b.say(DEPLOY)
    assert blocked.events[-2].kind == "frozen"
    forced = await b.reply(blocked, "deploy anyway: hotfix for the login outage", "bob")
    assert forced.status() == "waiting_for_approval"
    b.later(minutes=1)
    await b.say("stop all deploys: incident 4711 - db corruption", user="bob")  # after the force
    done = await b.decide(forced, "bob")
    assert b.deployed() == [] and done.events[-2].kind == "frozen" and "4711" in done.events[-2].message


async def test_a_deploys_own_lock_is_lifted_only_with_a_reason():
    b = bench()
    await b.parts.environments.acquire(Lock("production", "t9-s9", "deploying backend v9", b.now, "backend"), 60_000)
    refused = await b.say("unlock backend in production", user="bob")
    assert "give a reason" in refused.events[-2].text
    assert (await b.parts.environments.holder("production", "backend")).owner == "t9-s9"
    taken = await b.say("unlock backend in production --force: its process died", user="bob")
    assert taken.events[-2].ok and await b.parts.environments.holder("production", "backend") is None


def test_questions_are_never_commands_that_change_anything():
    for text in ("stop all deploys, or only production?", "lock production for a minute?",
                 "unlock production?", "roll back backend in production?"):
        assert parse(text) is None, text
    assert deploy_anyway("deploy anyway, or should we wait for CI?") is None
    assert parse("what's on production?") is not None  # asked as a question, and only reads
    assert parse("stop all deploys until 2026-02-30: x") is None  # not a date: no open-ended stop
    stop = parse("stop all deploys until 2026-11-26 8:00: migration")
    assert isinstance(stop, StopDeploys) and stop.until is not None and stop.until.hour == 8


def test_several_approvals_need_approvers_who_are_people():
    """Two approvals must be two people: a Slack id and an address could be one person (and
    `*` anyone twice), so such approvers with required_approvals > 1 are refused at start."""
    with pytest.raises(PolicyError, match="production needs 2 approvals from different people"):
        Policy.configured(approvers="production:UALICE2,UBOB", approver_emails="production:alice2@example.com",
                          timing={"production": Timing(required=2)})
    written = {"production": Written(approvers=("bob", "carol"))}
    people = Policy.configured(directory=PEOPLE, written=written, timing={"production": Timing(required=2)})
    assert people.timing_for("production").required == 2
