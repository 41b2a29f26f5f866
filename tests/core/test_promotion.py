"""The promotion rule (bot/core/promotion.py), its settings and its words: pure."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from bot.config.settings_file import FileConfig, ServiceEntry
from bot.core import commands, prompt, wording
from bot.core.catalog import Catalog, Service
from bot.core.events import DeployService, Error, Promote, UserMessage
from bot.core.promotion import Order, Promotion, candidates, exempt, newest_passed, parse_soak, refusal
from bot.core.thread import Thread
from bot.runtime.agent import _blocked_deploy
from bot.runtime.ports import DeployRecord

NOW = datetime(2026, 11, 27, 12, 0, tzinfo=UTC)
SOAK = timedelta(minutes=30)


def deployed(commit: str, minutes_ago: float, ok: bool = True, faulty: bool = False,
             verified: bool = False, tag: str = "") -> DeployRecord:
    at = NOW - timedelta(minutes=minutes_ago)
    return DeployRecord("staging", "api", tag or f"v-{commit}", commit, ok, at, None, "t", f"d-{commit}",
                        faulty=faulty, verified_at=at if verified else None)


def test_a_commit_never_deployed_before_is_refused_naming_the_newest_that_was():
    records = [deployed("bbb", 200), deployed("aaa", 300)]
    why = refusal("ccc", "staging", records, NOW, SOAK, verify=False)
    assert why is not None and why.missing == "not_deployed" and why.newest is records[0]
    text = wording.not_promoted("v1.4.2", "abc1234ff", "staging", why.missing, SOAK, why.deployed_at,
                                ("v1.4.1", NOW - timedelta(hours=2)), NOW)
    assert text.startswith("v1.4.2 (abc1234) has not been deployed to staging; the newest commit that has is "
                           "v1.4.1, 2 hours ago.")
    assert refusal("ccc", "staging", [], NOW, SOAK, verify=False).newest is None  # type: ignore[union-attr]


def test_soak_edges():
    assert refusal("aaa", "staging", [deployed("aaa", 30)], NOW, SOAK, verify=False) is None  # exactly the soak
    early = refusal("aaa", "staging", [deployed("aaa", 29.9)], NOW, SOAK, verify=False)
    assert early is not None and early.missing == "soaking" and early.deployed_at == NOW - timedelta(minutes=29.9)
    assert "less than the 30 minutes it must soak there" in wording.not_promoted(
        "v1", "aaa", "staging", early.missing, SOAK, early.deployed_at, None, NOW)
    assert refusal("aaa", "staging", [deployed("aaa", 0)], NOW, timedelta(0), verify=False) is None


def test_failed_and_faulty_deploys_do_not_pass():
    assert refusal("aaa", "staging", [deployed("aaa", 60, ok=False)], NOW, SOAK, False).missing == "not_deployed"
    # faulty once is faulty: a later good deploy of the same commit does not clear it
    records = [deployed("aaa", 40), deployed("aaa", 90, faulty=True), deployed("zzz", 100)]
    why = refusal("aaa", "staging", records, NOW, SOAK, verify=False)
    assert why is not None and why.missing == "faulty" and why.newest is records[2]
    assert newest_passed(records, NOW, SOAK, verify=False) is records[2]


def test_the_candidates_promote_picks_from_best_first_each_commit_once_never_a_faulty_one():
    records = [deployed("ccc", 10), deployed("bbb", 40), deployed("aaa", 50), deployed("bbb", 60),
               deployed("aaa", 90, faulty=True), deployed("zzz", 100, ok=False), deployed("yyy", 120)]
    assert candidates(records, NOW, SOAK, verify=False) == [records[1], records[6]]  # ccc soaks still
    assert candidates([], NOW, SOAK, verify=False) == []
    assert newest_passed(records, NOW, SOAK, verify=False) is records[1]


def test_the_boards_promote_is_offered_only_when_it_would_deploy_something():
    from bot.adapters.http.console.model import Promotable, promotable
    from bot.core.freeze_windows import stop_the_line
    from bot.runtime.ports import Lock
    from tests.memory_parts import team_policy

    policy, good = team_policy(), deployed("bbb", 40, tag="v2")
    on_now = replace(deployed("aaa", 500, tag="v1"), environment="production")

    def offered(candidate=good, current=on_now, locks=(), freezes=()):
        return promotable("api", "production", "staging", candidate, current, locks, freezes, policy, NOW)

    assert offered() == Promotable("staging", "v2", "bbb", None)
    assert offered(current=None).why_not is None  # nothing there yet
    assert offered(candidate=None).why_not == wording.nothing_to_promote("api", "production", "staging")
    assert offered(current=replace(good, environment="production")).why_not == wording.runs_already(
        "production", "v2", "bbb")
    mine = Lock("production", "manual:bob", "db migration", NOW, "api")
    assert offered(locks=[mine]).why_not == mine.describe()
    assert offered(locks=[replace(mine, service="web")]).why_not is None  # another service's lock
    whole = replace(mine, service="")
    assert offered(locks=[whole]).why_not == whole.describe()
    stopped = stop_the_line("production", reason="incident 4711", set_by="bob", since=NOW - timedelta(minutes=1))
    frozen = offered(freezes=[stopped]).why_not
    assert frozen is not None and "incident 4711" in frozen  # the deploy rule's own words
    assert offered(freezes=[stop_the_line("staging", reason="x", set_by="bob", since=NOW)]).why_not is None


def test_where_verification_is_configured_a_commit_must_be_verified():
    assert refusal("aaa", "staging", [deployed("aaa", 60)], NOW, SOAK, verify=True).missing == "unverified"
    assert refusal("aaa", "staging", [deployed("aaa", 60, verified=True)], NOW, SOAK, verify=True) is None
    assert refusal("aaa", "staging", [deployed("aaa", 60)], NOW, SOAK, verify=False) is None


def test_the_first_environment_and_those_outside_the_order_are_free_and_a_service_order_wins():
    rules = Promotion(Order(("staging", "production")), {"api": Order(("dev", "staging", "production"), SOAK)},
                      verified=frozenset({("api", "staging")}))
    assert rules.previous("web", "staging") is None and rules.previous("web", "qa") is None
    assert rules.previous("web", "production") == "staging" and rules.soak("web") == timedelta(0)
    assert rules.previous("api", "staging") == "dev" and rules.soak("api") == SOAK
    assert rules.needs_verification("api", "staging") and not rules.needs_verification("web", "staging")
    assert Promotion().previous("api", "production") is None


def test_rollbacks_are_exempt():
    rollback = DeployService(service="api", tag="v1", environment="production", rollback_of="d-old")
    assert exempt(rollback) and not exempt(rollback.model_copy(update={"rollback_of": None}))


def test_settings_read_orders_and_soaks():
    file = FileConfig(promotion=("staging", "production"), soak="30m", services={
        "api": ServiceEntry(promotion=("dev", "staging", "production"), soak="2h"),
        "web": ServiceEntry(soak="1d"), "docs": ServiceEntry(), "tools": ServiceEntry(promotion=()),
    })
    rules = file.promotion_orders()
    assert rules.order_for("api") == Order(("dev", "staging", "production"), timedelta(hours=2))
    assert rules.order_for("web") == Order(("staging", "production"), timedelta(days=1))
    assert rules.order_for("docs") == Order(("staging", "production"), SOAK)
    assert rules.previous("tools", "production") is None  # promotion = []: out of the order
    wrong = FileConfig(promotion=("staging", "prod", "staging"), services={"api": ServiceEntry(promotion=("qa",))})
    problems = wrong.promotion_problems(["staging", "production"])
    assert problems == [
        "promotion: prod: not an environment deploybot knows (production, staging)",
        "promotion: names an environment twice",
        "services.api.promotion: qa: not an environment deploybot knows (production, staging)",
    ]
    assert FileConfig(soak="5m").promotion_problems(["staging"]) == ["soak: needs promotion, the order to soak in"]
    assert parse_soak("90s") == timedelta(seconds=90)
    with pytest.raises(ValueError, match="not a duration"):
        parse_soak("30 minutes")


def test_promote_is_an_exact_command():
    catalog = Catalog.of([Service("api", None, "")])
    step = commands.parse("promote API to Production", catalog)
    assert isinstance(step, Promote) and (step.service, step.environment) == ("api", "production")
    assert commands.parse("promote payments to production", catalog) is None  # not a service: the model's
    again = commands.parse(commands.promote_text("api", "staging"), catalog)
    assert isinstance(again, Promote) and (again.service, again.environment) == ("api", "staging")


def test_the_model_reads_the_refusal_and_deploy_anyway_goes_past_it():
    step = DeployService(service="api", tag="v2", environment="production")
    said = wording.not_promoted("v2", "b" * 40, "staging", "not_deployed", SOAK, None, ("v1", NOW), NOW)
    thread = Thread("t", (UserMessage(user="alice", text="deploy api v2 to production"), step,
                          Error(kind="promotion", step_id=step.id, message=said)))
    assert "v2 (bbbbbbb) has not been deployed to staging; the newest commit that has is v1" in prompt.render(thread)
    assert _blocked_deploy(thread, len(thread.events)) == step
