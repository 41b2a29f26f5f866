"""Slack: mentions and thread replies in, Block Kit approvals and progress out.

One module per job: `web` (the API client), `notifier` (what happens, posted to Slack),
`inbound` (a person's message recorded in its thread), `login` (sign-in links by DM),
`command` (`/deploy`), `buttons` (Approve, Reject and its form), `listeners` (the Bolt app
routing each to its job), `endpoint` (the signed HTTP endpoint and the channel's life) and
`socket_mode`. The names the composition root uses are importable from here."""

from bot.adapters.channels.slack.buttons import COULD_NOT_OPEN_FORM, NOT_OUR_BUTTON, STALE_FORM
from bot.adapters.channels.slack.command import SLASH_COMMAND
from bot.adapters.channels.slack.endpoint import SlackChannel
from bot.adapters.channels.slack.inbound import SignInLink
from bot.adapters.channels.slack.kind import KIND, TARGET, normalise_user
from bot.adapters.channels.slack.listeners import build
from bot.adapters.channels.slack.notifier import SlackNotifier
from bot.adapters.channels.slack.web import EVENT_TTL, client

__all__ = [
    "COULD_NOT_OPEN_FORM", "EVENT_TTL", "KIND", "NOT_OUR_BUTTON", "SLASH_COMMAND", "STALE_FORM", "SignInLink",
    "TARGET", "SlackChannel", "SlackNotifier", "build", "client", "normalise_user",
]
