"""Settings the bot refuses or narrows when it starts, before it serves anything."""

from __future__ import annotations

import pytest

from bot.adapters.deployers.command import CommandDeployer
from bot.adapters.llm import BamlModel
from bot.config.settings import Settings


def test_unknown_provider_is_refused():
    with pytest.raises(ValueError, match="LLM_PROVIDER"):
        BamlModel("llama-magic", "m", "k")


def test_deploy_command_placeholders_are_checked_at_start(tmp_path):
    with pytest.raises(ValueError, match="only"):
        CommandDeployer(tmp_path, "deploy.sh {env}")


def test_without_a_token_the_server_binds_to_loopback_only():
    assert Settings(_env_file=None, host="0.0.0.0").bind_host() == "127.0.0.1"
    assert Settings(_env_file=None, host="0.0.0.0", api_token="t").bind_host() == "0.0.0.0"
