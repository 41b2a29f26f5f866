"""The registries of bot/wiring keep what was wired by hand before them: the front door's table
is the same, path for path, whichever channels are on; services alike share one deployer; a
tag prefix narrows the versions only."""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path

from bot.adapters.deployers.command import CommandDeployer, CommandRunner, GitVersions
from bot.adapters.deployers.pair import Pair
from bot.adapters.deployers.prefixed import Prefixed, PrefixedVersions
from bot.adapters.http.front_door import deploybot_limits
from bot.adapters.http.limits import API_MAX_BYTES
from bot.config.settings import Settings
from bot.wiring.app import http_limits
from bot.wiring.channels import CHANNELS, Parts
from bot.wiring.deployers import make_deployers

EMAIL = {"smtp_host": "mail.example.com", "email_from": "bot@example.com", "inbound_email_secret": "in",
         "email_reply_secret": "reply", "email_max_bytes": 123_456}


def rows(limits) -> set[tuple[str, int, str, str]]:
    return {(limit.path, limit.max_bytes, limit.auth, limit.csrf) for limit in limits}


def test_the_front_doors_table_is_the_one_written_by_hand_before():
    off = Settings(_env_file=None)
    on = Settings(_env_file=None, **EMAIL)
    mcp = {("/mcp", API_MAX_BYTES, "required", "header")}  # what the catch-all gave it, said by MCP's Kind
    assert rows(http_limits(off)) == rows(deploybot_limits(None)) | mcp
    assert rows(http_limits(on)) == rows(deploybot_limits(123_456)) | mcp
    assert ("/email/inbound", 123_456, "none", "header") in rows(http_limits(on))


def test_every_channel_says_how_it_proves_who_is_speaking():
    """MCP and the GitHub gate are registered like the rest: no part is wired beside the registry."""
    assert list(CHANNELS) == ["log", "slack", "outgoing_webhooks", "github_deployments", "email", "github_gate",
                             "github_webhook", "mcp"]
    assert all(kind.proof for kind in CHANNELS.values())
    assert "gate" not in {f.name for f in fields(Parts)}


def test_the_mcp_path_takes_the_api_credentials_and_body_limit_it_always_had():
    """/mcp fell under the front door's catch-all (credentials, API_MAX_BYTES); MCP's Kind says
    so itself, and agents' tokens are still resolved before the body is read."""
    for settings in (Settings(_env_file=None), Settings(_env_file=None, **EMAIL)):
        assert ("/mcp", API_MAX_BYTES, "required", "header") in rows(http_limits(settings))


def test_services_alike_share_a_deployer_and_a_prefix_narrows_only_the_versions(tmp_path: Path):
    toml = tmp_path / "deploybot.toml"
    toml.write_text('[services.web]\ntag_prefix = "web/"\n\n[services.api]\ntag_prefix = "api/"\n\n'
                    '[services.jobs]\ncommand = "deploy-jobs {tag}"\n')
    deployers = make_deployers(Settings(_env_file=None, deploybot_config=toml, approvers="*"))
    web, api, jobs = deployers["web"], deployers["api"], deployers["jobs"]
    assert isinstance(web, Prefixed) and isinstance(api, Prefixed) and web.inner is api.inner
    assert isinstance(web.versions, PrefixedVersions) and web.runner is web.inner
    assert isinstance(jobs, CommandDeployer) and jobs is not web.inner
    assert isinstance(jobs.versions, GitVersions) and isinstance(jobs.runner, CommandRunner)
    assert jobs.runner.argv == ["deploy-jobs", "{tag}"]


async def test_a_pair_closes_a_part_both_sides_share_once():
    class Both:
        resumable = False
        closed = 0

        async def aclose(self) -> None:
            self.closed += 1

    both = Both()
    await Pair(both, both).aclose()  # type: ignore[arg-type]
    assert both.closed == 1
