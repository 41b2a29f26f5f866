from __future__ import annotations

from datetime import timedelta

from bot.clock import utcnow
from bot.events import ApprovalRequested, DeployBackend, HumanResponse
from bot.policy import Policy, args_hash, parse_approvers

NOW = utcnow()


def request(environment="production", requested_by="alice", **kw) -> ApprovalRequested:
    return ApprovalRequested(
        step_id="s", thread_id="t", args_hash=args_hash("backend", "v1", environment), service="backend",
        tag="v1", commit="abc", environment=environment, requested_by=requested_by,
        expires_at=kw.get("expires_at", NOW + timedelta(hours=1)),
    )


def test_parse_approvers_global_and_per_environment():
    assert parse_approvers("U1, U2") == {"*": {"U1", "U2"}}
    assert parse_approvers("production:U1,U2;staging:*") == {"production": {"U1", "U2"}, "staging": {"*"}}


def test_who_may_decide():
    policy = Policy(approvers=parse_approvers("production:bob"), approver_must_differ=True)
    assert policy.may_decide("bob", request()) is None
    assert "not an approver" in policy.may_decide("eve", request())
    assert "not an approver" in policy.may_decide("bob", request("staging"))  # no rule, no default
    assert "cannot also approve" in policy.may_decide("bob", request(requested_by="bob"))
    assert "bot" in Policy().may_decide("deploybot", request())


def test_invalid_deploys():
    policy = Policy()
    assert "unknown environment 'prod'" in policy.invalid_deploy(DeployBackend(tag="v1", environment="prod"))
    assert "not a valid git tag" in policy.invalid_deploy(DeployBackend(tag="--upload-pack=x", environment="staging"))
    assert policy.invalid_deploy(DeployBackend(tag="v1.2.3", environment="staging")) is None


def test_recheck_right_before_deploying():
    policy = Policy()
    step = DeployBackend(tag="v1", environment="production")
    yes = HumanResponse(user="bob", approval_id="a", approve=True, at=NOW)
    assert policy.recheck("t", step, request(), yes, NOW) is None
    assert "forked" in policy.recheck("other", step, request(), yes, NOW)
    assert "expired" in policy.recheck("t", step, request(expires_at=NOW - timedelta(seconds=1)), yes, NOW)
    assert "expired" in policy.recheck("t", step, request(), yes, NOW + timedelta(hours=2))
    other = DeployBackend(tag="v2", environment="production")
    assert "does not match" in policy.recheck("t", other, request(), yes, NOW)


def test_nobody_who_shaped_the_request_may_approve_it_when_approvers_must_differ():
    policy = Policy(approver_must_differ=True)
    r = request(requested_by="carol").model_copy(update={"requesters": ["alice", "carol"]})
    assert "cannot also approve" in policy.may_decide("alice", r)  # she asked first; carol only answered
    assert policy.may_decide("bob", r) is None
