"""The loop and the deploy path over the in-memory fakes: what a run appends, what it
deploys, and what it refuses. Runners come from make_runner and are driven only by run()."""

from __future__ import annotations

from datetime import timedelta

import pytest

from bot.core.events import (
    ApprovalRequested,
    DeployBackend,
    DeployResult,
    DeployStarted,
    DoneForNow,
    Error,
    ListGitTags,
    RequestMoreInformation,
)
from bot.core.thread import Origin, Thread
from bot.runtime.ports import DeployerError, DeployOutcome, DeployRequest, LlmError, Lock
from bot.testing.memory import Crash
from tests.memory_parts import NOW, PEOPLE, TAGS, Parts, die, make_runner, who

ASK = "ship the newest backend please"  # free text: the model decides (not an exact command)


def types(thread: Thread) -> list[str]:
    return [e.type for e in thread.events]


async def launch(parts: Parts, text: str = ASK, user: str = "alice") -> Thread:
    from bot.runtime.service import ThreadService

    return await ThreadService(parts.store, parts.policy, None, parts.clock).launch(text, who(user))


async def approve(service, thread: Thread, user: str = "bob", approve: bool = True, text: str = "") -> Thread:
    pending = (await service.get(thread.id)).pending_approval()
    assert pending is not None
    return await service.respond(thread.id, text, who(user), approval_id=pending.approval_id, approve=approve)


def prod(tag: str = "v1.2.3") -> DeployBackend:
    return DeployBackend(tag=tag, environment="production", reason="newest tag")


async def paused_for_approval(parts: Parts, runner) -> Thread:
    parts.model.script(ListGitTags(), prod())
    thread = await runner.run((await launch(parts)).id)
    assert thread.status() == "waiting_for_approval"
    return thread


# --- plain runs ----------------------------------------------------------------------


async def test_a_read_only_step_runs_at_once_and_the_model_sees_its_result(parts, runner):
    parts.model.script(ListGitTags(), DoneForNow(message="v1.2.3 is the newest"))
    thread = await runner.run((await launch(parts)).id)
    assert types(thread) == ["user_message", "list_git_tags", "list_git_tags_result", "done_for_now"]
    assert [t.name for t in thread.events[2].tags] == list(TAGS)
    assert "v1.2.3" in parts.model.contexts[1] and TAGS["v1.2.3"][:7] in parts.model.contexts[1]
    assert parts.deployer.requests == [] and thread.status() == "done"
    assert await parts.store.load(thread.id) == thread


async def test_every_event_a_run_appends_is_stamped_with_its_clock(parts, runner):
    parts.clock.advance(minutes=5)
    parts.model.script(ListGitTags(), DoneForNow(message="done"))
    thread = await runner.run((await launch(parts)).id)
    assert {e.at for e in thread.events} == {NOW + timedelta(minutes=5)}


async def test_the_channel_hears_each_event_once_it_is_stored(parts, runner):
    parts.model.script(ListGitTags(), DoneForNow(message="done"))
    thread = await runner.run((await launch(parts)).id)
    heard = [t for thread_id, told in parts.notifier.published if thread_id == thread.id for t in told]
    assert heard == types(thread)[1:]


async def test_a_model_error_is_an_event_the_model_sees_next_time(parts, runner):
    parts.model.script(LlmError("unparseable: hmm"), DoneForNow(message="ok"))
    thread = await runner.run((await launch(parts)).id)
    assert types(thread) == ["user_message", "error", "done_for_now"]
    assert thread.events[1].kind == "llm" and "unparseable: hmm" in parts.model.contexts[1]


async def test_errors_in_a_row_escalate_to_a_human_instead_of_looping(parts, runner):
    parts.model.script(*(LlmError(f"bad {n}") for n in range(10)))
    thread = await runner.run((await launch(parts)).id)
    assert types(thread) == ["user_message", "error", "error", "error", "request_more_information"]
    assert thread.status() == "waiting_for_human" and len(parts.model.contexts) == 3


async def test_deployer_errors_while_listing_become_error_events(parts, runner):
    parts.deployer.lookup_error = DeployerError("git is unreachable")
    parts.model.script(ListGitTags(), DoneForNow(message="cannot list"))
    thread = await runner.run((await launch(parts)).id)
    assert thread.events[2].type == "error" and thread.events[2].kind == "deployer"
    assert "git is unreachable" in thread.events[2].message and thread.status() == "done"


async def test_a_bug_marks_the_thread_failed_and_stops(parts, runner):
    def explode(context: str):
        raise ZeroDivisionError("a bug")

    parts.model.script(explode)
    thread = await runner.run((await launch(parts)).id)
    assert thread.status() == "failed" and "ZeroDivisionError" in thread.events[-1].message
    assert await runner.run(thread.id) == thread  # failed stays failed until someone writes


async def test_without_a_model_exact_commands_still_deploy(parts):
    runner = make_runner(parts, llm=None)
    thread = await runner.run((await launch(parts, "deploy frontend v1.2.2 to staging")).id)
    assert types(thread) == [
        "user_message", "deploy", "deploy_started", "deploy_result", "done_for_now"]
    assert parts.deployer.deploys == [
        DeployRequest(f"{thread.id}-{thread.events[1].id}", "frontend", "v1.2.2", "staging", TAGS["v1.2.2"])]


async def test_unprotected_deploys_run_without_approval_and_are_remembered(parts, runner):
    parts.model.script(DeployBackend(tag="v1.2.2", environment="staging"), DoneForNow(message="done"))
    thread = await runner.run((await launch(parts)).id)
    assert types(thread) == [
        "user_message", "deploy_backend", "deploy_started", "deploy_result", "done_for_now"]
    assert len(parts.deployer.deploys) == 1 and await parts.environments.holder("staging") is None
    [record] = await parts.environments.recent("staging", 10)
    assert (record.tag, record.commit, record.ok) == ("v1.2.2", TAGS["v1.2.2"], True)
    assert record.approved_by is None


async def test_a_failed_deploy_is_a_result_not_an_error(parts, runner):
    parts.deployer.script(DeployOutcome(ok=False, exit_code=3, output="boom"))
    parts.model.script(DeployBackend(tag="v1.2.2", environment="staging"), DoneForNow(message="it failed"))
    thread = await runner.run((await launch(parts)).id)
    result = next(e for e in thread.events if isinstance(e, DeployResult))
    assert (result.ok, result.exit_code, result.output) == (False, 3, "boom")
    assert thread.status() == "done" and len(parts.deployer.deploys) == 1


async def test_a_deploy_that_could_not_run_is_a_failed_deploy_in_the_history(parts, runner):
    parts.deployer.script(DeployerError("workflow not found"))
    parts.model.script(DeployBackend(tag="v1.2.2", environment="staging"), DoneForNow(message="could not"))
    thread = await runner.run((await launch(parts)).id)
    assert types(thread)[2:4] == ["deploy_started", "deploy_result"]
    result = thread.events[3]
    assert not result.ok and result.exit_code is None and "workflow not found" in result.output
    assert await parts.environments.holder("staging") is None
    # Failed everywhere: the history (so the metrics and the deploys page) has it as one.
    [record] = await parts.environments.recent("staging", 10)
    assert (record.ok, record.tag, record.deploy_id) == (False, "v1.2.2", result.deploy_id)


async def test_unknown_tags_and_environments_are_validation_errors_the_model_sees(parts, runner):
    parts.model.script(
        DeployBackend(tag="v9.9.9", environment="production"),
        DeployBackend(tag="v1.2.3", environment="prod"),
        DoneForNow(message="giving up"),
    )
    thread = await runner.run((await launch(parts)).id)
    errors = [e for e in thread.events if isinstance(e, Error)]
    assert [e.kind for e in errors] == ["validation", "validation"]
    assert "tag 'v9.9.9' does not exist; newest tags: v1.2.3, v1.2.2, v1.2.1" in errors[0].message
    assert "unknown environment 'prod'" in errors[1].message
    assert parts.deployer.requests == [] and "v9.9.9" in parts.model.contexts[1]


# --- approvals -----------------------------------------------------------------------


async def test_a_protected_deploy_pauses_for_approval_bound_to_the_commit(parts, runner):
    thread = await paused_for_approval(parts, runner)
    request = thread.events[-1]
    assert isinstance(request, ApprovalRequested) and request.step_id == thread.events[-2].id
    assert (request.commit, request.environment) == (TAGS["v1.2.3"], "production")
    assert request.requested_by == "alice"
    assert request.expires_at == NOW + parts.policy.approval_ttl and request.thread_id == thread.id
    assert parts.deployer.requests == []
    assert await runner.run(thread.id) == thread  # nothing to do until someone decides


async def test_approve_deploys_exactly_once_with_the_approved_commit(parts, runner, service):
    thread = await paused_for_approval(parts, runner)
    step = thread.events[-2]
    await approve(service, thread)
    parts.model.script(DoneForNow(message="deployed"))
    done = await runner.run(thread.id)
    assert types(done)[-4:] == ["human_response", "deploy_started", "deploy_result", "done_for_now"]
    assert parts.deployer.deploys == [
        DeployRequest(f"{thread.id}-{step.id}", "backend", "v1.2.3", "production", TAGS["v1.2.3"])]
    result = next(e for e in done.events if isinstance(e, DeployResult))
    assert result.approved_by == "bob" and result.commit == TAGS["v1.2.3"]
    assert await runner.run(thread.id) == done and len(parts.deployer.requests) == 1  # never again
    assert await parts.environments.holder("production") is None  # released once recorded
    [record] = await parts.environments.recent("production", 10)
    assert record.approved_by == "bob" and record.deploy_id == result.deploy_id


async def test_who_approved_is_their_person_s_name_whichever_channel_they_decided_by(parts, runner, service):
    thread = await paused_for_approval(parts, runner)
    request = thread.pending_approval()
    carol = PEOPLE.by("email", "Carol <carol@example.com>")  # her approval code's address, not her name
    await service.respond(thread.id, "", carol, approval_id=request.approval_id, approve=True)
    parts.model.script(DoneForNow(message="deployed"))
    done = await runner.run(thread.id)
    result = next(e for e in done.events if isinstance(e, DeployResult))
    [record] = await parts.environments.recent("production", 10)
    assert result.approved_by == "carol" and record.approved_by == "carol"


async def test_reject_closes_the_step_and_the_model_replans_with_the_feedback(parts, runner, service):
    thread = await paused_for_approval(parts, runner)
    await approve(service, thread, approve=False, text="not now, it breaks logins")
    parts.model.script(RequestMoreInformation(message="Which tag instead?"))
    replanned = await runner.run(thread.id)
    assert types(replanned)[-2:] == ["human_response", "request_more_information"]
    assert "it breaks logins" in parts.model.contexts[-1]
    assert parts.deployer.requests == [] and replanned.status() == "waiting_for_human"


async def test_a_tag_moved_after_approval_is_not_deployed(parts, runner, service):
    thread = await paused_for_approval(parts, runner)
    parts.deployer.move_tag("v1.2.3", "d" * 40)
    await approve(service, thread)
    parts.model.script(DoneForNow(message="refused"))
    done = await runner.run(thread.id)
    error = next(e for e in done.events if isinstance(e, Error))
    assert error.kind == "recheck" and "now points to ddddddd, but ccccccc was approved" in error.message
    assert parts.deployer.requests == [] and await parts.environments.holder("production") is None


async def test_an_approval_that_expired_before_the_deploy_started_is_not_used(parts, runner, service):
    thread = await paused_for_approval(parts, runner)
    parts.clock.advance(minutes=59)
    await approve(service, thread)  # just in time
    parts.clock.advance(minutes=2)  # but the run only got to it after it expired
    parts.model.script(DoneForNow(message="expired"))
    done = await runner.run(thread.id)
    error = next(e for e in done.events if isinstance(e, Error))
    assert error.kind == "recheck" and "the approval expired at" in error.message
    assert parts.deployer.requests == []


async def test_a_locked_environment_is_an_error_event_and_nothing_deploys(parts, runner):
    manual = Lock("staging", "manual:carol", "release freeze", NOW)
    assert await parts.environments.acquire(manual, None) is None
    parts.model.script(DeployBackend(tag="v1.2.3", environment="staging"), DoneForNow(message="locked"))
    thread = await runner.run((await launch(parts)).id)
    error = next(e for e in thread.events if isinstance(e, Error))
    assert error.kind == "locked" and "locked by carol" in error.message and "release freeze" in error.message
    assert "deploy_started" not in types(thread) and parts.deployer.requests == []
    assert await parts.environments.holder("staging") == manual  # not taken, not released


async def test_approval_is_not_asked_for_a_deploy_that_could_not_start(parts, runner):
    await parts.environments.acquire(Lock("production", "manual:carol", "incident", NOW), None)
    parts.model.script(prod(), DoneForNow(message="locked"))
    thread = await runner.run((await launch(parts)).id)
    assert "approval_requested" not in types(thread) and thread.events[2].kind == "locked"


async def test_a_lock_taken_after_approval_stops_the_deploy(parts, runner, service):
    thread = await paused_for_approval(parts, runner)
    await approve(service, thread)
    other = Lock("production", "other-thread-step", "deploying frontend", NOW)
    assert await parts.environments.acquire(other, 60_000) is None
    parts.model.script(DoneForNow(message="locked"))
    done = await runner.run(thread.id)
    assert "deploy_started" not in types(done) and parts.deployer.requests == []
    assert next(e for e in done.events if isinstance(e, Error)).kind == "locked"


# --- crashes and leases --------------------------------------------------------------


async def crashed_mid_deploy(parts: Parts, runner) -> Thread:
    """A run recorded deploy_started, the deployer started the deploy, and the process died."""
    parts.deployer.script(Crash())
    parts.model.script(DeployBackend(tag="v1.2.2", environment="staging"))
    thread = await launch(parts)
    with pytest.raises(Crash):
        await runner.run(thread.id)
    await die()
    thread = await parts.store.load(thread.id)
    assert types(thread)[-1] == "deploy_started" and len(parts.deployer.deploys) == 1
    return thread


async def test_a_deploy_interrupted_by_a_crash_is_reported_never_rerun(parts, runner):
    thread = await crashed_mid_deploy(parts, runner)
    after = await make_runner(parts, name="the-next-process").run(thread.id)
    assert types(after)[-2:] == ["error", "request_more_information"]
    assert after.events[-2].kind == "interrupted" and after.status() == "waiting_for_human"
    assert len(parts.deployer.requests) == 1  # not run again


async def test_a_resumable_deployer_follows_the_interrupted_deploy_instead_of_starting_another(parts, runner):
    parts.deployer.resumable = True
    thread = await crashed_mid_deploy(parts, runner)
    parts.model.script(DoneForNow(message="deployed"))
    after = await make_runner(parts, name="the-next-process").run(thread.id)
    assert types(after)[-2:] == ["deploy_result", "done_for_now"] and after.events[-2].ok
    started = next(e for e in after.events if isinstance(e, DeployStarted))
    assert [r.deploy_id for r in parts.deployer.requests] == [started.deploy_id] * 2
    assert len(parts.deployer.deploys) == 1  # followed, not started twice
    assert await parts.environments.holder("staging") is None


async def test_a_fork_holding_another_threads_started_deploy_never_resumes_it(parts, runner):
    parts.deployer.resumable = True
    thread = await crashed_mid_deploy(parts, runner)
    copy = await parts.store.create(Origin(channel="api", forked_from=thread.id), thread.events)
    after = await make_runner(parts, name="the-next-process").run(copy.id)
    assert after.events[-2].kind == "interrupted" and len(parts.deployer.requests) == 1


async def test_a_thread_another_run_holds_is_left_alone(parts, runner):
    thread = await launch(parts)
    assert await parts.store.lease(thread.id, "another-run", 4_000)
    assert await runner.run(thread.id) is None
    assert parts.model.contexts == [] and (await parts.store.load(thread.id)) == thread
    parts.monotonic.advance(5)  # the other run died; its lease lapsed
    parts.model.script(DoneForNow(message="hello"))
    assert (await runner.run(thread.id)).status() == "done"


async def test_a_run_that_lost_its_lease_stops_deciding(parts, runner):
    thread = await launch(parts)

    async def stall_until_another_run_takes_over(context: str):
        parts.monotonic.advance(5)  # this run stalled past its lease...
        assert await parts.store.lease(thread.id, "another-run", 4_000)  # ...and another took the thread
        return prod()

    parts.model.script(stall_until_another_run_takes_over, DoneForNow(message="never asked"))
    assert await runner.run(thread.id) is None
    assert await parts.store.load(thread.id) == thread  # the stale run recorded nothing
    assert len(parts.model.contexts) == 1 and parts.deployer.requests == []


async def test_what_arrives_while_a_run_holds_the_thread_is_not_missed(parts, runner, service):
    thread = await launch(parts, "hello")

    async def a_message_arrives_meanwhile(context: str):
        await service.respond(thread.id, "and what about frontend?", who("alice"))
        assert await make_runner(parts, name="kicked-meanwhile").run(thread.id) is None  # busy
        return DoneForNow(message="hi")

    parts.model.script(a_message_arrives_meanwhile, DoneForNow(message="frontend too"))
    done = await runner.run(thread.id)
    assert types(done) == ["user_message", "human_response", "done_for_now"]
    assert done.events[-1].message == "frontend too" and "what about frontend" in parts.model.contexts[-1]


async def test_a_lost_race_rereads_and_decides_again(parts, runner, service):
    thread = await launch(parts)

    async def someone_writes_while_the_model_thinks(context: str):
        await service.respond(thread.id, "frontend, not backend", who("bob"))
        return ListGitTags()

    parts.model.script(someone_writes_while_the_model_thinks, RequestMoreInformation(message="Which tag?"))
    done = await runner.run(thread.id)
    assert types(done) == ["user_message", "human_response", "request_more_information"]
    assert "frontend, not backend" in parts.model.contexts[1]


async def test_a_deployer_bug_is_an_error_event_and_the_lock_is_not_left_behind(parts, runner):
    import asyncio

    parts.deployer.script(ValueError("Retry-After: Wed, 21 Oct 2026 07:28:00 GMT"))
    parts.model.script(DeployBackend(tag="v1.2.2", environment="staging"), DoneForNow(message="it broke"))
    thread = await runner.run((await launch(parts)).id)
    error = next(e for e in thread.events if isinstance(e, Error))
    assert error.kind == "deployer" and "ValueError" in error.message and "unknown" in error.message
    assert thread.status() == "done"
    assert await parts.environments.holder("staging") is None  # released: the result is recorded
    renewals = [t for t in asyncio.all_tasks() if "keep_renewing" in repr(t.get_coro()) and not t.done()]
    assert renewals == []


async def test_error_messages_are_redacted_before_they_are_recorded(parts):
    runner = make_runner(parts)
    runner.secrets = ("hunter2-the-db-password",)
    parts.deployer.script(DeployerError("push refused: postgres://app:hunter2-the-db-password@db/app"))
    parts.model.script(DeployBackend(tag="v1.2.2", environment="staging"), DoneForNow(message="no"))
    thread = await runner.run((await launch(parts)).id)
    result = next(e for e in thread.events if isinstance(e, DeployResult))
    assert "hunter2" not in result.output and "[redacted]" in result.output


# --- a read-only run's last write ------------------------------------------------------


class Writes:
    """Which of the store's writes a run made, in order (wrapping the memory store's)."""

    def __init__(self, store, monkeypatch) -> None:
        self.made: list[str] = []
        self.inside = False  # the memory store's finish is its append and release: one write
        for name in ("append", "finish", "release"):
            monkeypatch.setattr(store, name, self._counted(name, getattr(store, name)))

    def _counted(self, name, real):
        async def counted(*args, **kwargs):
            if self.inside:
                return await real(*args, **kwargs)
            self.made.append(name)
            self.inside = True
            try:
                return await real(*args, **kwargs)
            finally:
                self.inside = False

        return counted


async def test_an_exact_read_only_command_is_answered_and_let_go_in_one_write(parts, runner, monkeypatch):
    thread = await launch(parts, "list tags")
    writes = Writes(parts.store, monkeypatch)
    done = await runner.run(thread.id)
    assert types(done) == ["user_message", "list_git_tags", "list_git_tags_result", "done_for_now"]
    assert writes.made == ["finish"]
    assert await parts.store.load(thread.id) == done
    assert await parts.store.claim(thread.id, "another-run", 1000) == done  # let go
    heard = [t for thread_id, told in parts.notifier.published if thread_id == thread.id for t in told]
    assert heard == types(done)[1:]


async def test_a_person_who_writes_as_a_read_only_run_ends_is_answered_in_the_same_run(
    parts, runner, service, monkeypatch,
):
    thread = await launch(parts, "list tags")
    real_finish = parts.store.finish

    async def a_person_first(stored, events, owner):
        if not any(e.type == "human_response" for e in (await parts.store.load(stored.id)).events):
            await service.respond(thread.id, "and frontend?", who("bob"))
        return await real_finish(stored, events, owner)

    monkeypatch.setattr(parts.store, "finish", a_person_first)
    parts.model.script(DoneForNow(message="frontend has the same tags"))
    done = await runner.run(thread.id)
    # The held answer was dropped and the run decided again from what is stored: nothing lost,
    # nothing recorded from before the person's word.
    assert types(done) == ["user_message", "human_response", "done_for_now"]
    assert await parts.store.load(thread.id) == done
    assert await parts.store.claim(thread.id, "another-run", 1000) == done


async def test_a_run_that_leaves_a_due_time_behind_writes_then_lets_go(parts, service, monkeypatch):
    from bot.testing.memory import MemoryTimers

    timers = MemoryTimers()
    runner = make_runner(parts, timers=timers)
    waiting = await paused_for_approval(parts, runner)
    parts.model.script(DoneForNow(message="not deploying"))
    await approve(service, waiting, approve=False)
    rejected = await runner.run(waiting.id)
    await service.respond(rejected.id, "list tags", who("alice"))  # an exact command, after an approval
    timers.due_at[rejected.id] = NOW  # stale: this run must clear it
    writes = Writes(parts.store, monkeypatch)
    again = await runner.run(rejected.id)
    assert types(again)[-3:] == ["list_git_tags", "list_git_tags_result", "done_for_now"]
    assert writes.made == ["append", "release"]  # its due time is set between, under the lease
    assert rejected.id not in timers.due_at
