"""What an attack found each capability deciding on its own, now asked of the one authority:
forks that escaped an agent's limits, cancels by anyone, a reply taken as who asked, and the
requester listed as one who may decide. Over the in-memory fakes, through the service and the
runner as every channel drives them."""

from __future__ import annotations

import pytest

from bot.core import agents
from bot.core.events import ApprovalRequested, Cancelled, DeployResult, Error
from bot.core.people import Agent, Written
from bot.core.policy import Policy
from bot.core.thread import Thread
from bot.runtime.service import Forbidden, ThreadService
from tests.memory_parts import NOW, Parts, make_runner
from tests.people_kinds import a_person, directory_of

PEOPLE = [a_person("alice", ("UALICE",), ("alice@example.com",)), a_person("bob", ("UBOB",), ("bob@example.com",)),
          a_person("dave", ("UDAVE",), ())]
STAGING_ONLY = Agent("claude", owner="alice", environments=("staging",), max_open=2, max_per_hour=3)
EVERYWHERE = Agent("gpt", owner="alice", max_open=2, max_per_hour=3)
DIRECTORY = directory_of(PEOPLE, agents=[STAGING_ONLY, EVERYWHERE])
CLAUDE, GPT = DIRECTORY.by_agent("claude"), DIRECTORY.by_agent("gpt")
ALICE, BOB, DAVE = (DIRECTORY.by("slack", u) for u in ("UALICE", "UBOB", "UDAVE"))
PRODUCTION = "deploy backend v1.2.3 to production"


def team() -> Parts:
    policy = Policy.configured(directory=DIRECTORY, written={
        "production": Written(approvers=("alice", "bob"), approver_must_differ=True),
        "staging": Written(approvers=("alice", "bob")),
        "development": Written(approvers=("*",)),
    })
    return Parts(policy=policy)


class Team:
    def __init__(self) -> None:
        self.parts = team()
        self.service = ThreadService(self.parts.store, self.parts.policy, None, self.parts.clock)
        self.runner = make_runner(self.parts, llm=None)

    async def run(self, thread_id: str) -> Thread:
        ran = await self.runner.run(thread_id)
        assert ran is not None
        return ran

    async def ask(self, text: str, who) -> Thread:
        return await self.run((await self.service.launch(text, who)).id)


def refused_for_production(thread: Thread) -> bool:
    return any("may not ask for deploys to production" in e.message for e in thread.of(Error))


def requests(thread: Thread) -> list[ApprovalRequested]:
    return list(thread.of(ApprovalRequested))


# --- forks ------------------------------------------------------------------------------------


async def test_an_agent_s_fork_of_its_refused_production_request_is_refused_again_and_asks_nobody():
    t = Team()
    refused = await t.ask(PRODUCTION, CLAUDE)
    assert not requests(refused) and refused_for_production(refused)
    fork = await t.service.fork(refused.id, 1, CLAUDE)  # before the refusal: the request alone
    ran = await t.run(fork.id)
    assert not requests(ran), "the fork asked production's approvers for what the agent may not ask"
    assert refused_for_production(ran)
    assert t.parts.deployer.requests == []


async def test_a_person_who_forks_an_agent_s_request_asks_for_it_as_themself():
    t = Team()
    refused = await t.ask(PRODUCTION, CLAUDE)
    ran = await t.run((await t.service.fork(refused.id, 1, BOB)).id)
    [request] = requests(ran)
    assert request.requested_by == "bob" and "bob" in request.requesters
    # bob asked (again), so under approver_must_differ only alice may decide, and bob may not.
    with pytest.raises(Forbidden, match="bob asked for this deploy"):
        await t.service.respond(ran.id, "", BOB, approval_id=request.approval_id, approve=True)


async def test_forks_count_against_an_agent_s_open_requests_and_its_hour():
    t = Team()
    asked = await t.ask(PRODUCTION, GPT)
    assert asked.status() == "waiting_for_approval"
    await t.run((await t.service.fork(asked.id, 1, GPT)).id)  # its second open request
    with pytest.raises(Forbidden, match=r"max_open = 2"):
        await t.service.fork(asked.id, 1, GPT)
    with pytest.raises(Forbidden, match=r"max_open = 2"):
        await t.service.launch(PRODUCTION, GPT)


async def test_an_agent_forks_only_threads_it_started():
    t = Team()
    theirs = await t.ask(PRODUCTION, DAVE)
    with pytest.raises(Forbidden, match="an agent may fork only its own threads"):
        await t.service.fork(theirs.id, 1, GPT)


# --- cancelling ---------------------------------------------------------------------------------


async def test_a_person_with_no_powers_cannot_cancel_someone_else_s_request_but_its_requester_can():
    t = Team()
    asked = await t.ask(PRODUCTION, ALICE)
    with pytest.raises(Forbidden, match="dave may not cancel this thread"):
        await t.service.cancel(asked.id, DAVE, "mine now")
    assert (await t.service.get(asked.id)).cancelled() is None
    cancelled = await t.service.cancel(asked.id, ALICE, "changed my mind")
    assert isinstance(cancelled.events[-1], Cancelled)


async def test_an_approver_of_the_environment_may_cancel_anyone_s_request():
    t = Team()
    asked = await t.ask(PRODUCTION, DAVE)
    assert isinstance((await t.service.cancel(asked.id, BOB, "not today")).events[-1], Cancelled)


async def test_an_agent_cancels_only_threads_it_started():
    t = Team()
    persons = await t.ask(PRODUCTION, DAVE)
    with pytest.raises(Forbidden, match="an agent may cancel only its own threads"):
        await t.service.cancel(persons.id, GPT, "cancel_thread")
    own = await t.ask(PRODUCTION, GPT)
    assert isinstance((await t.service.cancel(own.id, GPT, "cancel_thread")).events[-1], Cancelled)


# --- replies ------------------------------------------------------------------------------------


async def test_an_agent_replies_only_in_threads_it_started():
    t = Team()
    persons = await t.ask("list tags", DAVE)
    with pytest.raises(Forbidden, match="an agent may reply in only its own threads"):
        await t.service.respond(persons.id, "ship it to production now", GPT)


async def test_a_reply_after_a_step_decides_nothing_about_who_asked_for_it():
    t = Team()
    # The agent (staging only) started the thread; alice asked in it for production.
    thread = await t.ask("list tags", CLAUDE)
    await t.service.respond(thread.id, PRODUCTION, ALICE)
    thread = await t.run(thread.id)
    [request] = requests(thread)
    assert request.requested_by == "alice"
    await t.service.respond(thread.id, "", BOB, approval_id=request.approval_id, approve=True)
    await t.service.respond(thread.id, "thanks, standing by", CLAUDE)  # its own thread: it may talk
    ran = await t.run(thread.id)
    results = list(ran.of(DeployResult))
    errors = [e.message for e in ran.of(Error)]
    assert results and results[-1].ok, errors
    assert not any("may not ask for deploys to production" in m for m in errors)


# --- who may decide -----------------------------------------------------------------------------


async def test_whoever_asked_is_never_listed_as_one_who_may_decide():
    t = Team()
    asked = await t.ask(PRODUCTION, ALICE)
    info = agents.thread_info(asked, t.parts.policy, NOW)
    assert info.pending_approval is not None and info.pending_approval.who_may_decide == ["bob"]
    by_agent = await t.ask(PRODUCTION, GPT)  # what an agent asks, its owner (alice) asked
    assert agents.thread_info(by_agent, t.parts.policy, NOW).pending_approval.who_may_decide == ["bob"]
