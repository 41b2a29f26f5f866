"""The loop in-process, against real Redis, a real git repo and the real BAML runtime."""

from __future__ import annotations

import asyncio
import sys
from datetime import UTC, datetime

import pytest
from redis import Redis as SyncRedis

from bot.adapters.deployers.command import CommandDeployer
from bot.core import control
from bot.core import events as ev
from bot.core.events import HumanResponse
from bot.runtime.loop import bot_event
from tests.helpers import eventually, ledger_lines, reply

pytestmark = [pytest.mark.redis, pytest.mark.processes, pytest.mark.network]


def use(app, deployer) -> None:
    """Every service deploys with `deployer`."""
    app.runner.deploying.deployers = dict.fromkeys(app.runner.deploying.deployers, deployer)


async def start(app, text="deploy the latest backend to production"):
    return await app.service.launch(text, app.service.unproven("alice"))


async def test_garbage_from_the_model_is_an_error_event_the_model_sees(app, fake_llm):
    fake_llm.script("hmm, let me think", reply(intent="done_for_now", message="nothing to do"))
    thread = await app.runner.run((await start(app)).id)
    assert [e.type for e in thread.events] == ["user_message", "error", "done_for_now"]
    assert thread.events[1].kind == "llm" and "hmm, let me think" in thread.events[1].message
    assert "hmm, let me think" in fake_llm.prompts[1]


async def test_a_lost_race_rereads_and_decides_again(app, fake_llm, redis_url):
    thread = await start(app)
    sync = SyncRedis.from_url(redis_url)
    interjection = HumanResponse(user="bob", text="frontend, not backend")

    def concurrent_writer(prompt: str) -> str:
        # Someone writes to the thread while the model is thinking.
        sync.rpush(app.store.keys.events(thread.id), ev.dump(interjection))
        return reply(intent="list_git_tags")

    fake_llm.script(concurrent_writer, reply(intent="request_more_information", message="Which tag?"))
    done = await app.runner.run(thread.id)
    assert [e.type for e in done.events] == ["user_message", "human_response", "request_more_information"]
    assert "frontend, not backend" in fake_llm.prompts[1]
    sync.close()


class ExplodingDeployer(CommandDeployer):
    async def list_tags(self):
        raise ZeroDivisionError("a bug")


async def test_a_bug_marks_the_thread_failed_instead_of_killing_the_process(app, fake_llm, git_repo):
    use(app, ExplodingDeployer(git_repo))
    fake_llm.script(reply(intent="list_git_tags"))
    thread = await app.runner.run((await start(app)).id)
    assert thread.status() == "failed"
    assert thread.events[-1].kind == "internal" and "ZeroDivisionError" in thread.events[-1].message
    # Once the bug is fixed, resuming re-runs the read-only step that never got its result.
    use(app, CommandDeployer(git_repo))
    fake_llm.script(reply(intent="done_for_now", message="ok"))
    await app.service.respond(thread.id, "try again", app.service.unproven("alice"))
    resumed = await app.runner.run(thread.id)
    assert resumed.status() == "done"
    assert [e.type for e in resumed.events[-3:]] == ["human_response", "list_git_tags_result", "done_for_now"]


class BrokenChannel:
    async def publish(self, thread, new):
        raise ConnectionError("chat service is down")


async def test_a_channel_outage_does_not_stop_the_run(app, fake_llm):
    app.runner.notifier = BrokenChannel()
    fake_llm.script(reply(intent="list_git_tags"), reply(intent="done_for_now", message="v1.2.3 is newest"))
    thread = await app.runner.run((await start(app)).id)
    assert thread.status() == "done" and len(thread.events) == 4


async def test_deployer_errors_become_error_events(app, fake_llm, tmp_path):
    use(app, CommandDeployer(tmp_path / "not-a-repo"))
    fake_llm.script(reply(intent="list_git_tags"), reply(intent="done_for_now", message="cannot list"))
    thread = await app.runner.run((await start(app)).id)
    error = thread.events[2]
    assert error.type == "error" and error.kind == "deployer" and "listing tags failed" in error.message
    assert thread.status() == "done"


async def test_unknown_tag_and_environment_are_validation_errors(app, fake_llm, ledger):
    fake_llm.script(
        reply(intent="deploy", service="backend", tag="v9.9.9", environment="production"),
        reply(intent="deploy", service="backend", tag="v1.2.3", environment="prod"),
        reply(intent="done_for_now", message="giving up"),
    )
    thread = await app.runner.run((await start(app)).id)
    errors = [e for e in thread.events if e.type == "error"]
    assert "tag 'v9.9.9' does not exist; newest tags: v1.2.3, v1.2.2, v1.2.1" in errors[0].message
    assert "unknown environment 'prod'" in errors[1].message
    assert not ledger.exists()


async def test_exact_command_needs_no_llm(app, fake_llm, ledger):
    app.runner.llm = None
    thread = await app.runner.run((await start(app, "deploy frontend v1.2.2 to staging")).id)
    assert [e.type for e in thread.events] == [
        "user_message", "deploy", "deploy_started", "deploy_result", "done_for_now"
    ]
    assert thread.events[-1].message == "Deployed frontend v1.2.2 to staging."
    assert fake_llm.prompts == []


async def test_free_text_without_llm_ends_with_how_to_go_on(app, fake_llm, ledger):
    app.runner.llm = None
    thread = await app.runner.run((await start(app)).id)
    # Nothing can act on a reply either, so the thread ends with the answer instead of waiting.
    assert thread.status() == "done" and thread.events[-1].type == "done_for_now"
    message = thread.events[-1].message
    assert "LLM_PROVIDER" in message and "deploy backend v1.2.3 to production" in message
    assert "say one here" in message
    assert fake_llm.prompts == []
    # An exact command said in the same thread goes on from there.
    await app.service.respond(thread.id, "deploy frontend v1.2.2 to staging", app.service.unproven("alice"))
    ran = await app.runner.run(thread.id)
    assert ran.status() == "done" and ran.events[-1].message == "Deployed frontend v1.2.2 to staging."


async def test_exact_command_list_tags_summarises(app):
    app.runner.llm = None
    thread = await app.runner.run((await start(app, "list tags")).id)
    assert thread.events[-1].message.startswith("Tags, newest first: v1.2.3 (")



async def test_a_second_runner_never_mistakes_a_running_deploy_for_an_interrupted_one(app, ledger, monkeypatch):
    import dataclasses

    monkeypatch.setenv("FAKE_DEPLOY_SECONDS", "1")
    thread = await start(app, "deploy backend v1.2.3 to staging")
    other = dataclasses.replace(app.runner, name="another-process")
    first = asyncio.create_task(app.runner.run(thread.id))
    await eventually(lambda: ledger_lines(ledger), within=10)
    assert await other.run(thread.id) is None  # busy: it does not touch the thread
    done = await first
    assert [e.type for e in done.events] == [
        "user_message", "deploy", "deploy_started", "deploy_result", "done_for_now"]
    assert len(ledger_lines(ledger)) == 1


async def test_a_dead_runners_thread_is_taken_over_when_its_lease_expires(app):
    thread = await start(app, "list tags")
    await app.store.lease(thread.id, "runner-that-died", 300)
    assert await app.runner.run(thread.id) is None
    # Tried again until the dead runner's lease has expired: a run then takes the thread over.
    taken_over = await eventually(lambda: app.runner.run(thread.id), message="the lease never expired")
    assert taken_over.status() == "done"


async def test_what_arrives_while_a_runner_holds_the_thread_is_not_missed(app, fake_llm):
    thread = await start(app, "hello")
    fake_llm.script(reply(intent="done_for_now", message="hi"), reply(intent="done_for_now", message="frontend too"))
    fake_llm.delay = 0.5
    first = asyncio.create_task(app.runner.run(thread.id))
    await eventually(lambda: fake_llm.prompts)  # the runner holds the lease and waits for the model
    await app.service.respond(thread.id, "and what about frontend?", app.service.unproven("alice"))
    assert await app.runner.run(thread.id) is None  # this kick finds the thread busy...
    done = await first  # ...and the holder answers the message anyway
    assert [e.type for e in done.events] == ["user_message", "human_response", "done_for_now"]
    assert done.events[-1].message == "frontend too" and "what about frontend" in fake_llm.prompts[-1]


async def test_secrets_a_deploy_prints_are_redacted_before_anyone_sees_them(app, tmp_path, git_repo):
    script = tmp_path / "leaky.py"
    script.write_text("print('token is ghp_abcdefghijklmnopqrstuvwxyz0123 and sk-test-secret-key-1234567890')\n")
    use(app, CommandDeployer(git_repo, f"{sys.executable} {script}"))
    thread = await app.runner.run((await start(app, "deploy backend v1.2.3 to staging")).id)
    output = next(e for e in thread.events if e.type == "deploy_result").output
    assert output == "token is [redacted] and [redacted]"


async def test_a_run_whose_lease_was_taken_over_cannot_decide_anything(app, fake_llm):
    thread = await start(app, "hello")
    fake_llm.script(reply(intent="done_for_now", message="too late"))
    fake_llm.delay = 0.5
    running = asyncio.create_task(app.runner.run(thread.id))
    await eventually(lambda: fake_llm.prompts, every=0.01)  # the run holds the lease and waits for the model
    # Its lease lapsed (a stalled process) and another run took the thread.
    await app.redis.set(app.store.keys.lease(thread.id), "another-run", px=10_000)
    assert await running is None
    assert [e.type for e in (await app.store.load(thread.id)).events] == ["user_message"]


def test_an_action_that_only_records_gives_its_event_and_one_that_runs_gives_none():
    at = datetime(2026, 5, 1, tzinfo=UTC)
    request = ev.ApprovalRequested(step_id="s1", thread_id="t", args_hash="h", service="web", tag="v1",
                                   commit="c" * 40, environment="prod", requested_by="bob", expires_at=at)
    asked = ev.SenderConfirmationRequested(address="a@example.com", claimed="bob", text="hi", expires_at=at)
    said = bot_event(control.Escalate("too many errors"))
    assert (said.type, said.source, said.message) == ("request_more_information", "bot", "too many errors")
    done = bot_event(control.Finish("not asking again"))
    assert (done.type, done.source, done.message) == ("done_for_now", "bot", "not asking again")
    reminded = bot_event(control.Remind(request, 2))
    assert (reminded.approval_id, reminded.count) == (request.approval_id, 2)
    escalated = bot_event(control.EscalateApproval(request, frozenset({"carol", "alice"})))
    assert (escalated.approval_id, escalated.to) == (request.approval_id, ["alice", "carol"])
    expired = bot_event(control.Expire(request))
    assert (expired.type, expired.step_id, expired.expires_at) == ("approval_expired", "s1", at)
    dropped = bot_event(control.ExpireSenderConfirmation(asked))
    assert (dropped.confirmation_id, dropped.expires_at) == (asked.confirmation_id, at)
    assert bot_event(control.Decide()) is None
    assert bot_event(control.AskApproval(ev.DeployService(service="web", tag="v1", environment="prod"))) is None
