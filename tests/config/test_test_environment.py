"""tests/conftest.py isolates Settings from the developer's shell and .env: what is exported
there must not switch a channel, a model or another deployer on in any test."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from bot.config.settings import Settings
from tests.conftest import settings_variables

SHELL = {
    "SLACK_BOT_TOKEN": "xoxb-from-the-shell", "SLACK_SIGNING_SECRET": "from-the-shell",
    "DEPLOYER": "github", "GITHUB_TOKEN": "ghp-from-the-shell",
    "LLM_PROVIDER": "anthropic", "OPENAI_API_KEY": "sk-from-the-shell",
    "smtp_host": "mail.example.com",  # any case: Settings reads names case-insensitively
    "REDIS_URL": "redis://production:6379", "API_TOKEN": "from-the-shell",
}


@pytest.fixture(scope="module")
def developer_shell() -> Iterator[None]:
    """Exported before any test's own fixtures run (a module fixture is set up first), as a
    developer's shell would be; every Settings field gets a value there too."""
    shell = pytest.MonkeyPatch()
    for name in Settings.model_fields:
        shell.setenv(name.upper(), "from-the-shell")
    for name, value in SHELL.items():
        shell.setenv(name, value)
    yield
    shell.undo()


def test_nothing_settings_would_read_survives_into_a_test(developer_shell):
    read = {name.lower() for name in Settings.model_fields}
    assert not [k for k in os.environ if k.lower() in read or k in SHELL]


def test_settings_built_in_a_test_have_every_channel_off(developer_shell, tmp_path, monkeypatch):
    (tmp_path / ".env").write_text("SLACK_BOT_TOKEN=xoxb-from-dotenv\nSLACK_SIGNING_SECRET=s\n")
    monkeypatch.chdir(tmp_path)
    for settings in (Settings(_env_file=None), Settings()):  # Settings() would read ./.env
        assert settings.slack is None and settings.email is None and settings.github is None
        assert settings.llm is None and settings.redis_url is None and settings.api_token is None
        assert settings.deployer == "command"


def test_a_test_may_still_set_what_it_needs(developer_shell, monkeypatch):
    monkeypatch.setenv("SLACK_BOT_TOKEN", "xoxb-of-this-test")
    monkeypatch.setenv("SLACK_SIGNING_SECRET", "signing")
    slack = Settings(_env_file=None).slack
    assert slack is not None and slack.bot_token.get_secret_value() == "xoxb-of-this-test"


def test_the_names_come_from_the_fields_and_clean_env():
    environ = {"SLACK_BOT_TOKEN": "x", "Deploy_Command": "x", "ANTHROPIC_BASE_URL": "x",
               "OPENAI_ORG_ID": "x", "PATH": "/bin", "HOME": "/home/dev"}
    # SLACK_BOT_TOKEN and DEPLOY_COMMAND are fields; the OPENAI_/ANTHROPIC_ ones clean_env drops.
    assert sorted(settings_variables(environ)) == [
        "ANTHROPIC_BASE_URL", "Deploy_Command", "OPENAI_ORG_ID", "SLACK_BOT_TOKEN"]
