"""A fork never replays a power its maker does not have; an instruction given in the fork itself
keeps its powers."""

from __future__ import annotations

from bot.core.events import LockEnvironment
from bot.core.thread import Origin, Thread
from tests.unit.test_lifecycle import bench


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
