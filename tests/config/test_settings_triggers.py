"""[[triggers]] and [[schedules]] in deploybot.toml: read into their models, every problem a
startup error naming its key path; checked against the rest of the settings (environments,
GITHUB_WEBHOOK_SECRET, the channels notify targets need) when Settings is built."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import pytest
from pydantic import ValidationError

from bot.config.settings import ConfigError, Settings, config_problems
from bot.core.triggers import NotifyTarget, Schedule, Trigger
from bot.wiring import channels as channel_registry
from tests.config.settings_helpers import clean_environment, problems_of  # noqa: F401 (clean_environment: autouse)

GOOD = """
[people.bob]
slack = "UBOB"

[environments.staging]

[environments.production]
protected = true
approvers = ["bob"]

[services.api]
repo = "."

[[triggers]]
on = "release"
service = "api"
environment = "staging"
notify = ["slack:C0123DEPLOY", "email:Team@Example.com"]

[[triggers]]
on = "workflow_run"
service = "api"
environment = "production"
notify = "slack:C0123DEPLOY"

[[schedules]]
cron = "0 10 * * 1-5"
timezone = "Europe/Berlin"
message = "promote api from staging to production"
notify = ["slack:C0123DEPLOY"]
"""

ON = {"slack_bot_token": "xoxb-1", "slack_signing_secret": "s", "github_webhook_secret": "g",
      "smtp_host": "mail.example.com", "email_from": "bot@example.com", "inbound_email_secret": "in",
      "email_reply_secret": "re"}


def refused(tmp_path: Path, text: str, **values: object) -> list[str]:
    (tmp_path / "deploybot.toml").write_text(text)
    with pytest.raises(ValidationError) as e:
        Settings(_env_file=None, **values)
    return config_problems(e.value)


def test_triggers_and_schedules_read_into_their_models(tmp_path):
    (tmp_path / "deploybot.toml").write_text(GOOD)
    settings = Settings(_env_file=None, **ON)
    assert settings.triggers() == (
        Trigger("release", "api", "staging", ("slack:C0123DEPLOY", "email:team@example.com")),
        Trigger("workflow_run", "api", "production", ("slack:C0123DEPLOY",)),
    )
    [schedule] = settings.schedules()
    assert schedule == Schedule("0 10 * * 1-5", "Europe/Berlin", "promote api from staging to production",
                                ("slack:C0123DEPLOY",))
    (tmp_path / "deploybot.toml").unlink()
    assert Settings(_env_file=None).triggers() == () == Settings(_env_file=None).schedules()  # no file: none


def test_notify_targets_are_checked_by_their_channels_and_name_their_key_path(tmp_path):
    """Each value is its channel's to check (the registry hands the checks in); a kind no
    registered channel has is refused, and a kind one more channel brings is taken."""
    (tmp_path / "deploybot.toml").write_text(GOOD.replace(
        'notify = ["slack:C0123DEPLOY"]', 'notify = ["slack:general", "email:nobody", "sms:+123", "chat:room-1"]',
    ))
    settings = Settings(_env_file=None, **ON)  # the file alone reads: no channel is known yet
    assert channel_registry.problems(settings) == [
        "schedules[0].notify: 'general' is not a Slack channel id (like C0123DEPLOY)",
        "schedules[0].notify: 'nobody' is not an email address",
        "schedules[0].notify: 'sms:+123': a notify target is 'slack:CHANNEL_ID' or 'email:ADDRESS'",
        "schedules[0].notify: 'chat:room-1': a notify target is 'slack:CHANNEL_ID' or 'email:ADDRESS'",
    ]
    chat = channel_registry.Kind("a test's", lambda parts: None, targets=lambda: (
        "chat", NotifyTarget("ROOM", lambda room: None if room.startswith("room-") else f"{room!r} is no room")))
    with_chat = {**channel_registry.CHANNELS, "chat": chat}
    assert channel_registry.problems(settings, with_chat) == [
        "schedules[0].notify: 'general' is not a Slack channel id (like C0123DEPLOY)",
        "schedules[0].notify: 'nobody' is not an email address",
        "schedules[0].notify: 'sms:+123': a notify target is 'slack:CHANNEL_ID' or 'email:ADDRESS' or 'chat:ROOM'",
    ]  # chat:room-1 is the chat channel's
    with pytest.raises(ConfigError, match="'general' is not a Slack channel id"):
        channel_registry.make_channels(cast(Any, SimpleNamespace(settings=settings)))  # refused before any is built


def test_bad_entries_name_their_key_path(tmp_path):
    assert problems_of(tmp_path, """
[[triggers]]
on = "relase"
service = "api"
environment = "staging"
notify = ["slack:general", "email:nobody", "sms:+123"]
colour = "red"

[[triggers]]
service = "api"
environment = "staging"
notify = []

[[schedules]]
cron = "0 25 * * *"
timezone = "Europe/Berln"
message = " "
notify = ["slack:C0123DEPLOY"]

[[schedules]]
cron = "*/5 * * * * *"
message = "x"
notify = ["slack:C0123DEPLOY"]
""") == [
        "triggers[0].on: 'relase' is not one of: release, tag, workflow_run",
        "triggers[0].colour: unknown key; expected one of: on, service, environment, notify",
        "triggers[1].on: is missing",
        "triggers[1].notify: name at least one target: 'slack:CHANNEL_ID' or 'email:ADDRESS'",
        "schedules[0].cron: '0 25 * * *' is not a cron expression of 5 fields (minute hour day month weekday)",
        "schedules[0].timezone: 'Europe/Berln' is not a time zone (like Europe/Berlin or UTC)",
        "schedules[0].message: say what the thread should ask for",
        "schedules[1].cron: '*/5 * * * * *' is not a cron expression of 5 fields (minute hour day month weekday)",
    ]


def test_a_table_instead_of_an_array_of_tables(tmp_path):
    assert problems_of(tmp_path, '[triggers]\non = "tag"\n') == [
        "triggers: should be an array of tables: write [[triggers]] above each entry"]


def test_the_same_trigger_or_schedule_twice_is_a_conflict(tmp_path):
    entry = '[[triggers]]\non = "tag"\nservice = "api"\nenvironment = "staging"\nnotify = "slack:C1AB"\n'
    schedule = '[[schedules]]\ncron = "0 9 * * *"\nmessage = "list tags"\nnotify = "slack:C1AB"\n'
    assert problems_of(tmp_path, entry + entry.replace("C1AB", "C2CD") + schedule + schedule) == [
        "triggers[1]: the same trigger as triggers[0] (on 'tag', api to staging): one event would start two "
        "threads; merge their notify lists",
        "schedules[1]: the same schedule as schedules[0]",
    ]


def test_settings_check_environments_the_webhook_secret_and_notify_channels(tmp_path):
    text = GOOD.replace('environment = "staging"', 'environment = "stagin"')
    text += '\n[[schedules]]\ncron = "0 9 * * *"\nmessage = "list tags"\nnotify = "email:ops@example.com"\n'
    text += '\n[agents.claude-code]\nnotify = ["slack:C0AGENTS"]\n'
    assert refused(tmp_path, text, approvers=None) == [
        "deploybot.toml: [[triggers]] need GITHUB_WEBHOOK_SECRET, to verify what GitHub sends",
        "deploybot.toml: triggers[0].environment: 'stagin' is not an environment deploybot knows "
        "(production, staging)",
        "deploybot.toml: triggers[0].notify: posting to Slack needs SLACK_BOT_TOKEN",
        "deploybot.toml: triggers[0].notify: sending email needs the email channel (SMTP_HOST, ...)",
        "deploybot.toml: triggers[1].notify: posting to Slack needs SLACK_BOT_TOKEN",
        "deploybot.toml: schedules[0].notify: posting to Slack needs SLACK_BOT_TOKEN",
        "deploybot.toml: schedules[1].notify: sending email needs the email channel (SMTP_HOST, ...)",
        "deploybot.toml: agents.claude-code.notify: posting to Slack needs SLACK_BOT_TOKEN",
    ]


def test_a_trigger_names_a_service_of_the_catalog_that_deploys_there(tmp_path):
    text = GOOD.replace('service = "api"\nenvironment = "staging"', 'service = "apu"\nenvironment = "staging"')
    text = text.replace('[services.api]\nrepo = "."', '[services.api]\nrepo = "."\nenvironments = ["staging"]')
    problems = refused(tmp_path, text, **ON)
    assert problems == [
        "deploybot.toml: triggers[0].service: unknown service 'apu'; known services: api",
        "deploybot.toml: triggers[1]: api is not deployed to production; it deploys to staging",
    ]


def test_outgoing_webhooks_need_both_variables_and_are_secrets(tmp_path):
    assert Settings(_env_file=None).notify_webhook is None
    with pytest.raises(ValidationError) as e:
        Settings(_env_file=None, notify_webhook_url="https://hooks.example.com/x")
    assert config_problems(e.value) == ["outgoing webhooks needs NOTIFY_WEBHOOK_SECRET"]
    with pytest.raises(ValidationError) as e:
        Settings(_env_file=None, notify_webhook_url="hooks.example.com", notify_webhook_secret="s")
    assert config_problems(e.value) == ["NOTIFY_WEBHOOK_URL: 'hooks.example.com' is not an http(s) URL"]
    settings = Settings(_env_file=None, notify_webhook_url="https://a.example/T1/B2/xyz, http://b.example/h",
                        notify_webhook_secret="whsec", github_webhook_secret="ghsec")
    assert settings.notify_webhook.urls == ("https://a.example/T1/B2/xyz", "http://b.example/h")
    assert {"whsec", "ghsec", "https://a.example/T1/B2/xyz"} <= set(settings.secrets())


def test_a_person_s_ids_of_a_kind_no_registered_channel_has_are_refused_at_start(tmp_path):
    (tmp_path / "deploybot.toml").write_text(GOOD.replace('slack = "UBOB"', 'slack = "UBOB"\nchat = " U-1 "'))
    settings = Settings(_env_file=None, **ON)  # the file alone reads: it cannot know the channels
    assert channel_registry.problems(settings) == [
        "people.bob.chat: unknown key; expected one of: slack, email, github",
    ]
    chat = channel_registry.Kind("a test's", lambda parts: None, ids=lambda: ("chat", str.lower))
    with_chat = {**channel_registry.CHANNELS, "chat": chat}
    assert channel_registry.problems(settings, with_chat) == []
    assert settings.directory(channel_registry.people_kinds(with_chat)).by("chat", "u-1").person == "bob"
