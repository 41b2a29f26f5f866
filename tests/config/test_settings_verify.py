"""[services.NAME.verify.ENV] in deploybot.toml: read into bot/core/verification.py's VerifyPlan
(and the policy), every mistake a startup error naming its key path."""

from __future__ import annotations

from datetime import timedelta

import pytest
from pydantic import ValidationError

from bot.config.settings import Settings, config_problems
from tests.config.settings_helpers import clean_environment, problems_of  # noqa: F401 (clean_environment: autouse)
from tests.people_kinds import KINDS

GOOD = """
[environments.staging]
[environments.production]
approvers = ["*"]

[services.api]
command = "true"

[services.api.verify.production]
bake = "10m"
interval = "30s"
grace = "1m"
on_failure = "rollback"

[[services.api.verify.production.prometheus]]
url = "http://prometheus:9090"
query = 'sum(rate(http_requests_total{code=~"5.."}[1m])) / sum(rate(http_requests_total[1m]))'
condition = "< 0.01"

[[services.api.verify.production.http]]
url = "https://user:secret@api.example.com/health?token=abc"
status = 200
contains = "ok"
timeout = "2s"
"""


def test_a_verify_block_becomes_the_policys_plan_for_that_service_and_environment(tmp_path):
    (tmp_path / "deploybot.toml").write_text(GOOD)
    policy = Settings(_env_file=None).policy(KINDS)
    plan = policy.verify_plan("api", "production")
    assert plan is not None and policy.verify_plan("api", "staging") is None
    assert (plan.bake, plan.interval, plan.grace, plan.on_failure) == (
        timedelta(minutes=10), timedelta(seconds=30), timedelta(minutes=1), "rollback")
    prometheus, http = plan.checks
    assert (prometheus.kind, prometheus.url, prometheus.condition) == ("prometheus", "http://prometheus:9090", "< 0.01")
    assert prometheus.name == prometheus.query
    # People see the URL without its credentials or query.
    assert (http.kind, http.status, http.contains, http.timeout) == ("http", 200, "ok", 2.0)
    assert http.name == "GET https://api.example.com/health" and "secret" not in http.name


def test_defaults_and_a_check_named_twice(tmp_path):
    text = """
[environments.staging]
[services.api]
command = "true"
[[services.api.verify.staging.http]]
url = "http://a/health"
[[services.api.verify.staging.http]]
url = "http://a/health"
"""
    (tmp_path / "deploybot.toml").write_text(text)
    plan = Settings(_env_file=None).policy(KINDS).verify_plan("api", "staging")
    assert plan is not None and plan.on_failure == "propose" and plan.interval == timedelta(seconds=30)
    assert [c.name for c in plan.checks] == ["GET http://a/health", "GET http://a/health #2"]


def test_bad_durations_conditions_and_blocks_name_their_key(tmp_path):
    bad = GOOD.replace('bake = "10m"', 'bake = "10 minutes"').replace('"< 0.01"', '"below 0.01"')
    bad = bad.replace('on_failure = "rollback"', 'on_failure = "panic"').replace('timeout = "2s"', 'timeout = "0s"')
    found = problems_of(tmp_path, bad)
    assert any(p.startswith("services.api.verify.production.bake:") and "not a duration" in p for p in found)
    assert any(p.startswith("services.api.verify.production.prometheus[0].condition:") and "not a condition" in p
               for p in found)
    assert any(p.startswith("services.api.verify.production.on_failure:") for p in found)
    assert any(p.startswith("services.api.verify.production.http[0].timeout:") for p in found)
    empty = problems_of(tmp_path, '[services.api]\ncommand = "true"\n[services.api.verify.production]\nbake = "1m"\n')
    assert any(p.startswith("services.api.verify.production:") and "no check" in p for p in empty)
    typo = problems_of(tmp_path, GOOD.replace("grace =", "graze ="))
    assert any(p.startswith("services.api.verify.production.graze:") and "unknown key" in p for p in typo)
    url = problems_of(tmp_path, GOOD.replace('url = "http://prometheus:9090"', 'url = "prometheus:9090"'))
    assert any(p.startswith("services.api.verify.production.prometheus[0].url:") for p in url)


def test_verifying_an_environment_the_bot_does_not_know_is_refused_at_start(tmp_path):
    (tmp_path / "deploybot.toml").write_text(GOOD.replace("verify.production", "verify.prod"))
    with pytest.raises(ValidationError) as e:
        Settings(_env_file=None)
    assert any(p.startswith("services.api.verify.prod:") for p in config_problems(e.value))
    limited = GOOD.replace('command = "true"', 'command = "true"\nenvironments = ["staging"]')
    assert any("verify names production" in p for p in problems_of(tmp_path, limited))
