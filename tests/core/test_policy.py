from __future__ import annotations

from datetime import timedelta

import pytest

from bot.core.events import ApprovalRequested, DeployBackend, HumanResponse
from bot.core.people import SERVICE, Identity, Written
from bot.core.policy import Policy, PolicyError, args_hash, lock_owner, parse_approvers
from bot.runtime.clock import utcnow
from tests.core.asking import email_approvers, may_decide, may_lock, may_unlock
from tests.people_kinds import KINDS, a_person, directory_of

NOW = utcnow()
PEOPLE = directory_of(
    [a_person("alice", ("UALICE",), ("alice@example.com",)), a_person("bob", ("UBOB",), ("bob@example.com",)),
     a_person("carol", (), ("carol@example.com",)), a_person("dave", ("UDAVE",))],
    {"sre": ["bob", "carol"]},
)
ALICE, BOB, CAROL, DAVE = (PEOPLE.by_name(n) for n in ("alice", "bob", "carol", "dave"))


def team(**production: object) -> Policy:
    """The sre group approves production (and locks it, unless `may_lock` says who)."""
    written = {"production": Written(approvers=("group:sre",), **production), "staging": Written(approvers=("*",))}
    return Policy.configured(directory=PEOPLE, written=written)  # type: ignore[arg-type]


def request(environment="production", requested_by="alice", **kw) -> ApprovalRequested:
    return ApprovalRequested(
        step_id="s", thread_id="t", args_hash=args_hash("backend", "v1", environment), service="backend",
        tag="v1", commit="abc", environment=environment, requested_by=requested_by,
        expires_at=kw.get("expires_at", NOW + timedelta(hours=1)),
    )


def test_parse_approvers_global_and_per_environment():
    assert parse_approvers("U1, U2") == {"*": {"U1", "U2"}}
    assert parse_approvers("production:U1,U2;staging:*") == {"production": {"U1", "U2"}, "staging": {"*"}}


def test_who_may_decide_is_a_person_by_any_channel():
    policy = team(approver_must_differ=True)
    assert may_decide(policy, PEOPLE.by("slack", "UBOB"), request()) is None
    assert may_decide(policy, PEOPLE.by("email", "Bob <BOB@example.com>"), request()) is None
    assert may_decide(policy, CAROL, request()) is None
    assert "dave is not an approver for production" in may_decide(policy, PEOPLE.by("slack", "UDAVE"), request())
    assert "not an approver" in may_decide(policy, PEOPLE.by("slack", "U999"), request())  # someone unknown
    assert "cannot also approve" in \
        may_decide(policy, PEOPLE.by("email", "bob@example.com"), request(requested_by="bob"))
    assert "bot" in may_decide(Policy(), Identity(None, "name", "deploybot"), request())


def test_the_shared_api_token_never_decides_locks_or_unlocks_even_where_anyone_may():
    for policy in (Policy(), team()):
        assert "personal token" in may_decide(policy, SERVICE, request("staging"))
        assert "personal token" in may_lock(policy, SERVICE, "staging")
        assert "personal token" in may_unlock(policy, SERVICE, "staging", lock_owner(SERVICE))


def test_nobody_who_shaped_the_request_may_approve_it_by_any_channel():
    policy = team(approver_must_differ=True)
    r = request(requested_by="carol").model_copy(update={"requesters": ["bob", "carol"]})
    assert "cannot also approve" in may_decide(policy, PEOPLE.by("email", "bob@example.com"), r)  # he asked first
    assert "cannot also approve" in may_decide(policy, PEOPLE.by("email", "carol@example.com"), r)
    strict_open = Policy(approver_must_differ=True)
    assert may_decide(strict_open, PEOPLE.by("slack", "U8"), request(requested_by="slack:U9")) is None
    assert may_decide(strict_open, PEOPLE.by("slack", "U9"), request(requested_by="slack:U9")) is not None


def test_an_old_thread_s_raw_requesters_still_count():
    policy = team(approver_must_differ=True)
    # Written before people were known: the Slack id bob asked with is bob, by email too.
    old = request(requested_by="UBOB").model_copy(update={"requesters": ["UBOB"]})
    assert "cannot also approve" in may_decide(policy, PEOPLE.by("email", "bob@example.com"), old)
    assert "cannot also approve" in may_decide(policy, PEOPLE.by("slack", "UBOB"), old)
    assert may_decide(policy, CAROL, old) is None


def test_open_mode_lets_anyone_approve_and_lock_and_trusts_names():
    policy = Policy()
    assert policy.open_mode and policy.directory.by_name("zed").person == "zed"  # the CLI's --user
    assert may_decide(policy, Identity(None, "slack", "U9"), request()) is None
    assert may_lock(policy, policy.directory.by_name("zed"), "production") is None
    assert may_unlock(policy, policy.directory.by_name("zed"), "production", "manual:yan") is None


def test_who_may_lock_defaults_to_the_approvers_and_refusals_name_who_can():
    policy = team()
    assert may_lock(policy, PEOPLE.by("slack", "UBOB"), "production") is None
    assert may_lock(policy, DAVE, "production") == "dave may not lock production; the sre group may"
    assert (may_lock(policy, PEOPLE.by("slack", "U999"), "production") ==
        "U999 may not lock production; the sre group may")
    assert may_lock(policy, PEOPLE.by("email", "stranger@example.com"), "staging") is None  # `*` written for staging
    assert may_lock(team(may_lock=("dave",)), DAVE, "production") is None
    assert may_lock(team(may_lock=("dave",)), BOB, "production") == "bob may not lock production; dave may"


def test_whoever_locked_may_unlock_their_own_lock_and_whoever_may_lock_may_unlock_any():
    policy = team(may_lock=("dave",))
    assert may_unlock(policy, BOB, "production", lock_owner(BOB)) is None  # bob locked it before may_lock
    assert may_unlock(policy, PEOPLE.by("slack", "UBOB"), "production", lock_owner(BOB)) is None  # by any channel
    assert may_unlock(policy, DAVE, "production", lock_owner(BOB)) is None
    assert may_unlock(policy, DAVE, "production", "thread-1-step") is None  # a stuck deploy's lock
    assert may_unlock(policy, CAROL, "production", lock_owner(BOB)) == (
        'carol may not unlock production; whoever locked it may, and dave may take it over: '
        '"unlock production --force: REASON"'
    )
    stranger = PEOPLE.by("slack", "U999")  # unknown: never unlocks where people are named, own lock or not
    assert may_unlock(policy, stranger, "production", lock_owner(stranger)) is not None
    assert may_unlock(Policy(), stranger, "production", lock_owner(stranger)) is None  # open mode


def test_approval_emails_go_to_each_approver_s_addresses():
    policy = Policy.configured(
        directory=PEOPLE, written={"production": Written(approvers=("group:sre", "dave"))},
        listed={"email": "staging:ops@example.com"}, normalisers=KINDS,
    )
    assert email_approvers(policy, "production") == [
        ("bob", "bob@example.com"), ("carol", "carol@example.com"),  # dave has no address
    ]
    assert email_approvers(policy, "staging") == [(None, "ops@example.com")]
    assert email_approvers(Policy(), "production") == []  # anyone is nobody's address


def test_fail_closed_approver_emails_alone_are_exactly_those():
    policy = Policy.configured(listed={"email": "production:alice@example.com"}, normalisers=KINDS)
    assert not policy.open_mode and policy.rules_for("production").approvers == {"email:alice@example.com"}
    assert may_decide(policy, Identity(None, "email", "alice@example.com"), request()) is None
    for anyone_else in (Identity(None, "slack", "UALICE"), Identity(None, "email", "eve@example.com")):
        assert "not an approver" in may_decide(policy, anyone_else, request())
        assert may_lock(policy, anyone_else, "production") is not None
    assert "not an approver" in may_decide(policy, Identity(None, "name", "alice"), request())


def test_a_protected_environment_without_approvers_is_refused_once_anything_is_configured():
    with pytest.raises(PolicyError) as e:
        Policy.configured(listed={"slack": "staging:U1"}, normalisers=KINDS)
    assert e.value.problems == [
        "production is protected but has no approvers: list them under [environments.production] "
        "approvers in deploybot.toml, or in APPROVERS / APPROVER_EMAILS"
    ]
    with pytest.raises(PolicyError):
        Policy.configured(directory=PEOPLE)  # a people file alone
    assert Policy.configured().open_mode  # nothing at all: open mode



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


def test_raw_ids_of_one_kind_are_one_account_each_whichever_kind():
    """Two approvals from raw ids of one channel are two accounts, for any kind; raw ids of two
    kinds (a chat id and an address) could be one person."""
    from bot.core.policy import _one_per_person

    assert _one_per_person(frozenset({"chat:u-1", "chat:u-2"}), None)
    assert _one_per_person(frozenset({"slack:U1", "slack:U2"}), None)
    assert _one_per_person(frozenset({"email:a@x.example", "email:b@x.example"}), None)
    assert not _one_per_person(frozenset({"chat:u-1", "slack:U1"}), None)
    assert not _one_per_person(frozenset({"chat:u-1", "*"}), None)
    assert not _one_per_person(frozenset({"chat:u-1", "alice"}), None)  # a name nobody is, beside an id
