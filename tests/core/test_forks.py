"""A fork never replays a power its maker does not have; an instruction given in the fork itself
keeps its powers."""

from __future__ import annotations

from bot.core.events import CommandResult, LockEnvironment
from bot.core.thread import Origin, Thread
from tests.core.test_lifecycle import PEOPLE, bench


async def test_a_fork_acts_with_its_maker_s_authority_never_with_that_of_who_said_it_then():
    b = bench()
    await b.say("stop all deploys: incident 4711", user="bob")
    resumed = await b.say("resume deploys", user="bob")
    assert await b.freezes.current() == []
    await b.say("stop all deploys: incident 4712", user="bob")
    # alice (no power to stop or resume) forks bob's "resume deploys" thread at its first
    # event: the copied request is hers now, so the stop stays.
    fork = await b.service.fork(resumed.id, 1, PEOPLE.by_name("alice"))
    assert fork.origin.forked_at == 1 and fork.started_by() == "alice"
    ran = await b.run(fork.id)
    assert [f.reason for f in await b.freezes.current()] == ["incident 4712"]
    said = next(e for e in reversed(ran.events) if isinstance(e, CommandResult))
    assert "Not stopped" in said.text and "alice may not stop or resume" in said.text
    # bob forks it: his authority, so it resumes.
    ran = await b.run((await b.service.fork(resumed.id, 1, PEOPLE.by_name("bob"))).id)
    said = next(e for e in reversed(ran.events) if isinstance(e, CommandResult))
    assert await b.freezes.current() == [] and said.ok


async def test_a_fork_made_before_forkers_were_kept_replays_nothing_with_anyone_s_powers():
    b = bench()
    resumed = await b.say("resume deploys", user="bob")
    await b.say("stop all deploys: incident 4712", user="bob")
    old = await b.parts.store.create(Origin(channel="api", forked_from=resumed.id, forked_at=1), resumed.events[:1])
    ran = await b.run(old.id)
    assert [f.reason for f in await b.freezes.current()] == ["incident 4712"]
    assert "Not stopped" in next(e for e in reversed(ran.events) if isinstance(e, CommandResult)).text


def test_an_instruction_given_in_the_fork_itself_keeps_its_powers():
    said = LockEnvironment(environment="production", reason="x")
    thread = Thread("t", (said,), Origin(forked_at=1))
    assert thread.authority(None).via == ""
