"""The line of deploys and what stops it: a place in line nobody recorded never stalls the
line, "deploy anyway" does not override a stop-the-line set after it, and a deploy's own lock
is lifted only on purpose."""

from __future__ import annotations

from bot.core.events import DeployService
from bot.runtime.ports import Lock
from tests.core.test_lifecycle import DEPLOY, PEOPLE, Bench, bench, policy
from tests.memory_parts import Parts


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
