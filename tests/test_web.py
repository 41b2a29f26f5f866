"""Access control and settings that decide how the server is exposed."""

from __future__ import annotations

import pytest

from bot.settings import ConfigError, Settings


@pytest.fixture
def settings(settings):
    return settings.model_copy(update={"api_token": "s3cret-token-value"})


async def test_a_token_guards_every_thread_route(api):
    bare = {"Authorization": ""}
    assert (await api.post("/threads", json={"message": "hi", "user": "x"}, headers=bare)).status_code == 401
    wrong = {"Authorization": "Bearer nope"}
    assert (await api.get("/threads", headers=wrong)).status_code == 401
    assert (await api.get("/threads/abc", headers=wrong)).status_code == 401
    assert (await api.get("/threads")).status_code == 200  # the fixture sends the right token
    assert (await api.get("/healthz", headers=bare)).status_code == 200  # health stays open


def test_without_a_token_the_server_binds_to_loopback_only():
    assert Settings(_env_file=None, host="0.0.0.0").bind_host() == "127.0.0.1"
    assert Settings(_env_file=None, host="0.0.0.0", api_token="t").bind_host() == "0.0.0.0"


def test_llm_settings_resolution():
    assert Settings(_env_file=None).llm() is None
    assert Settings(_env_file=None, openai_api_key="sk-1").llm() == ("openai", "gpt-4o-mini", "sk-1", None)
    generic = Settings(_env_file=None, llm_base_url="http://x/v1", llm_model="m").llm()
    assert generic == ("openai-generic", "m", "none", "http://x/v1")
    with pytest.raises(ConfigError, match="needs LLM_MODEL"):
        Settings(_env_file=None, llm_base_url="http://x/v1").llm()
    assert Settings(_env_file=None, llm_api_key="k", openai_api_key="o").secrets() == ("k", "o")


def test_protected_environments_are_always_known_environments():
    policy = Settings(_env_file=None, environments="dev", protected_environments="prod,eu-prod").policy()
    assert policy.environments == {"dev", "prod", "eu-prod"} and policy.needs_approval("eu-prod")


def test_github_settings_are_complete_or_refused():
    assert Settings(_env_file=None).github() is None
    with pytest.raises(ConfigError, match="GITHUB_TOKEN, GITHUB_REPOSITORY, GITHUB_WORKFLOW_BACKEND"):
        Settings(_env_file=None, deployer="github").github()
    config = Settings(_env_file=None, deployer="github", github_token="t", github_repository="a/b",
                      github_workflow_frontend="fe.yml").github()
    assert config["workflows"] == {"frontend": "fe.yml"} and config["ref"] == "main"


def test_half_configured_slack_is_refused():
    with pytest.raises(ConfigError, match="SLACK_SIGNING_SECRET"):
        Settings(_env_file=None, slack_bot_token="xoxb-1").slack()


def test_email_approvers_join_chat_approvers_per_environment():
    policy = Settings(_env_file=None, approvers="production:U1;*:U9", approver_emails="Alice@Example.com;staging:b@x.io").policy()
    assert policy.approvers["production"] == {"U1", "alice@example.com"}
    assert policy.approvers["staging"] == {"U9", "b@x.io"}
    assert policy.approvers["*"] == {"U9", "alice@example.com"}
