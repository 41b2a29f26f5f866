"""ThreadService over MemoryThreadStore: what each operation appends, and that a refused
one appends nothing (and tells no channel)."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest

from bot.core.events import (
    ApprovalRequested,
    Cancelled,
    DeployBackend,
    DeployResult,
    DeployStarted,
    HumanResponse,
    ListGitTags,
    UserMessage,
    stamped,
)
from bot.core.policy import Policy, args_hash
from bot.core.thread import Forker, Origin, Thread
from bot.runtime.service import Forbidden, Invalid, NotFound, Refused, ThreadService, WrongState
from tests.memory_parts import NOW, TAGS, Parts, who


async def awaiting_approval(parts: Parts, requested_by: str = "alice") -> tuple[Thread, ApprovalRequested]:
    """A thread whose production deploy waits for a decision, as a run leaves it."""
    ask = UserMessage(text="ship the newest backend", user=requested_by)
    step = DeployBackend(tag="v1.2.3", environment="production")
    thread = await parts.store.create(Origin(), stamped([ask, step], NOW))
    request = ApprovalRequested(
        step_id=step.id, thread_id=thread.id, args_hash=args_hash("backend", "v1.2.3", "production"),
        service="backend", tag="v1.2.3", commit=TAGS["v1.2.3"], environment="production",
        requested_by=requested_by, requesters=[requested_by], expires_at=NOW + timedelta(hours=1),
    )
    thread = await parts.store.append(thread, stamped([request], NOW))
    return await parts.store.release(thread, "the run"), request  # released: in the status index


async def stored(parts: Parts, thread: Thread) -> Thread:
    return await parts.store.load(thread.id)


# --- launch, get, recent -------------------------------------------------------------


async def test_launch_stores_the_message_stamped_and_tells_the_channel(parts, service):
    parts.clock.advance(minutes=3)
    thread = await service.launch("hello there", who("alice"), channel="slack",
                                  origin=Origin(channel="slack", slack_channel="C1"))
    [event] = (await stored(parts, thread)).events
    assert isinstance(event, UserMessage)
    assert (event.text, event.user, event.channel) == ("hello there", "alice", "slack")
    assert event.at == NOW + timedelta(minutes=3)
    assert thread.origin == Origin(channel="slack", slack_channel="C1")
    assert parts.notifier.published == [(thread.id, ["user_message"])]


async def test_launch_with_a_chosen_id(parts, service):
    thread = await service.launch("hello", who("alice"), thread_id="slack-1")
    assert thread.id == "slack-1" and (await stored(parts, thread)).version == 1


async def test_an_empty_message_starts_nothing(parts, service):
    with pytest.raises(Invalid):
        await service.launch("   ", who("alice"))
    assert await parts.store.recent(10) == [] and parts.notifier.published == []


async def test_unknown_threads_are_not_found(service):
    with pytest.raises(NotFound):
        await service.get("nope")
    with pytest.raises(NotFound):
        await service.respond("nope", "hi", who("alice"))
    with pytest.raises(NotFound):
        await service.cancel("nope", who("alice"))


async def test_recent_filters_by_status_and_checks_the_status(parts, service):
    running = await service.launch("hello", who("alice"))
    waiting, _ = await awaiting_approval(parts)
    assert {t.id for t in await service.recent()} == {running.id, waiting.id}
    assert [t.id for t in await service.recent("waiting_for_approval")] == [waiting.id]
    with pytest.raises(Invalid):
        await service.recent("sleeping")


# --- respond -------------------------------------------------------------------------


async def test_a_reply_is_a_human_response(parts, service):
    thread = await service.launch("hello", who("alice"))
    parts.clock.advance(seconds=30)
    answered = await service.respond(thread.id, "staging please", who("alice"), channel="email")
    reply = answered.events[-1]
    assert isinstance(reply, HumanResponse) and reply.approve is None and reply.channel == "email"
    assert reply.at == NOW + timedelta(seconds=30) and await stored(parts, thread) == answered


async def test_approve_records_one_decision(parts, service):
    thread, request = await awaiting_approval(parts)
    decided = await service.respond(thread.id, "", who("bob"), approval_id=request.approval_id, approve=True)
    decision = decided.events[-1]
    assert isinstance(decision, HumanResponse) and decision.approve is True and decision.user == "bob"
    assert decided.decision_for(request.approval_id) == decision and decided.pending_approval() is None
    assert parts.notifier.published == [(thread.id, ["human_response"])]


async def test_reject_with_feedback_closes_the_step(parts, service):
    thread, request = await awaiting_approval(parts)
    decided = await service.respond(thread.id, "breaks logins", who("bob"),
                                    approval_id=request.approval_id, approve=False)
    step = decided.events[1]
    assert decided.outcome(step) == decided.events[-1] and decided.events[-1].text == "breaks logins"


async def test_free_text_from_an_approver_while_approval_waits_is_a_rejection(parts, service):
    thread, request = await awaiting_approval(parts)
    answered = await service.respond(thread.id, "not this one", who("carol"))
    assert answered.events[-1].approve is False and answered.events[-1].approval_id == request.approval_id


async def test_free_text_from_someone_else_while_approval_waits_is_just_a_message(parts, service):
    thread, _ = await awaiting_approval(parts)
    answered = await service.respond(thread.id, "any news?", who("alice"))
    assert answered.events[-1].approve is None and answered.pending_approval() is not None


async def test_two_approvals_at_once_yield_exactly_one_decision(parts, service):
    thread, request = await awaiting_approval(parts)
    results = await asyncio.gather(
        service.respond(thread.id, "", who("bob"), approval_id=request.approval_id, approve=True),
        service.respond(thread.id, "", who("carol"), approval_id=request.approval_id, approve=True),
        return_exceptions=True,
    )
    winners = [r for r in results if isinstance(r, Thread)]
    [loser] = [r for r in results if isinstance(r, Exception)]
    assert len(winners) == 1 and isinstance(loser, WrongState)
    final = await stored(parts, thread)
    decisions = [e for e in final.events if isinstance(e, HumanResponse)]
    assert len(decisions) == 1 and f"already approved by {decisions[0].user}" in loser.message
    assert final.version == thread.version + 1


async def test_an_approval_racing_a_rejection_yields_one_decision(parts, service):
    thread, request = await awaiting_approval(parts)
    results = await asyncio.gather(
        service.respond(thread.id, "no", who("carol"), approval_id=request.approval_id, approve=False),
        service.respond(thread.id, "", who("bob"), approval_id=request.approval_id, approve=True),
        return_exceptions=True,
    )
    assert sum(isinstance(r, Thread) for r in results) == 1
    assert all(isinstance(r, WrongState) for r in results if not isinstance(r, Thread))
    assert sum(isinstance(e, HumanResponse) for e in (await stored(parts, thread)).events) == 1


async def test_concurrent_replies_all_land(parts, service):
    thread = await service.launch("hello", who("alice"))
    await asyncio.gather(*(service.respond(thread.id, f"m{n}", who("alice")) for n in range(10)))
    texts = [e.text for e in (await stored(parts, thread)).events[1:]]
    assert sorted(texts) == sorted(f"m{n}" for n in range(10))


# --- refusals: nothing appended, nobody told -----------------------------------------

REFUSALS = {
    "a non-approver approves": (Forbidden, dict(user="mallory", approve=True)),
    "the bot approves itself": (Forbidden, dict(user="deploybot", approve=True)),
    "approve without an approval id": (Invalid, dict(user="bob", approve=True, approval_id=None)),
    "an unknown approval": (WrongState, dict(user="bob", approve=True, approval_id="nope")),
    "a reply that says approve": (WrongState, dict(user="bob", text="approve")),
    "a reply naming another approval": (WrongState, dict(user="alice", text="hi", approval_id="nope")),
    "an empty reply": (Invalid, dict(user="alice", text="  ", approval_id=None)),
}


@pytest.mark.parametrize("case", REFUSALS)
async def test_a_refused_answer_appends_nothing(parts, service, case):
    error, kwargs = REFUSALS[case]
    thread, request = await awaiting_approval(parts)
    args = {"text": "", "approval_id": request.approval_id, **kwargs}
    with pytest.raises(error) as refused:
        await service.respond(thread.id, args.pop("text"), who(args.pop("user")), **args)
    assert isinstance(refused.value, Refused) and refused.value.message
    assert await stored(parts, thread) == thread and parts.notifier.published == []


async def test_an_expired_approval_cannot_be_approved_but_can_be_rejected(parts, service):
    thread, request = await awaiting_approval(parts)
    parts.clock.advance(hours=1, seconds=1)
    with pytest.raises(WrongState, match="expired"):
        await service.respond(thread.id, "", who("bob"), approval_id=request.approval_id, approve=True)
    assert await stored(parts, thread) == thread
    rejected = await service.respond(thread.id, "too late", who("bob"),
                                     approval_id=request.approval_id, approve=False)
    assert rejected.events[-1].approve is False


async def test_a_second_decision_is_refused_and_names_the_first(parts, service):
    thread, request = await awaiting_approval(parts)
    decided = await service.respond(thread.id, "", who("bob"), approval_id=request.approval_id, approve=True)
    for approve in (True, False):
        with pytest.raises(WrongState, match="already approved by bob at 2026-11-05 12:00:00 UTC"):
            await service.respond(thread.id, "", who("carol"), approval_id=request.approval_id, approve=approve)
    with pytest.raises(WrongState, match="already approved by bob"):
        await service.check_decision(thread.id, request.approval_id, who("carol"))
    assert await stored(parts, thread) == decided


async def test_a_requester_may_not_approve_their_own_deploy_when_the_policy_says_so(parts):
    strict = Policy(approver_must_differ=True)  # open mode: anyone may approve, but not their own
    service = ThreadService(parts.store, strict, parts.notifier, parts.clock)
    thread, request = await awaiting_approval(parts, requested_by="bob")
    with pytest.raises(Forbidden, match="cannot also approve"):
        await service.respond(thread.id, "", who("bob"), approval_id=request.approval_id, approve=True)
    assert await stored(parts, thread) == thread
    await service.respond(thread.id, "", who("carol"), approval_id=request.approval_id, approve=True)


async def test_check_decision_refuses_what_deciding_would_and_appends_nothing(parts, service):
    thread, request = await awaiting_approval(parts)
    await service.check_decision(thread.id, request.approval_id, who("bob"))  # bob may decide
    with pytest.raises(Forbidden):
        await service.check_decision(thread.id, request.approval_id, who("mallory"))
    assert await stored(parts, thread) == thread


# --- cancel --------------------------------------------------------------------------


async def test_cancel_once_then_everything_is_refused(parts, service):
    thread, request = await awaiting_approval(parts)
    cancelled = await service.cancel(thread.id, who("alice"), "changed my mind")
    assert isinstance(cancelled.events[-1], Cancelled) and cancelled.status() == "cancelled"
    with pytest.raises(WrongState):
        await service.cancel(thread.id, who("bob"))
    with pytest.raises(WrongState):
        await service.respond(thread.id, "hello?", who("alice"))
    with pytest.raises(WrongState):
        await service.respond(thread.id, "", who("bob"), approval_id=request.approval_id, approve=True)
    assert await stored(parts, thread) == cancelled


# --- fork ----------------------------------------------------------------------------


async def test_fork_copies_a_prefix_into_a_new_api_thread(parts, service):
    thread, _ = await awaiting_approval(parts)
    thread = await parts.store.create(thread.origin.model_copy(update={"channel": "slack"}), thread.events)
    fork = await service.fork(thread.id, 2, who("alice"))
    assert fork.id != thread.id and fork.events == thread.events[:2]
    assert fork.origin == Origin(channel="api", forked_from=thread.id, forked_at=2,
                                 forked_by=Forker(user="alice", person="alice", via="name", evidence="alice", at=NOW))
    assert await stored(parts, fork) == fork and await stored(parts, thread) == thread


@pytest.mark.parametrize("at", [0, 4])
async def test_fork_out_of_range_is_invalid(parts, service, at):
    thread, _ = await awaiting_approval(parts)
    with pytest.raises(Invalid):
        await service.fork(thread.id, at, who("alice"))
    assert await parts.store.recent(10) == [thread.id]


async def test_fork_in_the_middle_of_a_deploy_is_refused_but_before_or_after_is_fine(parts, service):
    ask = UserMessage(text="deploy backend v1.2.3 to staging", user="alice")
    step = DeployBackend(tag="v1.2.3", environment="staging")
    started = DeployStarted(step_id=step.id, deploy_id=f"t-{step.id}", commit=TAGS["v1.2.3"])
    result = DeployResult(step_id=step.id, deploy_id=started.deploy_id, service="backend", tag="v1.2.3",
                          environment="staging", commit=TAGS["v1.2.3"], ok=True)
    thread = await parts.store.create(Origin(), [ask, step, started, result, ListGitTags()])
    with pytest.raises(Invalid, match="middle of a deploy"):
        await service.fork(thread.id, 3, who("alice"))
    assert (await service.fork(thread.id, 2, who("alice"))).version == 2
    assert (await service.fork(thread.id, 4, who("alice"))).version == 4


async def test_a_persons_word_is_indexed_at_once_before_any_run(parts, service):
    """Cancelling (or answering) changes the status without a run: the service indexes it,
    so GET /threads?status= and the sweep see it before a worker runs the thread."""
    waiting, request = await awaiting_approval(parts)
    await service.cancel(waiting.id, who("alice"))
    assert (await parts.store.listed(["cancelled"], 10))[0] == [waiting.id]
    assert (await parts.store.listed(["waiting_for_approval"], 10))[0] == []
    other, request = await awaiting_approval(parts)
    await service.respond(other.id, "", who("bob"), request.approval_id, approve=True)
    assert (await parts.store.listed(["running"], 10))[0] == [other.id]
    assert [t.id for t in await service.recent("waiting_for_approval")] == []
