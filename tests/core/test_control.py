"""The pure reducer: every status and every next action is derived from the events."""

from __future__ import annotations

from datetime import timedelta

import pytest

from bot.core.control import AskApproval, Decide, Escalate, Interrupted, RunDeploy, RunTags, Stop, next_action
from bot.core.events import (
    ApprovalRequested,
    Cancelled,
    DeployBackend,
    DeployResult,
    DeployStarted,
    DoneForNow,
    Error,
    GitTag,
    GitTagsResult,
    HumanResponse,
    ListGitTags,
    RequestMoreInformation,
    UserMessage,
)
from bot.core.policy import Policy, args_hash
from bot.core.thread import Thread
from bot.runtime.clock import utcnow

POLICY = Policy()
NOW = utcnow()


def thread(*events) -> Thread:
    return Thread("t1", tuple(events))


def ask() -> UserMessage:
    return UserMessage(text="deploy the latest backend to production", user="alice")


def prod_deploy() -> DeployBackend:
    return DeployBackend(tag="v1.2.3", environment="production")


def request_for(step: DeployBackend, expires=NOW + timedelta(hours=1)) -> ApprovalRequested:
    return ApprovalRequested(
        step_id=step.id, thread_id="t1", args_hash=args_hash("backend", step.tag, step.environment),
        service="backend", tag=step.tag, commit="abc", environment=step.environment,
        requested_by="alice", expires_at=expires,
    )


def test_a_new_message_asks_for_a_decision():
    t = thread(ask())
    assert next_action(t, POLICY) == Decide()
    assert t.status() == "running"


def test_a_read_only_step_without_result_runs_again_after_a_crash():
    step = ListGitTags()
    assert next_action(thread(ask(), step), POLICY) == RunTags(step)
    done = thread(ask(), step, GitTagsResult(step_id=step.id, tags=[GitTag(name="v1", commit="a")]))
    assert next_action(done, POLICY) == Decide()


def test_protected_deploy_pauses_between_choosing_and_running():
    step = prod_deploy()
    assert next_action(thread(ask(), step), POLICY) == AskApproval(step)
    request = request_for(step)
    waiting = thread(ask(), step, request)
    assert next_action(waiting, POLICY) == Stop("waiting_for_approval")
    assert waiting.status() == "waiting_for_approval" and waiting.pending_approval() == request


def test_approved_deploy_runs_and_a_recorded_start_is_never_rerun_blindly():
    step = prod_deploy()
    request = request_for(step)
    yes = HumanResponse(user="bob", approval_id=request.approval_id, approve=True)
    assert next_action(thread(ask(), step, request, yes), POLICY) == RunDeploy(step, request, yes)
    started = DeployStarted(step_id=step.id, deploy_id="t1-x")
    crashed = thread(ask(), step, request, yes, started)
    assert next_action(crashed, POLICY) == Interrupted(step, started, request, yes)
    assert crashed.status() == "running"


def test_unprotected_deploy_runs_at_once():
    step = DeployBackend(tag="v1", environment="staging")
    assert next_action(thread(ask(), step), POLICY) == RunDeploy(step)


def test_rejection_closes_the_step_and_the_model_replans():
    step = prod_deploy()
    request = request_for(step)
    no = HumanResponse(user="bob", text="not today", approval_id=request.approval_id, approve=False)
    t = thread(ask(), step, request, no)
    assert next_action(t, POLICY) == Decide()
    assert t.pending_approval() is None
    assert t.latest_instruction()[:4] == (3, "not today", "bob", "bob")


def test_only_the_first_decision_counts():
    step = prod_deploy()
    request = request_for(step)
    first = HumanResponse(user="bob", approval_id=request.approval_id, approve=False)
    second = HumanResponse(user="eve", approval_id=request.approval_id, approve=True)
    assert thread(ask(), step, request, first, second).decision_for(request.approval_id) == first


def test_waiting_for_a_human_and_done_are_pauses_until_someone_writes():
    question = RequestMoreInformation(message="which env?")
    assert next_action(thread(ask(), question), POLICY) == Stop("waiting_for_human")
    answered = thread(ask(), question, HumanResponse(user="alice", text="staging"))
    assert next_action(answered, POLICY) == Decide()
    done = thread(ask(), DoneForNow(message="ok"))
    assert done.status() == "done" and next_action(done, POLICY) == Stop("done")


def test_three_errors_in_a_row_escalate_and_a_result_resets_the_count():
    errors = [Error(kind="llm", message=f"bad {i}") for i in range(3)]
    t = thread(ask(), *errors)
    assert t.consecutive_errors() == 3
    action = next_action(t, POLICY)
    assert isinstance(action, Escalate) and "bad 2" in action.message
    step = ListGitTags()
    reset = thread(ask(), errors[0], errors[1], step, GitTagsResult(step_id=step.id, tags=[]), errors[2])
    assert reset.consecutive_errors() == 1


def test_step_budget_per_run_escalates():
    policy = Policy(max_steps=3)
    steps = []
    for _ in range(3):
        s = ListGitTags()
        steps += [s, GitTagsResult(step_id=s.id, tags=[])]
    action = next_action(thread(ask(), *steps), policy)
    assert isinstance(action, Escalate) and "3 steps" in action.message
    again = thread(ask(), *steps, HumanResponse(user="alice", text="go on"))
    assert next_action(again, policy) == Decide()


def test_cancelled_and_failed():
    step = prod_deploy()
    cancelled = thread(ask(), step, request_for(step), Cancelled(user="alice"))
    assert cancelled.status() == "cancelled" and cancelled.pending_approval() is None
    assert next_action(cancelled, POLICY) == Stop("cancelled")
    failed = thread(ask(), Error(kind="internal", message="bug"))
    assert failed.status() == "failed" and next_action(failed, POLICY) == Stop("failed")


@pytest.mark.parametrize("ok", [True, False])
def test_a_deploy_result_closes_the_step(ok):
    step = DeployBackend(tag="v1", environment="staging")
    result = DeployResult(step_id=step.id, deploy_id="d", service="backend", tag="v1", environment="staging", ok=ok)
    t = thread(ask(), step, DeployStarted(step_id=step.id, deploy_id="d"), result)
    assert t.outcome(step) == result and next_action(t, POLICY) == Decide()


def test_a_failed_delivery_does_not_hide_a_failed_thread():
    from bot.core.events import DeliveryFailed

    failed = thread(
        ask(), Error(kind="internal", message="bug"), DeliveryFailed(channel="email", to="a@x", reason="down")
    )
    assert failed.status() == "failed" and next_action(failed, POLICY) == Stop("failed")
