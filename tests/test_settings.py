"""Settings: flat environment variables read into one small model per channel or feature,
half a configuration refused at construction, secrets kept out of reprs and errors, and
who may approve."""

from __future__ import annotations

import pytest
from pydantic import SecretStr, ValidationError

from bot import __main__ as cli
from bot.policy import Policy, join_approvers, parse_approvers
from bot.settings import EmailSettings, GitHubSettings, LlmSettings, Settings, SlackSettings, config_problems

SECRETS = {
    "api_token": "s-api-token", "llm_api_key": "s-llm-key", "openai_api_key": "s-openai-key",
    "anthropic_api_key": "s-anthropic-key", "slack_bot_token": "s-xoxb", "slack_signing_secret": "s-signing",
    "slack_app_token": "s-xapp", "github_token": "s-ghp", "smtp_password": "s-smtp-password",
    "inbound_email_secret": "s-inbound", "email_reply_secret": "s-reply",
}
EMAIL = {"smtp_host": "mail.example.com", "email_from": "bot@example.com",
         "inbound_email_secret": "in", "email_reply_secret": "re"}


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    """Only what a test sets: nothing from this machine's environment or a .env file."""
    for name in Settings.model_fields:
        monkeypatch.delenv(name.upper(), raising=False)
    monkeypatch.chdir(tmp_path)


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
    policy = Settings(_env_file=None, environments="dev", protected_environments="prod,eu-prod").policy()
    assert policy.environments == {"dev", "prod", "eu-prod"} and policy.needs_approval("eu-prod")


def test_email_approvers_join_chat_approvers_per_environment():
    policy = Settings(
        _env_file=None, approvers="production:U1;*:U9", approver_emails="Alice@Example.com;staging:b@x.io"
    ).policy()
    assert policy.approvers_for("production") == {"U1", "alice@example.com"}
    assert policy.approvers_for("staging") == {"U9", "b@x.io"}
    assert policy.approvers_for("development") == {"U9", "alice@example.com"}  # the "*" entry


def test_each_approver_list_falls_back_to_its_own_star_entry():
    chat, mail = parse_approvers("production:U1"), parse_approvers("a@x.com;staging:b@x.com")
    assert join_approvers(chat, mail) == {
        "production": {"U1", "a@x.com"}, "staging": {"b@x.com"}, "*": {"a@x.com"},
    }
    assert join_approvers(parse_approvers("*"), {}) == {"*": {"*"}}


def test_approvers_for_an_environment_its_entry_else_star_else_nobody():
    policy = Policy(approvers={"production": frozenset({"bob"}), "*": frozenset({"carol"})})
    assert policy.approvers_for("production") == {"bob"}
    assert policy.approvers_for("staging") == {"carol"}
    assert Policy(approvers={"production": frozenset({"bob"})}).approvers_for("staging") == frozenset()
    assert Policy().approvers_for("anything") == {"*"}  # the default: anyone


def test_one_lookup_decides_approving_and_unlocking():
    policy = Policy(approvers={"production": frozenset({"bob"}), "*": frozenset({"carol"})})
    assert policy.may_unlock("bob", "production", "deploy:t1") is None
    assert policy.may_unlock("carol", "production", "deploy:t1") is not None  # production has its own list
    assert policy.may_unlock("carol", "staging", "deploy:t1") is None
    assert policy.may_unlock("eve", "staging", "manual:eve") is None  # whoever locked it
    assert policy.may_unlock("deploybot", "staging", "deploy:t1") is not None


def test_a_named_approver_is_named_in_some_list_and_star_names_nobody():
    policy = Settings(
        _env_file=None, approvers="production:U1;staging:*", approver_emails="prod:b@x.io"
    ).policy()
    assert policy.is_named_approver("U1") and policy.is_named_approver("b@x.io")
    assert not policy.is_named_approver("eve@x.io")


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
