"""People: one identity across channels, groups, who may approve and lock, and the effective
approvers of the file and the variables together, failing closed."""

from __future__ import annotations

from dataclasses import replace

import pytest

from bot.core.people import (
    ANYONE,
    NAME,
    TOKEN,
    Directory,
    Identity,
    Person,
    Rules,
    Written,
    describe,
    resolve,
)
from bot.core.policy import parse_approvers
from tests.core.asking import may_approve, may_lock_under
from tests.people_kinds import KINDS, a_person, directory_of

SLACK, EMAIL = "slack", "email"  # the kinds of [people.NAME]'s ids

ALICE = a_person("alice", ("U012AB3CD",), ("alice@example.com", "Alice@Corp.Example.com"))
BOB = a_person("bob", ("U045EF6GH",), ("bob@example.com",))
CAROL = a_person("carol", (), ("carol@example.com",))


@pytest.fixture
def people() -> Directory:
    return directory_of([ALICE, BOB, CAROL], {"sre": ["alice", "bob"]})


def production(people: Directory, **changes: object) -> Rules:
    rules = Rules(
        protected=True, approvers=people.expand(["group:sre", "carol"]), environment="production",
        approvers_as_written=("group:sre", "carol"),
    )
    return replace(rules, **changes)


# --- identities ---------------------------------------------------------------------------------


def test_every_channel_finds_the_same_person(people):
    assert people.by("slack", "U012AB3CD") == Identity("alice", SLACK, "U012AB3CD")
    assert people.by("email", "alice@example.com") == Identity("alice", EMAIL, "alice@example.com")
    assert people.by("email", "Alice <ALICE@corp.example.com>") == Identity("alice", EMAIL, "alice@corp.example.com")
    assert people.by_name("alice", via=TOKEN, evidence="t1") == Identity("alice", TOKEN, "t1")
    assert people.by_name("alice") == Identity("alice", NAME, "alice")
    assert len({people.by("slack", "U012AB3CD").principal, people.by("email", "alice@corp.example.com").principal}) == 1


def test_strangers_are_unknown_and_keep_their_evidence(people):
    stranger = people.by("slack", "U999")
    assert stranger.person is None and not stranger.known
    assert stranger.principal == "slack:U999" and stranger.label == "U999"
    assert people.by("email", "Eve <eve@evil.example>").principal == "email:eve@evil.example"
    assert people.by_name("mallory", via=TOKEN, evidence="t9") == Identity(None, TOKEN, "t9")


def test_ids_are_by_kind_and_compare_as_their_channel_s_normaliser_says():
    """The core knows no channel: a kind is a name, and how its ids compare is handed in."""
    chat = Directory([Person("bob", {"chat": ("u-1",)}), Person("eve", {"pager": ("u-1",)})],
                     normalisers={"chat": lambda raw: raw.strip().lower()})
    assert chat.by("chat", " U-1 ") == Identity("bob", "chat", "u-1")
    assert chat.by("pager", " u-1 ") == Identity("eve", "pager", "u-1")  # no normaliser: trimmed, as written
    assert chat.by("pager", "U-1").person is None
    assert chat.by("chat", "u-2") == Identity(None, "chat", "u-2") and chat.kinds == ("chat", "pager")
    assert chat.person_named("U-1") == "bob"  # an id of any kind names its person
    with pytest.raises(ValueError, match="the chat id u-1 is both bob's and ann's"):
        Directory([Person("bob", {"chat": ("u-1",)}), Person("ann", {"chat": ("U-1",)})],
                  normalisers={"chat": str.lower})


def test_a_directory_refuses_shared_ids_and_odd_groups():
    with pytest.raises(ValueError, match="U1 is both alice's and bob's"):
        directory_of([a_person("alice", ("U1",)), a_person("bob", ("U1",))])
    with pytest.raises(ValueError, match="a@x.com is both"):
        directory_of([a_person("alice", email=("a@x.com",)), a_person("bob", email=("A@X.com",))])
    with pytest.raises(ValueError, match="not a person"):
        directory_of([ALICE], {"sre": ["alice", "group:ops"]})  # groups are flat
    with pytest.raises(ValueError, match="not a person"):
        directory_of([ALICE], {"sre": ["zed"]})
    with pytest.raises(ValueError, match="cannot name a person"):
        directory_of([ALICE, ALICE])


def test_expand_turns_groups_into_people_and_keeps_anyone(people):
    assert people.expand(["group:sre", "carol"]) == {"alice", "bob", "carol"}
    assert people.expand(["*", "carol"]) == {ANYONE, "carol"}
    assert people.expand([]) == frozenset()
    with pytest.raises(ValueError, match="no group ops"):
        people.expand(["group:ops"])
    with pytest.raises(ValueError, match="no such person"):
        people.expand(["U012AB3CD"])  # ids are not names


# --- approving ------------------------------------------------------------------------------------


def test_approvers_by_any_channel(people):
    rules = production(people)
    assert may_approve(people.by("slack", "U045EF6GH"), rules) is None  # bob, in sre
    assert may_approve(people.by("email", "carol@example.com"), rules) is None
    assert may_approve(people.by_name("alice", via=TOKEN, evidence="t1"), rules) is None


def test_unknown_people_never_approve_where_approvers_are_named(people):
    rules = production(people)
    why = may_approve(people.by("slack", "U999"), rules)
    assert why == "U999 is not an approver for production; the sre group or carol may approve"
    assert may_approve(people.by("email", "eve@evil.example"), rules) is not None
    assert may_approve(people.by_name("mallory"), rules) is not None
    assert may_approve(people.by_name("mallory"), production(people, approvers=frozenset())) is not None


def test_anyone_means_anyone_only_where_written(people):
    rules = production(people, approvers=people.expand(["*"]))
    assert may_approve(people.by("slack", "U999"), rules) is None
    assert may_approve(Identity(None, SLACK, ""), rules) is not None  # nobody at all
    assert may_approve(Identity(None, SLACK, "deploybot"), rules) == "the bot cannot decide on its own requests"


def test_a_requester_cannot_approve_by_another_channel(people):
    rules = production(people, approver_must_differ=True)
    asked_on_slack = [people.by("slack", "U012AB3CD")]
    why = may_approve(people.by("email", "alice@corp.example.com"), rules, asked_on_slack)
    assert why == "alice asked for this deploy and cannot also approve it"
    assert may_approve(people.by_name("alice", via=TOKEN, evidence="t1"), rules, asked_on_slack) is not None
    assert may_approve(people.by("slack", "U045EF6GH"), rules, asked_on_slack) is None  # bob may
    # Without the rule, a requester may approve their own deploy.
    assert may_approve(people.by("email", "alice@example.com"), production(people), asked_on_slack) is None


def test_strangers_who_asked_are_told_apart_by_their_ids(people):
    rules = production(people, approvers=frozenset({ANYONE}), approver_must_differ=True)
    assert may_approve(people.by("slack", "U8"), rules, [people.by("slack", "U9")]) is None
    assert may_approve(people.by("slack", "U9"), rules, [people.by("slack", "U9")]) is not None


# --- locking --------------------------------------------------------------------------------------


def test_whoever_may_approve_may_lock_by_default(people):
    rules = production(people)
    assert may_lock_under(people.by("email", "carol@example.com"), rules) is None
    assert (may_lock_under(people.by("slack", "U999"), rules) ==
        "U999 may not lock production; the sre group or carol may")


def test_may_lock_names_who_can(people):
    rules = production(people, may_lock=people.expand(["group:sre"]), may_lock_as_written=("group:sre",))
    assert may_lock_under(people.by("slack", "U012AB3CD"), rules) is None
    carol = people.by("email", "carol@example.com")
    assert may_lock_under(carol, rules) == "carol may not lock production; the sre group may"
    assert may_lock_under(people.by("slack", "U999"), rules) is not None
    assert may_lock_under(Identity(None, SLACK, "deploybot"), rules) is not None


def test_messages_list_people_when_nothing_was_written(people):
    rules = Rules(True, frozenset({"bob", "alice", "slack:U7"}))
    assert (may_lock_under(people.by("slack", "U999"), rules) ==
        "U999 may not lock this environment; alice, bob or U7 may")
    assert describe([]) == "nobody" and describe(["*"]) == "anyone"


# --- effective rules ------------------------------------------------------------------------------

ENVIRONMENTS = ("development", "staging", "production")


def test_nothing_configured_is_open_mode(people):
    result = resolve(ENVIRONMENTS, {"production"})
    assert result.open_mode and not result.problems
    assert result.approvers == {env: {ANYONE} for env in ENVIRONMENTS}
    assert may_approve(Identity(None, SLACK, "U999"), result.rules["production"]) is None
    assert may_lock_under(Identity(None, SLACK, "U999"), result.rules["staging"]) is None


def test_approver_emails_alone_are_exactly_those(people):
    result = resolve(ENVIRONMENTS, {"production"}, raw_approvers={"email": parse_approvers("Ops@Example.com")},
                     normalisers=KINDS)
    assert not result.open_mode and not result.problems
    assert result.approvers["production"] == {"email:ops@example.com"}  # no "*" joined in
    production = result.rules["production"]
    assert may_approve(Identity(None, EMAIL, "ops@example.com"), production) is None
    assert may_approve(Identity(None, SLACK, "U999"), production) is not None


def test_variables_and_the_file_add_up_per_environment(people):
    result = resolve(
        ENVIRONMENTS, {"production"}, directory=people,
        written={"production": Written(approvers=("carol",))},
        raw_approvers={"slack": parse_approvers("production:U012AB3CD,U777;staging:*"),
                       "email": parse_approvers("bob@example.com")},
    )
    assert not result.problems
    assert result.approvers == {
        "development": {"bob"},  # APPROVER_EMAILS' "*" entry
        "staging": {ANYONE, "bob"},
        "production": {"carol", "alice", "slack:U777", "bob"},  # ids of known people are people
    }
    assert may_approve(people.by("email", "alice@example.com"), result.rules["production"]) is None


def test_a_protected_environment_without_approvers_is_a_startup_error(people):
    result = resolve(ENVIRONMENTS, {"production"}, directory=people)  # a people file, no approvers
    assert not result.open_mode
    assert result.problems == (
        "production is protected but has no approvers: list them under [environments.production] approvers "
        "in deploybot.toml, or in APPROVERS / APPROVER_EMAILS",
    )
    assert result.approvers["production"] == frozenset() and result.approvers["staging"] == frozenset()
    only_staging = resolve(ENVIRONMENTS, {"production"}, raw_approvers={"slack": parse_approvers("staging:U1")})
    assert [p.split(" is ")[0] for p in only_staging.problems] == ["production"]


def test_approver_lists_that_name_nobody_are_startup_errors(people):
    empty = resolve(ENVIRONMENTS, {"production"}, raw_approvers={"slack": parse_approvers("production:")})
    assert empty.problems == ("production is protected but its list of approvers is empty",)
    lonely = directory_of([ALICE], {"nobody-yet": []})
    result = resolve(["production"], {"production"}, directory=lonely,
                     written={"production": Written(approvers=("group:nobody-yet",))})
    assert result.problems == ("production is protected but its approvers (the nobody-yet group) name nobody",)


def test_unknown_references_fail_closed(people):
    result = resolve(["production"], {"production"}, directory=people,
                     written={"production": Written(approvers=("zed",), may_lock=("group:ops",))})
    assert result.approvers["production"] == frozenset() and result.rules["production"].lockers == frozenset()
    assert any("zed" in p for p in result.problems) and any("group:ops" in p for p in result.problems)


def test_the_file_overrides_protection_and_must_differ_per_environment(people):
    result = resolve(
        ENVIRONMENTS, {"production"}, directory=people, approver_must_differ=True,
        written={
            "staging": Written(protected=True, approvers=("group:sre",), approver_must_differ=False),
            "production": Written(protected=False, may_lock=("carol",)),
            "qa": Written(approvers=("*",)),
        },
    )
    assert not result.problems
    rules = result.rules
    assert list(rules) == [*ENVIRONMENTS, "qa"]
    assert rules["staging"].protected and not rules["staging"].approver_must_differ
    assert not rules["production"].protected and rules["production"].approver_must_differ
    assert rules["production"].approvers == frozenset() and rules["production"].lockers == {"carol"}
    assert rules["qa"].approvers == {ANYONE} and rules["qa"].approvers_as_written == ("*",)
    assert rules["staging"].lockers == {"alice", "bob"}  # may_lock defaults to the approvers
    assert (may_lock_under(people.by("slack", "U999"), rules["staging"]) ==
        "U999 may not lock staging; the sre group may")


def test_one_person_one_name_with_the_channel_as_a_tag():
    from bot.core.people import Shown, one_name, shown

    assert shown("alice") == Shown("alice")
    assert shown("api:alice") == Shown("alice", "api")  # the shared token said "alice": a claim, tagged
    assert shown("slack:U9") == Shown("U9", "slack")
    assert shown("agent:claude-code") == Shown("claude-code", "agent")
    assert shown("claude-code (agent of alice)") == Shown("claude-code (agent of alice)")  # words, not a principal
    assert shown("group:sre") == Shown("group:sre") and shown("*") == Shown("*")
    assert (one_name("api:carol"), one_name("bob")) == ("carol (api)", "bob")


def test_any_channel_s_raw_id_is_tagged_with_its_kind_not_only_the_core_s_known_ones():
    from bot.core.people import Shown, identity_for, shown

    assert shown("github:octocat") == Shown("octocat", "github")  # a gated deployment's creator nobody lists
    assert shown("chat:u-1") == Shown("u-1", "chat")  # a channel the core was never told of
    assert identity_for("chat:u-1") == Identity(None, "chat", "u-1")
    assert describe(["chat:u-1", "token:t1"]) == "u-1 or token:t1"  # a channel's id as itself; the core's tagged
