"""Over the in-memory fakes: the runner renders the model's context within its budget, and
a thread whose approval request expired shows as waiting for a human to callers with a
clock, while the reducer still never deploys on it."""

from __future__ import annotations

from datetime import timedelta

from bot.core.control import Stop, next_action
from bot.core.events import DeployBackend, DoneForNow, HumanResponse, ListGitTags
from bot.core.prompt import CONTEXT_BUDGET, estimate_tokens
from bot.core.thread import Thread
from bot.core.views import summary_json, thread_json
from tests.memory_parts import NOW, Parts, make_runner, who

HUGE = "please deploy the newest backend to production " + "and also read this " * 1_000_000  # 19 MB


async def launch(parts: Parts, text: str) -> Thread:
    from bot.runtime.service import ThreadService

    return await ThreadService(parts.store, parts.policy, None, parts.clock).launch(text, who("alice"))


# --- the context budget -------------------------------------------------------------------


async def test_the_runner_renders_the_context_within_the_models_budget(parts):
    runner = make_runner(parts, context_budget=3_000)
    parts.model.script(DoneForNow(message="ok"))
    thread = await runner.run((await launch(parts, HUGE)).id)
    assert thread.status() == "done"
    [context] = parts.model.contexts
    assert estimate_tokens(context) <= 3_000 and "characters cut" in context
    assert context.startswith('<user_message user="alice" channel="api">\nplease deploy the newest backend')


async def test_without_a_budget_of_its_own_a_model_gets_the_default_one(parts, runner):
    parts.model.script(DoneForNow(message="ok"))
    await runner.run((await launch(parts, HUGE)).id)
    [context] = parts.model.contexts
    assert CONTEXT_BUDGET // 8 < estimate_tokens(context) <= CONTEXT_BUDGET


# --- an expired approval --------------------------------------------------------------------


async def paused_for_approval(parts: Parts) -> Thread:
    parts.model.script(ListGitTags(), DeployBackend(tag="v1.2.3", environment="production"))
    thread = await make_runner(parts).run((await launch(parts, "ship the newest backend")).id)
    assert thread.status() == "waiting_for_approval"
    return thread


async def test_an_expired_approval_waits_for_a_human_to_callers_with_a_clock(parts):
    thread = await paused_for_approval(parts)
    request = thread.pending_approval()
    assert request is not None and request.expires_at == NOW + parts.policy.approval_ttl
    before, after = request.expires_at, request.expires_at + timedelta(seconds=1)

    assert thread.status(before) == "waiting_for_approval" and thread.pending_approval(before) == request
    assert thread.expired_approval(before) is None
    assert thread.status(after) == "waiting_for_human"
    assert thread.pending_approval(after) is None and thread.expired_approval(after) == request
    assert thread.status() == "waiting_for_approval" and thread.pending_approval() == request  # no clock

    shown = thread_json(thread, after)
    assert shown["status"] == "waiting_for_human" and shown["pending_approval"] is None
    assert shown["expired_approval"]["approval_id"] == request.approval_id
    assert summary_json(thread, after)["status"] == "waiting_for_human"
    assert thread_json(thread)["status"] == "waiting_for_approval"  # callers without a clock
    assert thread_json(thread, before)["pending_approval"]["approval_id"] == request.approval_id


async def test_the_reducer_never_deploys_an_expired_approval_and_a_reply_replans(parts, service):
    thread = await paused_for_approval(parts)
    request = thread.pending_approval()
    parts.clock.advance(hours=2)
    assert thread.status(parts.clock()) == "waiting_for_human"
    assert next_action(thread, parts.policy) == Stop("waiting_for_approval")  # nothing runs

    # What waiting for a human means here: an approver's reply is feedback, and the bot re-plans.
    replied = await service.respond(thread.id, "still wanted, propose it again", who("bob"))
    assert replied.events[-1] == HumanResponse(
        id=replied.events[-1].id, at=parts.clock(), text="still wanted, propose it again", user="bob",
        approval_id=request.approval_id, approve=False, person="bob", via="name", evidence="bob",
    )
    parts.model.script(DeployBackend(tag="v1.2.3", environment="production"))
    again = await make_runner(parts).run(thread.id)
    fresh = again.pending_approval(parts.clock())
    assert fresh is not None and fresh.approval_id != request.approval_id
    assert again.status(parts.clock()) == "waiting_for_approval" and parts.deployer.deploys == []


async def test_after_an_approval_lapsed_the_requesters_own_reply_replans_too(parts, service):
    thread = await paused_for_approval(parts)
    request = thread.pending_approval()
    parts.clock.advance(hours=2)
    # alice asked, and is no approver: before the expiry her reply is plain text (the approval
    # still waits for bob or carol); after it, nobody is left to wait for, so it closes it.
    replied = await service.respond(thread.id, "yes please, still wanted", who("alice"))
    assert replied.events[-1].approval_id == request.approval_id and replied.events[-1].approve is False
    parts.model.script(DeployBackend(tag="v1.2.3", environment="production"))
    again = await make_runner(parts).run(thread.id)
    fresh = again.pending_approval(parts.clock())
    assert fresh is not None and fresh.approval_id != request.approval_id and parts.deployer.deploys == []
