"""The manifest a team installs must ask for what the Slack handlers rely on."""

from __future__ import annotations

import yaml

from tests import ROOT

MANIFEST = ROOT / "slack" / "manifest.yml"


def test_manifest_has_the_scopes_events_and_endpoints_the_bot_uses():
    manifest = yaml.safe_load(MANIFEST.read_text())
    scopes = set(manifest["oauth_config"]["scopes"]["bot"])
    assert {"app_mentions:read", "chat:write", "channels:history", "groups:history", "im:history"} <= scopes
    settings = manifest["settings"]
    events = set(settings["event_subscriptions"]["bot_events"])
    assert {"app_mention", "message.channels", "message.groups", "message.im"} <= events
    assert settings["interactivity"]["is_enabled"] is True
    assert settings["event_subscriptions"]["request_url"].endswith("/slack/events")
    assert settings["interactivity"]["request_url"].endswith("/slack/events")


def test_manifest_declares_the_deploy_command_on_the_same_endpoint():
    manifest = yaml.safe_load(MANIFEST.read_text())
    assert "commands" in manifest["oauth_config"]["scopes"]["bot"]
    [command] = [c for c in manifest["features"]["slash_commands"] if c["command"] == "/deploy"]
    assert command["url"].endswith("/slack/events")
