"""Where an approval stands (bot/core/standing.py), the one derivation every channel shows:
open, approved, rejected, expired (recorded, or lapsed by now), withdrawn; the approvals
given and needed, who may still decide (the authority's answer), its escalation and expiry."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from bot.core import authority, standing
from bot.core.events import (
    ApprovalEscalated,
    ApprovalExpired,
    ApprovalReminded,
    ApprovalRequested,
    ApprovalRulesChanged,
    Cancelled,
    DeployService,
    HumanResponse,
    UserMessage,
)
from bot.core.people import Written
from bot.core.policy import Policy, Timing
from bot.core.thread import Thread
from tests.people_kinds import a_person, directory_of

NOW = datetime(2026, 11, 27, 12, 0, tzinfo=UTC)
PEOPLE = directory_of([a_person(name, (), (f"{name}@example.com",)) for name in ("alice", "bob", "carol", "dave")])
POLICY = Policy.configured(
    environments=frozenset({"production"}), directory=PEOPLE,
    written={"production": Written(approvers=("alice", "bob", "carol"), protected=True, approver_must_differ=True)},
    timing={"production": Timing(required=2)},
)


def asked(required: int = 2) -> Thread:
    ask = UserMessage(text="deploy backend v1.2.3 to production", user="carol", person="carol", at=NOW)
    step = DeployService(service="backend", tag="v1.2.3", environment="production", at=NOW)
    request = ApprovalRequested(
        step_id=step.id, thread_id="t1", args_hash="h", service="backend", tag="v1.2.3", commit="c" * 40,
        environment="production", requested_by="carol", expires_at=NOW + timedelta(hours=1), at=NOW,
        required=required, approvers=["alice", "bob", "carol"],
    )
    return Thread("t1", (ask, step, request))


def request_of(thread: Thread) -> ApprovalRequested:
    return next(thread.of(ApprovalRequested))


def decided(thread: Thread, by: str, approve: bool, minutes: int = 5, text: str = "") -> Thread:
    return thread.extended([HumanResponse(text=text, user=by, person=by, approval_id=request_of(thread).approval_id,
                                          approve=approve, at=NOW + timedelta(minutes=minutes))])


def test_an_open_request_names_who_may_still_decide_never_who_asked():
    thread = asked()
    found = standing.of(thread, request_of(thread), POLICY, NOW)
    assert (found.state, found.decision, found.given, found.required) == ("open", None, (), 2)
    assert found.deciders == ("alice", "bob")  # carol asked, and approvers must differ here
    assert found.deciders == tuple(authority.deciders(POLICY, thread, request_of(thread)))
    assert not found.closed and found.expires_at == NOW + timedelta(hours=1) and found.escalated_to == ()
    assert standing.of(thread, request_of(thread)).deciders is None  # no policy: not asked


def test_one_of_several_approvals_counts_and_leaves_the_others_to_decide():
    thread = decided(asked(), "alice", True)
    found = standing.of(thread, request_of(thread), POLICY, NOW)
    assert found.state == "open" and [a.person for a in found.given] == ["alice"] and found.deciders == ("bob",)
    both = decided(thread, "bob", True, minutes=6)
    done = standing.of(both, request_of(both), POLICY, NOW)
    assert done.state == "approved" and done.decision is both.events[-1] and done.closed
    assert [a.person for a in done.given] == ["alice", "bob"]


def test_one_rejection_rejects():
    thread = decided(decided(asked(), "alice", True), "bob", False, minutes=6, text="not today")
    found = standing.of(thread, request_of(thread), POLICY, NOW)
    assert found.state == "rejected" and found.decision is not None and found.decision.text == "not today"


def test_a_lapsed_request_is_expired_by_now_and_a_recorded_expiry_without_a_clock():
    thread = asked()
    later = NOW + timedelta(hours=1, seconds=1)
    assert standing.of(thread, request_of(thread), POLICY, later).state == "expired"
    assert standing.of(thread, request_of(thread)).state == "open"  # no clock: a lapse is not seen
    request = request_of(thread)
    expired = thread.extended([ApprovalExpired(approval_id=request.approval_id, step_id=request.step_id,
                                               expires_at=request.expires_at, at=later)])
    found = standing.of(expired, request)
    assert found.state == "expired" and found.expiry is not None and found.closed


def test_escalation_reminders_and_rules_that_changed_since():
    thread = asked(required=1)
    approval_id = request_of(thread).approval_id
    thread = thread.extended([
        ApprovalReminded(approval_id=approval_id, count=1, at=NOW + timedelta(minutes=15)),
        ApprovalEscalated(approval_id=approval_id, to=["dave"], at=NOW + timedelta(minutes=31)),
        ApprovalRulesChanged(approval_id=approval_id, required=2, approvers=["alice", "bob", "carol"]),
    ])
    found = standing.of(thread, request_of(thread), POLICY, NOW + timedelta(minutes=32))
    assert found.reminders == 1 and found.escalated_to == ("dave",) and found.required == 2
    assert found.deciders == ("alice", "bob", "dave")  # whoever it was escalated to may decide too


def test_a_request_nobody_decided_that_no_longer_waits_is_withdrawn_and_an_unknown_id_is_none():
    thread = asked().extended([Cancelled(user="carol", person="carol", at=NOW + timedelta(minutes=1))])
    found = standing.of(thread, request_of(thread), POLICY, NOW)
    assert found.state == "withdrawn" and not found.closed  # nothing decided it, nor expired it
    assert standing.find(thread, "nope") is None
    assert standing.find(thread, request_of(thread).approval_id) == standing.of(thread, request_of(thread))
