"""Login by Slack: `@deploybot login` (or a DM saying "login") answers privately with a
one-time sign-in link for the web, and nothing else: it neither starts a thread nor enters one."""

from __future__ import annotations

import logging

from slack_sdk.errors import SlackApiError

from bot.adapters.channels.slack import blocks, names
from bot.adapters.channels.slack.inbound import Inbound, Said, delivery_id
from bot.adapters.channels.slack.web import EVENT_TTL

log = logging.getLogger(__name__)
LOGIN_WORDS = ("login", "log in", "sign in")
SIGN_IN_NOT_SET_UP = "Sign-in is not set up on this deploybot."
SIGN_IN_FAILED = "deploybot could not make a sign-in link just now; try again in a moment."


def asks_to_log_in(text: str, bot_user: str | None) -> bool:
    """The message says just "login" (or "log in", "sign in"), the bot's mention aside."""
    if bot_user:
        text = text.replace(f"<@{bot_user}>", " ")
    return " ".join(blocks.unescape(text).lower().split()) in LOGIN_WORDS


def not_in_the_directory(user_id: str) -> str:
    return (
        f"You are not in deploybot.toml, so there is nothing to sign you in as: ask whoever runs "
        f"deploybot to add your Slack id {user_id} to your entry under [people]."
    )


def sign_in_text(person: str, url: str) -> str:
    """mrkdwn: the link is the bot's own markup; the person's name and the URL are escaped."""
    return (
        f"Here is your one-time link to sign in to deploybot as *{blocks.escape(person)}*: "
        f"<{blocks.entities(url)}|sign in>. It works once and soon expires; do not share it."
    )


async def login(inbound: Inbound, said: Said, body: dict, direct: bool) -> None:
    """A one-time sign-in link for the Slack user's person, told privately (an ephemeral
    message in a channel, a reply in the DM). A repeated delivery is answered once."""
    message_id = delivery_id(said, body)
    scope = names.slack_conversation(said.channel, said.root)
    fresh, _, _ = await inbound.inbox.receive(scope, message_id, EVENT_TTL, None)
    if not fresh:
        log.info("slack: %s was delivered again; its sign-in link was already sent", message_id)
        return
    text = await _answer(inbound, said.user)
    if direct:  # only they and the bot see a DM: an ordinary reply
        try:
            await inbound.web.chat_postMessage(channel=said.channel, text=text, thread_ts=said.thread_ts)
        except SlackApiError as e:
            log.error("slack: could not answer %s in %s: %s", said.user, said.channel, e.response.get("error", e))
    else:
        await inbound.tell_mrkdwn((said.channel, said.thread_ts or ""), said.user, text)


async def _answer(inbound: Inbound, user: str) -> str:
    """The mrkdwn answer to `user` asking to sign in: the link, or why there is none."""
    who = inbound.who(user)
    if inbound.sign_in_link is None:
        return blocks.escape(SIGN_IN_NOT_SET_UP)
    if who.person is None:
        log.info("slack: %s asked to sign in but is nobody in deploybot.toml", user)
        return blocks.escape(not_in_the_directory(user))
    try:
        url = await inbound.sign_in_link(who.person)
    except Exception:
        log.exception("slack: could not make a sign-in link for %s", who.person)
        return blocks.escape(SIGN_IN_FAILED)
    log.info("slack: sent %s (%s) a sign-in link", who.person, user)
    return sign_in_text(who.person, url)
