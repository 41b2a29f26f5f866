"""Agents (deploybot.toml's [agents]): they may ask, never decide, lock, unlock, stop, resume
or deploy anyway, whatever the rules say of anyone; what they ask counts as their owner's;
their limits hold by every channel. The rules live in bot/core/people.py and bot/core/policy.py, so
the channels only pass the identity on."""

from __future__ import annotations

import asyncio

import pytest

from bot.core import agents, authority
from bot.core.events import ApprovalRequested, ToolCalled, UserMessage
from bot.core.people import AGENT, Agent, Rules, Written
from bot.core.policy import Policy
from bot.core.thread import Thread
from bot.runtime.service import Forbidden, ThreadService
from tests.core.asking import (
    may_approve,
    may_decide,
    may_force,
    may_lock,
    may_lock_under,
    may_request,
    may_stop,
    may_unlock,
)
from tests.memory_parts import NOW, Parts
from tests.people_kinds import a_person, directory_of

ALICE, BOB = a_person("alice", ("UALICE",)), a_person("bob", ("UBOB",))
CLAUDE = Agent("claude-code", owner="alice", environments=("staging", "production"), max_open=2, max_per_hour=3)
DIRECTORY = directory_of([ALICE, BOB], agents=[CLAUDE])
AGENT_ID = DIRECTORY.by_agent("claude-code")
ANYONE_RULES = Rules(protected=True, approvers=frozenset({"*"}), environment="staging")


def policy(**written: Written) -> Policy:
    rules = {"production": Written(approvers=("alice", "bob"), approver_must_differ=True),
             "staging": Written(approvers=("*",)), **written}
    return Policy.configured(directory=DIRECTORY, written=rules)


def test_an_agent_is_nobody_s_person_and_no_list_can_name_it():
    assert AGENT_ID is not None and AGENT_ID.via == AGENT and not AGENT_ID.known
    assert AGENT_ID.principal == "agent:claude-code"
    assert DIRECTORY.by_agent("gpt") is None
    assert DIRECTORY.by_token("agent:claude-code", "t1") == AGENT_ID
    assert DIRECTORY.by_token("agent:gone", "t1") is None and DIRECTORY.by_token("mallory", "t1") is None
    assert DIRECTORY.by_token("alice", "t1").person == "alice"
    assert DIRECTORY.display("agent:claude-code") == "claude-code (agent of alice)"
    with pytest.raises(ValueError, match="is not a person"):
        directory_of([ALICE], agents=[Agent("x", owner="zed")])
    with pytest.raises(ValueError, match="a person's name too"):
        directory_of([ALICE], agents=[Agent("alice")])


@pytest.mark.parametrize("check", [
    lambda p: may_approve(AGENT_ID, ANYONE_RULES),  # even where anyone may
    lambda p: may_lock_under(AGENT_ID, ANYONE_RULES),
    lambda p: may_lock(p, AGENT_ID, "staging"),
    lambda p: may_unlock(p, AGENT_ID, "staging", "manual:agent:claude-code"),  # not even its own lock
    lambda p: may_stop(p, AGENT_ID, "*"),
    lambda p: may_force(p, AGENT_ID, "staging"),
])
def test_an_agent_never_decides_locks_stops_or_forces(check):
    said = check(policy())
    assert said is not None and said.startswith("claude-code is an agent: agents may ask for deploys but cannot")


def test_what_an_agent_asks_its_owner_asked():
    rules = policy()
    request = ApprovalRequested(
        step_id="s", thread_id="t", args_hash="h", service="backend", tag="v1", commit="c",
        environment="production", requested_by="agent:claude-code", requesters=["agent:claude-code"],
        expires_at=NOW,
    )
    assert "alice" in rules.requesters(request)
    assert may_decide(rules, DIRECTORY.by("slack", "UALICE"), request) == \
        "alice asked for this deploy and cannot also approve it"
    assert may_decide(rules, DIRECTORY.by("slack", "UBOB"), request) is None


def test_an_agent_asks_only_for_its_environments():
    rules = policy(development=Written())
    assert may_request(rules, AGENT_ID, "production") is None
    assert may_request(rules, AGENT_ID, "development") == (
        "claude-code may not ask for deploys to development (its environments in deploybot.toml: "
        "production, staging)"
    )
    assert may_request(rules, DIRECTORY.by_name("bob"), "development") is None


def asked(thread_id: str, minutes_ago: int = 0, by: str = "claude-code") -> Thread:
    from datetime import timedelta

    message = UserMessage(text="deploy backend v1 to staging", user=by, via=AGENT,
                          at=NOW - timedelta(minutes=minutes_ago))
    return Thread(thread_id, [message])


def test_the_limits_name_themselves():
    assert authority.over_limit(CLAUDE, [asked("a")], NOW) is None
    assert authority.over_limit(CLAUDE, [asked("a"), asked("b")], NOW) == (
        "claude-code already has 2 open requests, its limit (max_open = 2): wait for one to finish, "
        "or cancel one (cancel_thread)"
    )
    assert authority.over_limit(CLAUDE, [asked("a"), asked("b", by="other")], NOW) is None  # only its own


async def test_the_service_holds_an_agent_to_its_limits_by_any_channel(parts: Parts):
    service = ThreadService(parts.store, policy(), parts.notifier, parts.clock)
    for _ in range(2):
        await service.launch("what's on staging?", AGENT_ID)
    with pytest.raises(Forbidden, match=r"max_open = 2"):
        await service.launch("what's on staging?", AGENT_ID)
    await service.launch("what's on staging?", DIRECTORY.by_name("bob"))  # people have no limits


def test_people_see_which_agent_asked_and_whose_it_is():
    from bot.adapters.channels.email import render as email_render
    from bot.adapters.channels.slack import blocks as slack_blocks

    request = ApprovalRequested(
        step_id="s", thread_id="t", args_hash="h", service="backend", tag="v1.2.3", commit="abc1234def",
        environment="production", requested_by="agent:claude-code", asked_by=DIRECTORY.display("agent:claude-code"),
        expires_at=NOW,
    )
    assert request.asker == "claude-code (agent of alice)"
    assert email_render.approval_text(request, "token").startswith("claude-code (agent of alice) asked to deploy:")
    assert slack_blocks.fallback_text(request, "t").startswith(
        "Approval needed: claude-code (agent of alice) asks to deploy backend v1.2.3 (abc1234) to production")
    assert "*Asked by:* claude-code (agent of alice)" in str(slack_blocks.approval_request("t", request))


def read(tool: str, by: str = "agent:claude-code") -> ToolCalled:
    return ToolCalled(tool=tool, agent=by, at=NOW)


def test_an_agent_s_read_of_a_thread_is_on_record_once():
    thread = Thread("t", tuple(asked("t").events))
    assert not agents.read_recorded(thread, "agent:claude-code")
    # Asking is not reading: the first look after asking is recorded still.
    assert not agents.read_recorded(thread.extended([read("request_deploy")]), "agent:claude-code")
    for tool in ("get_thread", "wait_for_thread"):
        looked = thread.extended([read(tool)])
        assert agents.read_recorded(looked, "agent:claude-code")
        assert not agents.read_recorded(looked, "agent:other")  # per agent


async def test_a_read_is_recorded_once_however_many_processes_record_it_at_once(parts: Parts):
    service = ThreadService(parts.store, policy(), parts.notifier, parts.clock)
    thread = await service.launch("what's on staging?", AGENT_ID)

    def recorded(t: Thread) -> bool:
        return agents.read_recorded(t, "agent:claude-code")

    await asyncio.gather(*(service.record_unless(thread.id, [read("get_thread")], recorded) for _ in range(5)))
    await service.record_unless(thread.id, [read("wait_for_thread")], recorded)
    calls = [e for e in (await service.get(thread.id)).events if isinstance(e, ToolCalled)]
    assert [(e.tool, e.agent) for e in calls] == [("get_thread", "agent:claude-code")]
