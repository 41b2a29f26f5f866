"""What GitHub Deployments is told when a thread's deploy ends, worked out from the thread alone."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from bot.adapters.channels.github.deployments import updates
from bot.core.events import (
    ApprovalExpired,
    ApprovalRequested,
    Cancelled,
    DeployService,
    DeployStarted,
    Error,
    HumanResponse,
)
from bot.core.thread import Thread


def test_each_closing_event_maps_to_its_state():
    at = datetime(2026, 11, 23, 14, 0, tzinfo=UTC)
    step = DeployService(service="mobile", tag="v3.0.0", environment="production", at=at)
    asked = ApprovalRequested(step_id=step.id, thread_id="t1", args_hash="h", service="mobile", tag="v3.0.0",
                              commit="c" * 40, environment="production", requested_by="alice",
                              expires_at=at + timedelta(hours=1), required=2, at=at)
    waiting = Thread("t1", (step, asked))

    def states(thread: Thread, event) -> list[tuple[str, bool, str]]:
        return [(u.state, u.create, u.description) for u in updates(thread.extended([event]), event)]

    [(state, create, said)] = states(waiting, ApprovalExpired(approval_id=asked.approval_id, step_id=step.id,
                                                              expires_at=asked.expires_at))
    assert (state, create, said) == ("inactive", False, "mobile v3.0.0: approval expired")
    assert states(waiting, Cancelled(user="carol", person="carol")) == [
        ("inactive", False, "mobile v3.0.0: cancelled by carol")]
    # One approval of two closes nothing; a rejection after the expiry is the expiry.
    assert states(waiting, HumanResponse(user="bob", person="bob", approval_id=asked.approval_id, approve=True)) == []
    late = HumanResponse(user="bob", person="bob", approval_id=asked.approval_id, approve=False,
                         at=asked.expires_at + timedelta(minutes=1))
    assert states(waiting, late) == [("inactive", False, "mobile v3.0.0: approval expired")]
    # An error before the deploy started closes only a deployment that exists; after it, one is made.
    [(state, create, _)] = states(waiting, Error(kind="checks", step_id=step.id, message="ci/build is failing"))
    assert (state, create) == ("error", False)
    started = waiting.extended([DeployStarted(step_id=step.id, deploy_id=f"t1-{step.id}", commit="c" * 40)])
    secret = "deploy log with TOKEN=hunter2 " * 10
    [(state, create, said)] = states(started, Error(kind="interrupted", step_id=step.id, message=secret))
    assert (state, create) == ("error", True) and "hunter2" not in said and "interrupted" in said
    assert [u.commit for u in updates(started, started.events[-1])] == ["c" * 40]
