"""What starts threads from outside, checked against the rest of the settings: deploybot.toml's
[[triggers]] and [[schedules]], and [[github_environments]] (the gate). `s`: the Settings;
`file`: the deploybot.toml read; `policy` and `services` as built from them."""

from __future__ import annotations

from bot.config import settings_file
from bot.config.fields import Fields
from bot.config.services import ServiceSettings
from bot.config.settings_file import FileConfig
from bot.core import wording
from bot.core.gate import service_for
from bot.core.policy import Policy
from bot.core.triggers import targets


def trigger_problems(s: Fields, file: FileConfig | None, policy: Policy) -> list[str]:
    """[[triggers]] and [[schedules]] against the rest: known environments, a webhook
    secret to verify GitHub with, and the channels their notify targets name."""
    if file is None or not (file.triggers or file.schedules):
        return []
    name = file.source.name if file.source else settings_file.FILE_NAME
    known, catalog = policy.environments, policy.catalog
    lines = []
    if file.triggers and not s.github_webhook_secret:
        lines.append(f"{name}: [[triggers]] need GITHUB_WEBHOOK_SECRET, to verify what GitHub sends")
    for i, trigger in enumerate(file.triggers):
        if catalog.get(trigger.service) is None:
            unknown = wording.unknown_service(trigger.service, catalog.names)
            lines.append(f"{name}: triggers[{i}].service: {unknown}")
        elif why := catalog.invalid(trigger.service, trigger.environment):
            lines.append(f"{name}: triggers[{i}]: {why}")
        if trigger.environment not in known:
            lines.append(
                f"{name}: triggers[{i}].environment: {trigger.environment!r} is not an environment "
                f"deploybot knows ({', '.join(sorted(known))})"
            )
    notifies = [(f"triggers[{i}]", t.notify) for i, t in enumerate(file.triggers)]
    notifies += [(f"schedules[{i}]", s.notify) for i, s in enumerate(file.schedules)]
    notifies += [(f"agents.{agent}", a.notify) for agent, a in file.agents.items()]
    for where, notify in notifies:
        if targets(notify, "slack") and not s.slack_bot_token:
            lines.append(f"{name}: {where}.notify: posting to Slack needs SLACK_BOT_TOKEN")
        if targets(notify, "email") and not (s.smtp_host or s.inbound_email_secret):
            lines.append(f"{name}: {where}.notify: sending email needs the email channel (SMTP_HOST, ...)")
    return lines


def gate_problems(s: Fields, file: FileConfig | None, policy: Policy, services: list[ServiceSettings]) -> list[str]:
    """[[github_environments]] against the rest: known environments and services, and the
    channels their notify targets name."""
    if file is None or not file.github_environments:
        return []
    name = file.source.name if file.source else settings_file.FILE_NAME
    repositories = {e.name: e.github for e in services if e.github}
    lines = []
    for i, rule in enumerate(file.gate_rules()):
        where = f"{name}: github_environments[{i}]"
        service = service_for(rule, repositories)
        if rule.environment not in policy.environments:
            unknown = wording.unknown_environment(rule.environment, policy.environments)
            lines.append(f"{where}.environment: {unknown}")
        elif service is None:
            lines.append(f"{where}: name its service (no one [services.*] entry has github = {rule.repository!r})")
        elif policy.catalog.get(service) is None:
            lines.append(f"{where}.service: {wording.unknown_service(service, policy.catalog.names)}")
        elif why := policy.catalog.invalid(service, rule.environment):
            lines.append(f"{where}: {why}")
        if targets(rule.notify, "slack") and not s.slack_bot_token:
            lines.append(f"{where}.notify: posting to Slack needs SLACK_BOT_TOKEN")
        if targets(rule.notify, "email") and not (s.smtp_host or s.inbound_email_secret):
            lines.append(f"{where}.notify: sending email needs the email channel (SMTP_HOST, ...)")
    return lines
