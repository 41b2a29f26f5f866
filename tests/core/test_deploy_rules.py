"""The deploy rules (bot/core/deploy_rules.py): the order they are asked in, each rule alone
over facts built here, what "deploy anyway" and an automatic rollback pass, and a new rule
added by extending the list (a change ticket, test-only) through the deploy path and the
console's preview alike."""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta

from bot.adapters.http.console import offering
from bot.core import deploy_rules, wording
from bot.core.catalog import Catalog, Service
from bot.core.deploy_rules import Facts, Refusal
from bot.core.events import DeployService, UserMessage, identity_of, principal_of
from bot.core.freeze_windows import one_off, stop_the_line
from bot.core.people import Written
from bot.core.policy import Policy
from bot.core.promotion import Order, Promotion
from bot.core.thread import Instruction, Thread
from bot.runtime.deploying import Deploying
from bot.runtime.ports import Check, DeployRecord
from bot.testing.memory import MemoryDeployer, MemoryEnvironments
from tests.people_kinds import a_person, directory_of

NOW = datetime(2026, 11, 27, 12, 0, tzinfo=UTC)
COMMIT = "c" * 40
PEOPLE = directory_of([a_person("alice", (), ("alice@example.com",)), a_person("bob", (), ("bob@example.com",))])
POLICY = replace(
    Policy.configured(
        environments=frozenset({"staging", "production"}), directory=PEOPLE,
        written={"production": Written(approvers=("alice",), protected=True), "staging": Written(approvers=("*",))},
        required_checks=frozenset({"production"}), catalog=Catalog.of([Service("api")]),
    ),
    promotion=Promotion(Order(("staging", "production"))),
)
STEP = DeployService(service="api", tag="v1.4.0", environment="production", at=NOW - timedelta(minutes=5))


def passed_staging(commit: str = COMMIT, minutes: int = 60) -> DeployRecord:
    return DeployRecord("staging", "api", "v1.4.0", commit, True, NOW - timedelta(minutes=minutes), None,
                        "t-old", f"t-old-{commit[:4]}")


def facts(**given: object) -> Facts:
    """Facts under which every rule lets the deploy go; `given` changes some."""
    values: dict[str, object] = {
        "policy": POLICY, "step": STEP, "commit": COMMIT, "now": NOW, "previous": [passed_staging()],
        "checks": [Check("build", "success")], **given,
    }
    return Facts(**values)  # type: ignore[arg-type]


def said_by(name: str, text: str = "deploy api v1.4.0 to production") -> Instruction:
    message = UserMessage(text=text, user=name, person=name, via="session", at=NOW - timedelta(minutes=6))
    return Instruction(0, message.text, message.user, principal_of(message), identity_of(message))


def forced(by: str) -> DeployService:
    return STEP.model_copy(update={"force": "hotfix", "forced_by": by})


FROZEN = one_off("production", NOW - timedelta(hours=1), NOW + timedelta(hours=2), reason="release week")


def test_the_rules_are_asked_in_todays_order():
    assert deploy_rules.RULES == (
        deploy_rules.rollback_still_on, deploy_rules.deploy_anyway_holds, deploy_rules.stop_the_line_since_anyway,
        deploy_rules.freeze, deploy_rules.promotion_order, deploy_rules.ci_checks,
    )
    assert deploy_rules.first(facts()) is None and deploy_rules.every(facts()) == []


def test_the_first_refusal_wins_and_the_preview_sees_every_one():
    stopped = facts(freezes=(FROZEN,), previous=[], checks=[Check("build", "failure")])
    assert [r.kind for r in deploy_rules.every(stopped)] == ["frozen", "promotion", "checks"]
    assert deploy_rules.first(stopped) == deploy_rules.every(stopped)[0]
    unpromoted = replace(stopped, freezes=())
    assert deploy_rules.first(unpromoted).kind == "promotion"  # type: ignore[union-attr]


def test_a_rollback_must_still_replace_what_is_on():
    rollback = STEP.model_copy(update={"rollback_of": "t1-s1", "rollback_from": "v1.5.0"})
    on_now = replace(passed_staging(), environment="production", tag="v1.6.0", deploy_id="t2-s2")
    refused = deploy_rules.rollback_still_on(facts(step=rollback, current=on_now))
    assert refused == Refusal("recheck", wording.not_deploying(
        wording.rollback_overtaken("api", "v1.6.0", "production", "v1.5.0")), anyway=False)
    assert deploy_rules.rollback_still_on(facts(step=rollback, current=replace(on_now, deploy_id="t1-s1"))) is None
    assert deploy_rules.rollback_still_on(facts(step=rollback)) is None  # nothing on: nothing overtaken
    assert deploy_rules.rollback_still_on(facts(current=on_now)) is None  # not a rollback


def test_deploy_anyway_holds_only_from_who_asked_for_it_and_may():
    assert deploy_rules.deploy_anyway_holds(facts()) is None  # nothing forced
    alice, bob = said_by("alice"), said_by("bob")
    ok = facts(step=forced("alice"), instruction=alice, asking=alice.identity)
    assert deploy_rules.deploy_anyway_holds(ok) is None
    not_theirs = facts(step=forced("alice"), instruction=bob, asking=bob.identity)
    assert deploy_rules.deploy_anyway_holds(not_theirs) == Refusal("validation", wording.nothing_to_force(), False)
    refused = deploy_rules.deploy_anyway_holds(facts(step=forced("bob"), instruction=bob, asking=bob.identity))
    assert refused is not None and not refused.anyway and refused.message == wording.may_not_force("bob", "production")


def test_a_freeze_stops_a_deploy_and_deploy_anyway_passes_it_but_not_a_stop_set_after_it():
    hit = facts(freezes=(FROZEN,))
    assert deploy_rules.freeze(hit) == Refusal(
        "frozen", wording.frozen("production", "release week", NOW + timedelta(hours=2), FROZEN.source))
    alice = said_by("alice")
    anyway = replace(hit, step=forced("alice"), instruction=alice, asking=alice.identity)
    assert deploy_rules.stop_the_line_since_anyway(anyway) is None and deploy_rules.first(anyway) is None
    before = stop_the_line("production", reason="weekend", set_by="bob", since=NOW - timedelta(hours=1))
    assert deploy_rules.first(replace(anyway, freezes=(before,))) is None  # what it overrode
    after = stop_the_line("production", reason="incident 4711", set_by="bob", since=NOW - timedelta(minutes=1))
    later = deploy_rules.first(replace(anyway, freezes=(before, after)))
    assert later is not None and later.kind == "frozen" and "incident 4711" in later.message and not later.anyway
    assert deploy_rules.stop_the_line_since_anyway(facts(freezes=(after,))) is None  # not forced: freeze says it


def test_the_promotion_order_refuses_a_commit_that_did_not_pass_the_environment_before():
    refused = deploy_rules.promotion_order(facts(previous=[]))
    assert refused is not None and refused.kind == "promotion" and refused.anyway
    assert refused.message.startswith("v1.4.0 (ccccccc) has not been deployed to staging")
    assert deploy_rules.promotion_order(facts()) is None
    faulty = replace(passed_staging(), faulty=True)
    assert "marked faulty in staging" in deploy_rules.promotion_order(facts(previous=[faulty])).message  # type: ignore[union-attr]
    rollback = STEP.model_copy(update={"rollback_of": "t1-s1"})
    assert deploy_rules.promotion_order(facts(step=rollback, previous=[])) is None  # exempt
    first = STEP.model_copy(update={"environment": "staging"})
    assert deploy_rules.promotion_order(facts(step=first, previous=[])) is None  # the first environment


def test_ci_checks_must_be_green_where_required():
    failing = deploy_rules.ci_checks(facts(checks=[Check("build", "failure"), Check("lint", "pending")]))
    assert failing == Refusal("checks", wording.checks_failing(COMMIT, ["build"], ["lint"]))
    unreadable = deploy_rules.ci_checks(facts(checks=None, checks_unreadable="GitHub answered 502"))
    assert unreadable == Refusal("checks", wording.checks_unreadable(COMMIT, "GitHub answered 502"))
    assert deploy_rules.ci_checks(facts(checks=None)) is None  # no CI to ask: a local repository
    staging = STEP.model_copy(update={"environment": "staging"})
    assert deploy_rules.ci_checks(facts(step=staging, checks=[Check("build", "failure")])) is None


def test_an_automatic_rollback_passes_what_deploy_anyway_passes_but_never_an_overtaken_rollback():
    rollback = STEP.model_copy(update={"rollback_of": "t1-s1"})
    stopped = facts(step=rollback, freezes=(FROZEN,), checks=[Check("build", "failure")])
    assert deploy_rules.first(stopped).kind == "frozen"  # type: ignore[union-attr]
    assert deploy_rules.first(stopped, automatic_rollback=True) is None
    on_now = replace(passed_staging(), environment="production", deploy_id="t2-s2")
    overtaken = deploy_rules.first(replace(stopped, current=on_now), automatic_rollback=True)
    assert overtaken is not None and overtaken.kind == "recheck"


def test_the_kinds_deploy_anyway_passes_are_those_of_the_rules_it_may_pass():
    stopped = facts(freezes=(FROZEN,), previous=[], checks=[Check("build", "failure")])
    assert {r.kind for r in deploy_rules.every(stopped) if r.anyway} == set(deploy_rules.ANYWAY_KINDS)


# --- a new rule: one function, its policy field, its setting (test-only) -------------------------


@dataclass(frozen=True)
class TicketPolicy(Policy):
    """The policy field a change-ticket rule would read (its setting would fill it)."""

    change_ticket: frozenset[str] = field(default_factory=frozenset)  # environments that need one


TICKET = re.compile(r"CHG-\d+")


def change_ticket(facts: Facts) -> Refusal | None:
    """Where the policy says so, a deploy's reason names its change ticket."""
    wanted = getattr(facts.policy, "change_ticket", frozenset())
    if facts.step.environment not in wanted or TICKET.search(facts.step.reason or ""):
        return None
    return Refusal("validation", f"a deploy to {facts.step.environment} names its change ticket (CHG-123)")


WITH_TICKETS = (*deploy_rules.RULES, change_ticket)


def ticketed() -> tuple[Deploying, MemoryEnvironments]:
    versions = MemoryDeployer({"v1.4.0": COMMIT})
    environments = MemoryEnvironments()
    policy = TicketPolicy(**{**vars(POLICY), "change_ticket": frozenset({"production"})})
    asyncio.run(environments.record(passed_staging()))
    return Deploying({"api": versions}, environments, environments, policy, rules=WITH_TICKETS), environments


def test_a_new_rule_is_one_function_added_to_the_list():
    policy = TicketPolicy(**{**vars(POLICY), "change_ticket": frozenset({"production"})})
    refused = deploy_rules.first(facts(policy=policy), WITH_TICKETS)
    assert refused is not None and "CHG-123" in refused.message
    named = STEP.model_copy(update={"reason": "CHG-4711 login fix"})
    assert deploy_rules.first(facts(policy=policy, step=named), WITH_TICKETS) is None
    assert deploy_rules.first(facts(policy=policy)) is None  # not in the shipped list


def test_the_deploy_path_and_the_preview_ask_the_extended_list():
    deploying, _ = ticketed()
    asking = PEOPLE.by_name("bob", via="session")
    step = offering.step_for(deploying, "api", "v1.4.0", "production")
    shown = asyncio.run(offering.preview(deploying, step, COMMIT, asking, NOW))
    assert [s.kind for s in shown.stops] == ["validation"] and "CHG-123" in shown.stops[0].message
    thread = Thread("t1", (UserMessage(text="deploy api v1.4.0 to production", user="bob", person="bob", at=NOW),
                           STEP.model_copy(update={"at": NOW})))
    asked = asyncio.run(deploying.ask_approval(thread, thread.events[1], NOW))  # type: ignore[arg-type]
    assert asked.type == "error" and "CHG-123" in asked.message  # type: ignore[union-attr]
