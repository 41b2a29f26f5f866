"""After an approval expires, a model that proposes the same deploy again does not get a new
approval request every APPROVAL_TTL: with no person writing since, the thread ends, saying
the approval expired. A person asking again asks again. The real BAML runtime against the
fake LLM server, which keeps proposing the deploy."""

from __future__ import annotations

import json

import pytest

from bot.adapters.llm import BamlModel
from bot.core.events import ApprovalExpired, ApprovalRequested, DeployService, DoneForNow
from tests.core.test_lifecycle import Bench, policy
from tests.memory_parts import Parts, make_runner

pytestmark = pytest.mark.network

PROPOSAL = "```json\n" + json.dumps(
    {"intent": "deploy", "service": "backend", "tag": "v1.2.3", "environment": "production"}
) + "\n```"


def bench_with_model(fake_llm) -> Bench:
    b = Bench(Parts(policy=policy()))
    model = BamlModel("openai-generic", "fake-model", "sk-fake", fake_llm.base_url)
    b.runner = make_runner(b.parts, llm=model, timers=b.timers, queue=b.queue, freezes=b.freezes)
    return b


async def test_the_same_deploy_proposed_after_its_approval_expired_ends_the_thread(fake_llm):
    fake_llm.default = PROPOSAL
    b = bench_with_model(fake_llm)
    thread = await b.say("ship the newest backend to production, please")
    assert thread.status() == "waiting_for_approval"
    b.later(hours=1, seconds=1)
    await b.fire()
    thread = await b.load(thread)
    assert len(list(thread.of(ApprovalExpired))) == 1
    assert len(list(thread.of(ApprovalRequested))) == 1 and thread.pending_approval() is None
    assert thread.status(b.now) == "done"
    last = thread.events[-1]
    assert isinstance(last, DoneForNow) and "expired at" in last.message and "nothing was deployed" in last.message
    assert "I am not asking for it again by myself" in last.message  # as the README quotes it
    asked = len(fake_llm.prompts)
    b.later(hours=1, seconds=1)
    await b.fire()  # nothing is due any more: no new request, no model call
    assert (await b.load(thread)).events == thread.events and len(fake_llm.prompts) == asked
    assert b.parts.deployer.requests == []


async def test_a_person_asking_again_after_the_expiry_gets_a_new_request(fake_llm):
    fake_llm.default = PROPOSAL
    b = bench_with_model(fake_llm)
    thread = await b.say("ship the newest backend to production, please")
    b.later(hours=1, seconds=1)
    await b.fire()
    thread = await b.reply(await b.load(thread), "still needed, please ask again", "alice")
    assert len(list(thread.of(ApprovalRequested))) == 2 and thread.status(b.now) == "waiting_for_approval"
    assert len(list(thread.of(DeployService))) == 3  # asked, proposed again (ended), asked again
