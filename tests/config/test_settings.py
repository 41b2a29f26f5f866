"""Settings: flat environment variables read into one small model per channel or feature,
half a configuration refused at construction, secrets kept out of reprs and errors, and
who may approve."""

from __future__ import annotations

import pytest
from pydantic import SecretStr, ValidationError

from bot import __main__ as cli
from bot.config.settings import EmailSettings, GitHubSettings, LlmSettings, Settings, SlackSettings, config_problems
from bot.core.people import OPEN_MODE_NOTICE, Identity
from tests import ROOT
from tests.config.settings_helpers import clean_environment  # noqa: F401 (clean_environment: autouse)
from tests.core.asking import email_approvers, may_lock
from tests.people_kinds import KINDS

SECRETS = {
    "api_token": "s-api-token", "llm_api_key": "s-llm-key", "openai_api_key": "s-openai-key",
    "anthropic_api_key": "s-anthropic-key", "slack_bot_token": "s-xoxb", "slack_signing_secret": "s-signing",
    "slack_app_token": "s-xapp", "github_token": "s-ghp", "smtp_password": "s-smtp-password",
    "inbound_email_secret": "s-inbound", "email_reply_secret": "s-reply", "session_secret": "s-session",
}
EMAIL = {"smtp_host": "mail.example.com", "email_from": "bot@example.com",
         "inbound_email_secret": "in", "email_reply_secret": "re"}


def refused(**values: object) -> list[str]:
    with pytest.raises(ValidationError) as e:
        Settings(_env_file=None, **values)
    return config_problems(e.value)


# --- half configurations ------------------------------------------------------------------


def test_half_configured_slack_is_refused():
    assert refused(slack_bot_token="xoxb-1") == ["SLACK_BOT_TOKEN is set but SLACK_SIGNING_SECRET is not"]


@pytest.mark.parametrize("missing", sorted(EMAIL))
def test_half_configured_email_is_refused(missing):
    values = {k: v for k, v in EMAIL.items() if k != missing}
    assert refused(**values) == [f"the email channel needs {missing.upper()}"]


def test_email_is_on_with_either_smtp_host_or_the_inbound_secret():
    needs = "the email channel needs"
    assert refused(smtp_host="h") == [f"{needs} EMAIL_FROM, INBOUND_EMAIL_SECRET, EMAIL_REPLY_SECRET"]
    assert refused(inbound_email_secret="s") == [f"{needs} SMTP_HOST, EMAIL_FROM, EMAIL_REPLY_SECRET"]
    assert Settings(_env_file=None, email_from="x@y", email_reply_secret="r").email is None


def test_half_configured_github_is_refused():
    assert refused(deployer="github") == [
        "DEPLOYER=github needs GITHUB_TOKEN, GITHUB_REPOSITORY, "
        "GITHUB_WORKFLOW_BACKEND or GITHUB_WORKFLOW_FRONTEND"
    ]
    assert refused(deployer="github", github_token="t", github_workflow_backend="be.yml") == [
        "DEPLOYER=github needs GITHUB_REPOSITORY"
    ]


def test_half_configured_llm_is_refused():
    assert refused(llm_provider="openai-generic") == ["LLM_PROVIDER=openai-generic needs LLM_BASE_URL"]
    assert refused(llm_base_url="http://x/v1") == ["LLM_PROVIDER=openai-generic needs LLM_MODEL"]
    assert refused(llm_provider="anthropic") == ["LLM_PROVIDER=anthropic needs LLM_API_KEY"]
    assert refused(llm_provider="mistral", llm_api_key="k") == ["LLM_PROVIDER=mistral needs LLM_MODEL"]


def test_every_problem_is_reported_at_once_one_per_line():
    assert refused(slack_bot_token="x", deployer="github", github_token="t", github_repository="a/b") == [
        "SLACK_BOT_TOKEN is set but SLACK_SIGNING_SECRET is not",
        "DEPLOYER=github needs GITHUB_WORKFLOW_BACKEND or GITHUB_WORKFLOW_FRONTEND",
    ]


def test_a_wrong_value_is_named_by_its_variable():
    assert refused(port="eighty") == [
        "PORT: Input should be a valid integer, unable to parse string as an integer"
    ]


def test_a_changed_copy_is_checked_like_new_settings():
    with pytest.raises(ValidationError, match="SLACK_SIGNING_SECRET"):
        Settings(_env_file=None).model_copy(update={"slack_bot_token": "xoxb-1"})
    copy = Settings(_env_file=None).model_copy(update={"api_token": "t"})
    assert isinstance(copy.api_token, SecretStr) and copy.secrets() == ("t",)


def test_main_prints_one_clean_line_per_problem_and_exits_2(monkeypatch, capsys):
    monkeypatch.setenv("LLM_PROVIDER", "anthropic")
    monkeypatch.setenv("SLACK_BOT_TOKEN", "xoxb-secret-value")
    assert cli.main(["threads", "list"]) == 2
    assert capsys.readouterr().err.splitlines() == [
        "configuration error: LLM_PROVIDER=anthropic needs LLM_API_KEY",
        "configuration error: SLACK_BOT_TOKEN is set but SLACK_SIGNING_SECRET is not",
    ]


# --- secrets ------------------------------------------------------------------------------


def test_secrets_are_secret_strings_kept_out_of_reprs_and_errors():
    everything_on = {**EMAIL, **SECRETS, "github_repository": "a/b", "github_workflow_backend": "be.yml",
                     "deployer": "github"}
    settings = Settings(_env_file=None, **everything_on)
    for name in SECRETS:
        assert isinstance(getattr(settings, name), SecretStr), name
    parts = (settings, settings.slack, settings.email, settings.github, settings.llm)
    shown = " ".join(repr(x) for x in parts) + str(settings)
    assert not [s for s in SECRETS.values() if s in shown]
    assert set(settings.secrets()) == set(SECRETS.values())  # plain, for redaction

    half_slack = {k: v for k, v in SECRETS.items() if k != "slack_signing_secret"}
    for wrong in ({**SECRETS, "port": "eighty"}, half_slack):  # a field's error, then the model's
        with pytest.raises(ValidationError) as e:
            Settings(_env_file=None, **wrong)
        assert not [s for s in SECRETS.values() if s in str(e.value) or s in repr(e.value)]


def test_the_password_of_any_url_setting_is_a_secret_and_kept_out_of_reprs():
    settings = Settings(
        _env_file=None, redis_url="redis://:hunter2-redis@cache.internal:6379/0",
        llm_base_url="https://bot:p%40ss-word-1@llm.internal/v1", llm_model="m",
        deploy_command="deploy.sh --registry https://ci:registry-pw-2@registry.internal {tag}",
        slack_api_url="https://slack.example/api/",  # no password: nothing to add
    )
    assert settings.secrets() == ("hunter2-redis", "p%40ss-word-1", "p@ss-word-1", "registry-pw-2")
    assert "hunter2-redis" not in repr(settings) + str(settings)
    assert settings.redis_url == "redis://:hunter2-redis@cache.internal:6379/0"  # as redis-py takes it
    assert Settings(_env_file=None, redis_url="redis://cache.internal:6379/0").secrets() == ()


def test_a_webhook_url_is_a_secret_as_written_and_as_an_http_client_prints_it():
    settings = Settings(_env_file=None, notify_webhook_secret="signing-secret-1",
                        notify_webhook_url="https://Hooks.Example.com:443/services/T0/B0/x y, https://b.example/h")
    assert settings.secrets() == (
        "signing-secret-1", "https://Hooks.Example.com:443/services/T0/B0/x y",
        "https://hooks.example.com/services/T0/B0/x%20y", "https://b.example/h",
    )


def test_deploy_env_passthrough_is_a_list_of_names(monkeypatch):
    monkeypatch.setenv("DEPLOY_ENV_PASSTHROUGH", " AWS_PROFILE, KUBECONFIG ,,")
    assert Settings(_env_file=None).deploy_passthrough() == ("AWS_PROFILE", "KUBECONFIG")
    monkeypatch.delenv("DEPLOY_ENV_PASSTHROUGH")
    assert Settings(_env_file=None).deploy_passthrough() == ()


# --- sub-models from flat environment variables ------------------------------------------


def test_everything_is_off_by_default():
    settings = Settings(_env_file=None)
    assert (settings.slack, settings.email, settings.github, settings.llm) == (None, None, None, None)


def test_slack_from_the_environment(monkeypatch):
    monkeypatch.setenv("SLACK_BOT_TOKEN", "xoxb-1")
    monkeypatch.setenv("SLACK_SIGNING_SECRET", "sig")
    monkeypatch.setenv("SLACK_APP_TOKEN", "")  # empty is unset: HTTP, not Socket Mode
    slack = Settings(_env_file=None).slack
    assert isinstance(slack, SlackSettings)
    assert slack.bot_token.get_secret_value() == "xoxb-1" and slack.signing_secret.get_secret_value() == "sig"
    assert slack.app_token is None and slack.api_url == "https://slack.com/api/"


def test_email_from_the_environment(monkeypatch):
    for name, value in {**EMAIL, "smtp_port": "2525", "smtp_password": "pw", "smtp_tls": "tls",
                        "email_allowed_senders": "Alice@Example.com, @Corp.example"}.items():
        monkeypatch.setenv(name.upper(), value)
    email = Settings(_env_file=None).email
    assert isinstance(email, EmailSettings)
    assert (email.smtp_host, email.smtp_port, email.smtp_tls, email.sender) == (
        "mail.example.com", 2525, "tls", "bot@example.com"
    )
    assert email.smtp_password is not None and email.smtp_password.get_secret_value() == "pw"
    assert email.inbound_secret.get_secret_value() == "in" and email.reply_secret.get_secret_value() == "re"
    assert email.allowed_senders == {"alice@example.com", "@corp.example"}


def test_github_from_the_environment(monkeypatch):
    for name, value in {"deployer": "github", "github_token": "t", "github_repository": "a/b",
                        "github_workflow_frontend": "fe.yml", "github_poll_seconds": "0.5"}.items():
        monkeypatch.setenv(name.upper(), value)
    github = Settings(_env_file=None).github
    assert isinstance(github, GitHubSettings)
    assert github.token.get_secret_value() == "t" and github.repository == "a/b"
    assert github.workflows == {"frontend": "fe.yml"} and github.ref == "main" and github.poll_seconds == 0.5
    assert github.commit_input == "commit"
    monkeypatch.setenv("GITHUB_REF", "{tag}")
    monkeypatch.setenv("GITHUB_COMMIT_INPUT", "")
    github = Settings(_env_file=None).github
    assert github is not None and (github.ref, github.commit_input) == ("{tag}", "")


def test_llm_from_the_environment(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-1")
    llm = Settings(_env_file=None).llm
    assert isinstance(llm, LlmSettings)
    assert (llm.provider, llm.model, llm.api_key.get_secret_value(), llm.base_url) == (
        "openai", "gpt-4o-mini", "sk-1", None
    )


def test_llm_resolution():
    generic = Settings(_env_file=None, llm_base_url="http://x/v1", llm_model="m").llm
    assert generic is not None and (generic.provider, generic.model, generic.base_url) == (
        "openai-generic", "m", "http://x/v1"
    )
    assert generic.api_key.get_secret_value() == "none"  # a local server may want no key
    anthropic = Settings(_env_file=None, anthropic_api_key="a").llm
    assert anthropic is not None and anthropic.provider == "anthropic"
    assert anthropic.model == "claude-3-5-haiku-latest"
    chosen = Settings(_env_file=None, llm_api_key="k", openai_api_key="o").llm
    assert chosen is not None and chosen.api_key.get_secret_value() == "k"
    assert Settings(_env_file=None, llm_api_key="k", openai_api_key="o").secrets() == ("k", "o")


# --- who may approve ----------------------------------------------------------------------


def test_protected_environments_are_always_known_environments():
    policy = Settings(_env_file=None, environments="dev", protected_environments="prod,eu-prod").policy(KINDS)
    assert policy.environments == {"dev", "prod", "eu-prod"} and policy.needs_approval("eu-prod")


def test_nothing_configured_is_open_mode_anyone_may_approve():
    settings = Settings(_env_file=None)
    policy = settings.policy(KINDS)
    assert settings.open_mode and policy.open_mode and "anyone may approve" in OPEN_MODE_NOTICE
    assert policy.rules_for("production").approvers == {"*"}
    assert settings.directory(KINDS).by_name("alice").person == "alice"  # names are trusted, as before


@pytest.mark.parametrize("blank", ["", " ", ";;;", "production:", " ; staging: , ;"])
@pytest.mark.parametrize("name", ["approvers", "approver_emails"])
def test_an_approver_setting_that_names_nobody_is_a_startup_error_not_open_mode(name, blank):
    """Set but naming nobody (a template's `APPROVERS=`), even with Slack, email and
    API_TOKEN on, used to start in open mode, where anyone approves production."""
    on = {"slack_bot_token": "xoxb-1", "slack_signing_secret": "s", "api_token": "t" * 20, **EMAIL}
    assert refused(**on, **{name: blank}) == [
        f"{name.upper()} is set but names nobody: list the approvers, write * to let anyone approve, "
        "or leave it unset"
    ]
    # `*` remains the explicit way to say "anyone"; unset stays open mode with nothing else configured.
    assert not Settings(_env_file=None, **on, **{name: "*"}).open_mode
    assert Settings(_env_file=None, **{name: "*"}).policy(KINDS).rules_for("production").approvers == {"*"}
    assert Settings(_env_file=None, **on).open_mode


def test_approver_emails_alone_are_exactly_those_approvers():
    # The case: APPROVERS left at its default no longer adds "anyone".
    settings = Settings(_env_file=None, approver_emails="production:Alice@Example.com")
    policy = settings.policy(KINDS)
    assert not settings.open_mode
    assert policy.rules_for("production").approvers == {"email:alice@example.com"}
    assert email_approvers(policy, "production") == [(None, "alice@example.com")]
    slack_user = Identity(None, "slack", "U9")
    assert may_lock(policy, slack_user, "production") is not None


def test_the_approver_variables_add_up_per_environment_each_falling_back_to_its_own_star():
    policy = Settings(
        _env_file=None, approvers="production:U1;*:U9", approver_emails="Alice@Example.com;staging:b@x.io"
    ).policy(KINDS)
    assert policy.rules_for("production").approvers == {"slack:U1", "email:alice@example.com"}
    assert policy.rules_for("staging").approvers == {"slack:U9", "email:b@x.io"}
    assert policy.rules_for("development").approvers == {"slack:U9", "email:alice@example.com"}


def test_anyone_only_where_written():
    policy = Settings(_env_file=None, approvers="production:U1;staging:*").policy(KINDS)
    assert policy.rules_for("staging").approvers == {"*"} and policy.rules_for("production").approvers == {"slack:U1"}
    assert policy.rules_for("development").approvers == frozenset()  # nobody: it needs no approval


def test_a_protected_environment_without_approvers_is_a_startup_error():
    assert refused(approvers="staging:U1") == [
        "production is protected but has no approvers: list them under [environments.production] "
        "approvers in deploybot.toml, or in APPROVERS / APPROVER_EMAILS"
    ]
    # Nothing protected: nothing needs approvers.
    assert Settings(_env_file=None, approvers="staging:U1", protected_environments="").policy(KINDS).protected == set()


# --- deploybot.toml ---------------------------------------------------------------------

TEAM = """
[people.alice]
slack = "UALICE"
email = "alice@example.com"

[people.bob]
slack = "UBOB"
email = ["bob@example.com"]

[people.carol]
email = "carol@example.com"

[groups]
sre = ["bob", "carol"]

[environments.development]

[environments.staging]
approvers = ["*"]

[environments.production]
protected = true
approvers = ["group:sre"]
approver_must_differ = true
may_lock = ["group:sre", "alice"]
"""


def test_deploybot_toml_in_the_working_directory_makes_the_policy(tmp_path):
    (tmp_path / "deploybot.toml").write_text(TEAM)
    settings = Settings(_env_file=None)
    policy = settings.policy(KINDS)
    assert not settings.open_mode and settings.config_file == tmp_path / "deploybot.toml"
    assert policy.environments == {"development", "staging", "production"} and policy.protected == {"production"}
    people = settings.directory(KINDS)
    alice, bob = people.by("slack", "UALICE"), people.by("email", "bob@example.com")
    assert (alice.person, bob.person) == ("alice", "bob")
    assert people.by_name("mallory").person is None  # names are no longer taken on trust
    assert policy.rules_for("production").approver_must_differ
    assert may_lock(policy, alice, "production") is None and may_lock(policy, alice, "staging") is None
    assert email_approvers(policy, "production") == [("bob", "bob@example.com"), ("carol", "carol@example.com")]


def test_deploybot_config_names_the_file_and_env_only_setups_keep_working(tmp_path, monkeypatch):
    elsewhere = tmp_path / "etc" / "team.toml"
    elsewhere.parent.mkdir()
    elsewhere.write_text(TEAM)
    monkeypatch.setenv("DEPLOYBOT_CONFIG", str(elsewhere))
    assert Settings(_env_file=None).config_file == elsewhere
    monkeypatch.delenv("DEPLOYBOT_CONFIG")
    env_only = Settings(_env_file=None, approvers="production:U1")
    assert env_only.config_file is None and env_only.policy(KINDS).rules_for("production").approvers == {"slack:U1"}
    assert refused(deploybot_config=str(tmp_path / "missing.toml")) == [
        f"DEPLOYBOT_CONFIG names {tmp_path / 'missing.toml'}, which is not a file"
    ]


def test_a_setting_made_in_the_file_and_by_a_variable_is_a_startup_error_naming_it(tmp_path, monkeypatch):
    (tmp_path / "deploybot.toml").write_text(TEAM)
    monkeypatch.setenv("APPROVERS", "production:U1")
    monkeypatch.setenv("APPROVER_MUST_DIFFER", "false")
    with pytest.raises(ValidationError) as e:
        Settings(_env_file=None)
    assert config_problems(e.value) == [
        "production's approvers are set in deploybot.toml and by APPROVERS; set them in one place",
        "production's approver_must_differ is set in deploybot.toml and by APPROVER_MUST_DIFFER; "
        "set it in one place",
    ]


def test_a_bad_file_is_a_startup_error_one_line_per_problem(tmp_path, monkeypatch, capsys):
    path = tmp_path / "deploybot.toml"
    path.write_text(TEAM.replace('approvers = ["group:sre"]', 'approvers = ["group:sre", "bobby"]'))
    assert refused() == [f"{path}: environments.production.approvers[1]: there is no person 'bobby' under [people] "
                         "(did you mean bob?)"]
    path.write_text("[people.alice]\nemail = 'alice@example.com'\n")  # people, but production has no approvers
    assert refused() == [
        "production is protected but has no approvers: list them under [environments.production] "
        "approvers in deploybot.toml, or in APPROVERS / APPROVER_EMAILS"
    ]
    monkeypatch.setenv("APPROVER_EMAILS", "production:alice@example.com")  # the variables may name them
    assert email_approvers(Settings(_env_file=None).policy(KINDS), "production") == [("alice", "alice@example.com")]
    monkeypatch.delenv("APPROVER_EMAILS")
    assert cli.main(["threads", "list"]) == 2
    assert capsys.readouterr().err.startswith("configuration error: production is protected but has no approvers")


def test_a_changed_copy_reads_the_same_file(tmp_path):
    (tmp_path / "deploybot.toml").write_text(TEAM)
    copy = Settings(_env_file=None).model_copy(update={"max_steps": 5})
    assert copy.policy(KINDS).max_steps == 5 and copy.directory(KINDS).by("slack", "UBOB").person == "bob"


def test_the_file_s_environments_are_the_environments(tmp_path):
    (tmp_path / "deploybot.toml").write_text('[people.ops]\nemail = "ops@example.com"\n'
                                             '[environments.qa]\n[environments.live]\napprovers = ["ops"]\n')
    policy = Settings(_env_file=None, protected_environments="live").policy(KINDS)
    assert policy.environments == {"qa", "live"} and policy.protected == {"live"}  # no production
    assert policy.rules_for("live").approvers == {"ops"} and policy.rules_for("qa").approvers == frozenset()


def test_the_docs_deploybot_toml_is_a_working_configuration(tmp_path):
    import re

    doc = (ROOT / "docs" / "people-and-approvals.md").read_text()
    example = re.search(r"```toml\n(# deploybot\.toml\n.*?)```", doc, re.S)
    assert example, "docs/people-and-approvals.md: the People and approvers section shows a deploybot.toml"
    (tmp_path / "deploybot.toml").write_text(example[1])
    settings = Settings(_env_file=None)
    policy, people = settings.policy(KINDS), settings.directory(KINDS)
    assert policy.environments == {"development", "staging", "production"} and policy.protected == {"production"}
    assert may_lock(policy, people.by("email", "carol@example.com"), "production") == (
        "carol may not lock production; the sre group may"
    )
    assert policy.rules_for("production").approver_must_differ


@pytest.mark.parametrize("name, value, says", [
    ("DEPLOY_COMMAND", "./deploy.sh {env}", "DEPLOY_COMMAND may use"),
    ("DEPLOY_COMMAND", "", "DEPLOY_COMMAND is empty"),
    ("DEPLOY_COMMAND", "./deploy.sh 'unbalanced", "cannot be split"),
    ("LOG_LEVEL", "verbose", "LOG_LEVEL"),
    ("GITHUB_POLL_SECONDS", "0", "GITHUB_POLL_SECONDS"),
    ("APPROVAL_TTL", "-5", "APPROVAL_TTL"),
])
def test_a_bad_value_is_a_clear_startup_error_not_a_traceback(monkeypatch, capsys, name, value, says):
    from bot.__main__ import main

    monkeypatch.setenv(name, value)
    assert main(["threads", "list"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("configuration error:") and says in err and "Traceback" not in err


def test_the_log_level_is_read_in_any_case(monkeypatch):
    monkeypatch.setenv("LOG_LEVEL", "debug")
    assert Settings(_env_file=None).log_level == "DEBUG"


def test_passthrough_values_are_redacted_like_secrets(monkeypatch):
    monkeypatch.setenv("CLOUD_DEPLOY_KEY", "passed-through-secret-value")
    settings = Settings(_env_file=None, deploy_env_passthrough="CLOUD_DEPLOY_KEY")
    assert "passed-through-secret-value" in settings.secrets()
