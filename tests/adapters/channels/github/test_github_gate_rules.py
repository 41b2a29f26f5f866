"""The GitHub gate's pure parts (bot/core/gate.py), its settings and the App's JWT: no server."""

from __future__ import annotations

import json

import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from bot.adapters.github_api import AppAuth
from bot.config.settings import Settings
from bot.core import wording
from bot.core.events import DeployService, UserMessage
from bot.core.gate import GateRule, deploy_text, gated_step, requested, rule_for, service_for
from bot.core.thread import Thread
from tests import ROOT
from tests.people_kinds import a_person, directory_of

SHA = "b" * 40
CALLBACK = "https://api.github.com/repos/acme/app/actions/runs/42/deployment_protection_rule"


def payload(**changes) -> dict:
    base = {"action": "requested", "environment": "Production", "deployment_callback_url": CALLBACK,
            "deployment": {"id": 7, "sha": SHA, "ref": "v1.0.0", "creator": {"login": "octocat"}},
            "repository": {"full_name": "acme/app"}, "installation": {"id": 9}}
    return base | changes


def pem(key) -> str:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption()).decode()


def test_a_request_is_read_and_anything_malformed_is_refused():
    request = requested(payload())
    assert not isinstance(request, str)
    assert (request.repository, request.github_environment, request.sha, request.creator) == (
        "acme/app", "Production", SHA, "octocat")
    assert (request.run_id, request.installation, request.deployment_id) == (42, 9, 7)
    assert request.callback_path == "/repos/acme/app/actions/runs/42/deployment_protection_rule"
    assert request.run_url() == "https://github.com/acme/app/actions/runs/42"
    other_repository = CALLBACK.replace("acme/app", "evil/app")
    for bad in (payload(action="created"), payload(deployment_callback_url=other_repository),
                payload(deployment_callback_url="https://api.github.com/repos/acme/app/hooks"),
                payload(deployment={"sha": "not-a-sha", "creator": {"login": "octocat"}}),
                payload(installation=None), payload(environment="")):
        assert isinstance(requested(bad), str), bad


DELIVERY = ROOT / "tests" / "fixtures" / "github" / "deployment_protection_rule.requested.json"


def test_github_s_own_shape_is_read_the_commit_at_the_top_and_a_deployment_with_only_its_id_or_none():
    """A `deployment_protection_rule` delivery as GitHub's schema has it (tests/fixtures/github):
    the commit is the delivery's `sha` and `ref`, the deployment holds its id and environment."""
    delivery = json.loads(DELIVERY.read_text())
    request = requested(delivery)
    assert not isinstance(request, str), request
    assert (request.sha, request.ref, request.creator, request.deployment_id, request.run_id) == (
        "2b8d6bd6bd9eb5b2a0a2ba56b9e49b0d8a51e1c7", "refs/heads/main", "octocat", 1234567890, 9123456780)
    assert (request.repository, request.github_environment, request.installation) == ("acme/app", "production",
                                                                                      55555555)
    without = requested({**delivery, "deployment": None})  # GitHub may send none at all
    assert not isinstance(without, str) and (without.sha, without.deployment_id) == (request.sha, 0)
    assert isinstance(requested({**delivery, "sha": None, "deployment": None}), str)  # no commit anywhere
    assert isinstance(requested({**delivery, "deployment": "7"}), str)


def test_a_field_ending_in_a_newline_is_malformed():
    deployment = payload()["deployment"]
    for bad in (payload(deployment_callback_url=CALLBACK + "\n"),
                payload(deployment={**deployment, "sha": SHA + "\n"}),
                payload(deployment={**deployment, "creator": {"login": "octocat\n"}}),
                payload(repository={"full_name": "acme/app\n"})):
        assert isinstance(requested(bad), str), bad


def test_only_the_threads_first_deploy_of_the_deployment_answers_github():
    asked = UserMessage(text=f"deploy app {SHA} to production", user="octocat")
    other = DeployService(service="app", tag="v1.2.3", environment="production")
    back = DeployService(service="app", tag=SHA, environment="production", rollback_of="t1-x")
    gated = DeployService(service="app", tag=SHA, environment="production")
    elsewhere = DeployService(service="app", tag=SHA, environment="staging")
    again = DeployService(service="app", tag=SHA, environment="production")
    thread = Thread("t1", (asked, other, back, gated, elsewhere, again))
    assert gated_step(thread, "app", SHA, "production") == gated
    assert gated_step(thread, "app", SHA.upper(), "production") == gated  # GitHub's sha, in any case
    assert gated_step(thread, "app", SHA, "qa") is None
    assert gated_step(thread, "web", SHA, "production") is None
    # Bound before the binding kept its commit and environment: the thread's first deploy of the service.
    assert gated_step(Thread("t1", (asked, gated, again)), "app", "", "") == gated


def test_the_approved_comment_names_the_approvers_or_says_none_were_needed():
    assert wording.gate_approved("alice, bob", "production", "L") == "Approved in deploybot by alice, bob. L"
    said = wording.gate_approved(None, "staging", "L")
    assert "approver" not in said and "staging needs no approval in deploybot" in said


def test_rules_match_without_case_and_name_their_service():
    rules = (GateRule("acme/app", "production", "prod"), GateRule("acme/web", "staging", "staging", "web"))
    assert rule_for(rules, "ACME/App", "Production") == rules[0]
    assert rule_for(rules, "acme/app", "qa") is None
    assert service_for(rules[0], {"api": "acme/app", "worker": "acme/other"}) == "api"
    assert service_for(rules[0], {"api": "acme/app", "api2": "acme/app"}) is None  # two: say which
    assert service_for(rules[1], {}) == "web"
    request = requested(payload())
    assert not isinstance(request, str)
    text = deploy_text("api", request, "prod")
    assert text == (f"deploy api {SHA} to prod (GitHub Actions deployment of v1.0.0 by octocat: "
                    "https://github.com/acme/app/actions/runs/42)")


def test_a_github_login_names_a_person_and_an_unknown_one_nobody():
    directory = directory_of([a_person("carol", github=("carol-gh",))])
    assert directory.by("github", "Carol-GH").person == "carol"
    stranger = directory.by("github", "octocat")
    assert stranger.person is None and stranger.principal == "github:octocat"
    with pytest.raises(ValueError, match="the github id x is both a.s and b.s"):
        directory_of([a_person("a", github=("x",)), a_person("b", github=("x",))])


def test_the_app_jwt_is_rs256_backdated_and_short():
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    auth = AppAuth(12, pem(key), clock=lambda: 1_000_000.0)
    claims = jwt.decode(auth.jwt(), key.public_key(), algorithms=["RS256"], options={"verify_exp": False})
    assert claims == {"iat": 1_000_000 - 60, "exp": 1_000_000 - 60 + 540, "iss": "12"}


def test_the_app_settings_refuse_two_keys_a_bad_key_and_a_key_without_an_id(tmp_path):
    good = pem(rsa.generate_private_key(public_exponent=65537, key_size=2048))
    key_file = tmp_path / "app.pem"
    key_file.write_text(good)
    base = {"_env_file": None, "github_webhook_secret": "s"}
    assert Settings(**base, github_app_id=1, github_app_private_key_file=key_file).github_app is not None
    assert Settings(**base).github_app is None
    with pytest.raises(ValueError, match="both set"):
        Settings(**base, github_app_id=1, github_app_private_key=good, github_app_private_key_file=key_file)
    with pytest.raises(ValueError, match="not a PEM private key"):
        Settings(**base, github_app_id=1, github_app_private_key="-----BEGIN nonsense")
    with pytest.raises(ValueError, match="not an RSA key"):
        Settings(**base, github_app_id=1, github_app_private_key=pem(ec.generate_private_key(ec.SECP256R1())))
    with pytest.raises(ValueError, match="need GITHUB_APP_ID"):
        Settings(**base, github_app_private_key=good)
    with pytest.raises(ValueError, match="GITHUB_WEBHOOK_SECRET"):
        Settings(_env_file=None, github_app_id=1, github_app_private_key=good)
    assert good not in str(Settings(**base, github_app_id=1, github_app_private_key=good).github_app)


def test_a_rule_must_name_a_known_environment_and_a_service(tmp_path):
    config = tmp_path / "deploybot.toml"
    config.write_text('[environments.production]\napprovers = ["*"]\n[services.api]\n\n[[github_environments]]\n'
                      'repository = "acme/app"\ngithub_environment = "production"\nenvironment = "prod"\n')
    good = pem(rsa.generate_private_key(public_exponent=65537, key_size=2048))
    with pytest.raises(ValueError) as refused:
        Settings(_env_file=None, deploybot_config=config, github_app_id=1, github_app_private_key=good,
                 github_webhook_secret="s")
    assert "github_environments[0].environment" in str(refused.value)
    config.write_text(config.read_text().replace('"prod"', '"production"'))
    with pytest.raises(ValueError, match="name its service"):
        Settings(_env_file=None, deploybot_config=config, github_app_id=1, github_app_private_key=good,
                 github_webhook_secret="s")
