"""The Bolt app: which Slack event, command, button and form goes to which job.

Listeners run before the HTTP answer (`process_before_response`), so an inbound message is
stored in its thread before Slack hears "200"; the agent loop itself runs afterwards in the
worker, so every answer still takes milliseconds, well inside Slack's 3 seconds."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from slack_bolt.async_app import AsyncApp
from slack_sdk.web.async_client import AsyncWebClient

from bot.adapters.channels.slack import blocks, buttons
from bot.adapters.channels.slack.command import SLASH_COMMAND, command, in_background
from bot.adapters.channels.slack.endpoint import SlackChannel
from bot.adapters.channels.slack.inbound import Inbound, SignInLink, from_a_person, said_in
from bot.adapters.channels.slack.login import asks_to_log_in, login
from bot.runtime.ports import Inbox
from bot.runtime.service import ThreadService


def build(
    signing_secret: str,
    web: AsyncWebClient,
    service: ThreadService,
    inbox: Inbox,
    kick: Callable[[str], Awaitable[None]],
    app_token: str | None = None,
    sign_in_link: SignInLink | None = None,
) -> SlackChannel:
    """`sign_in_link` answers `@deploybot login`; None: sign-in is not set up."""
    # The endpoint verifies signatures before Bolt sees a request (so a forged malformed
    # body is a 401, not a 400); Bolt need not do it again.
    app = AsyncApp(
        signing_secret=signing_secret, client=web, process_before_response=True,
        request_verification_enabled=False,
    )
    inbound = Inbound(service, inbox, kick, web, sign_in_link)
    background: set[asyncio.Task[None]] = set()  # slash commands at work after their ack
    listen_to_messages(app, inbound)
    listen_to_the_command(app, inbound, background)
    listen_to_buttons(app, inbound)
    return SlackChannel(app, web, signing_secret, app_token, background)


def listen_to_messages(app: AsyncApp, inbound: Inbound) -> None:
    @app.event("app_mention")
    async def on_mention(event: dict, body: dict, context: dict) -> None:
        bot_user = context.get("bot_user_id")
        if not from_a_person(event, bot_user) or not (said := said_in(event)):
            return
        if asks_to_log_in(said.text, bot_user):
            await login(inbound, said, body, direct=False)
        else:
            await inbound.message(said, body, bot_user, may_start=True)

    @app.event("message")
    async def on_message(event: dict, body: dict, context: dict) -> None:
        bot_user = context.get("bot_user_id")
        if not from_a_person(event, bot_user) or not (said := said_in(event)):
            return
        direct = event.get("channel_type") == "im"
        if not direct and f"<@{bot_user}>" in said.text:
            return  # app_mention delivers this one
        if direct and asks_to_log_in(said.text, bot_user):
            await login(inbound, said, body, direct=True)
        elif direct or said.in_thread:
            await inbound.message(said, body, bot_user, may_start=direct)


def listen_to_the_command(app: AsyncApp, inbound: Inbound, background: set[asyncio.Task[None]]) -> None:
    @app.command(SLASH_COMMAND)
    async def on_command(ack: Callable, body: dict, respond: Callable) -> None:
        # Acknowledged at once, the work done after Slack has its answer: posting the command
        # in the channel is a Slack API call, which must not count against Slack's 3 seconds.
        # (Bolt's lazy listeners would do the same, but deep-copy the request, pooled client
        # session included, which cannot be copied.)
        await ack()
        in_background(background, command(inbound, body, respond))


def listen_to_buttons(app: AsyncApp, inbound: Inbound) -> None:
    @app.action(blocks.APPROVE)
    async def on_approve(ack: Callable, body: dict, action: dict) -> None:
        await ack()
        await buttons.decide(inbound, body, action, approve=True)

    @app.action(blocks.REJECT)
    async def on_reject(ack: Callable, body: dict, action: dict, client: AsyncWebClient) -> None:
        await ack()
        await buttons.reject(inbound, body, action, client)

    @app.view(blocks.REJECT_VIEW)
    async def on_feedback(ack: Callable, body: dict, view: dict) -> None:
        await buttons.feedback(inbound, ack, body, view)
