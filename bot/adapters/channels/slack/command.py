"""The `/deploy` slash command: `help` and `status` are answered privately; anything else is
posted in the channel it was typed in and starts a thread answered under that post, like a
mention. Acknowledged at once, the work done after Slack has its answer."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine
from typing import Any

from slack_sdk.errors import SlackApiError

from bot.adapters.channels.slack import blocks, names
from bot.adapters.channels.slack.inbound import Inbound
from bot.adapters.channels.slack.kind import KIND
from bot.adapters.channels.slack.web import EVENT_TTL
from bot.core import wording
from bot.core.commands import EXAMPLES
from bot.core.commands import parse as parse_command
from bot.core.events import UserMessage, new_id
from bot.core.thread import Origin

log = logging.getLogger(__name__)
SLASH_COMMAND = "/deploy"
NOT_IN_CHANNEL = "deploybot is not in this channel: invite it (`/invite @deploybot`) and try again."
OPEN_STATUSES = (
    "running", "waiting_for_sender", "waiting_for_approval", "waiting_for_lock", "waiting_for_human", "verifying",
)


async def command(inbound: Inbound, body: dict, respond: Callable) -> None:
    """`/deploy ...`, after the acknowledgement; a repeated delivery is taken once."""
    user, channel, trigger_id = body.get("user_id"), body.get("channel_id"), body.get("trigger_id")
    text = body.get("text")
    text = text if isinstance(text, str) else ""
    if not all(isinstance(v, str) and v for v in (user, channel, trigger_id)):
        log.warning("slack: ignored a %s command without a user, channel or trigger id", SLASH_COMMAND)
        return
    assert isinstance(user, str) and isinstance(channel, str) and isinstance(trigger_id, str)
    fresh, _, _ = await inbound.inbox.receive(names.slack_command(trigger_id), "command", EVENT_TTL, None)
    if not fresh:
        log.info("slack: command %s was delivered again; taken once", trigger_id)
        return
    typed = " ".join(blocks.unescape(text).split())
    word = typed.lower()
    if word in ("", "help"):
        # The bot's own words: their `code` is meant.
        await _respond(respond, blocks.entities(wording.slash_command_help(SLASH_COMMAND, EXAMPLES)))
    elif word == "status":
        await _respond(respond, await _status(inbound, channel))
    else:
        await _launch(inbound, user, channel, typed, respond)


async def _launch(inbound: Inbound, user: str, channel: str, typed: str, respond: Callable) -> None:
    """Post the command in `channel` and start a thread under that post."""
    message = typed if parse_command(typed) is not None or typed.lower().startswith("deploy ") else f"deploy {typed}"
    who = inbound.who(user)
    shown = blocks.escape(f"{SLASH_COMMAND} {typed}")
    try:
        posted = await inbound.web.chat_postMessage(
            channel=channel, text=blocks.cut(f"<@{user}> asked: {shown}", blocks.MESSAGE_TEXT),
        )
    except SlackApiError as e:
        error = e.response.get("error", e)
        log.warning("slack: could not post %s in %s: %s", SLASH_COMMAND, channel, error)
        await _respond(respond, blocks.entities(NOT_IN_CHANNEL) if error in ("not_in_channel", "channel_not_found")
                       else blocks.escape(f"Slack refused to post here: {error}"))
        return
    ts = posted["ts"]
    scope = names.slack_conversation(channel, ts)
    _, thread_id, _ = await inbound.inbox.receive(scope, ts, EVENT_TTL, new_id())
    assert thread_id is not None
    origin = Origin(channel=KIND, place={"channel": channel, "thread_ts": ts})
    await inbound.service.launch(message, who, "slack", origin, thread_id, evidence=f"{user} {SLASH_COMMAND}")
    await inbound.kick(thread_id)


async def _status(inbound: Inbound, channel: str) -> str:
    """The open threads of this Slack channel only: a member of one channel is not shown
    what was asked elsewhere (another channel, email, the API)."""
    threads = [
        t for t in await inbound.service.recent(limit=50)
        if t.status() in OPEN_STATUSES and t.origin.at(KIND, "channel") == channel
    ]
    lines = []
    for thread in threads[:10]:
        first = next((e for e in thread.events if isinstance(e, UserMessage)), None)
        lines.append(wording.status_line(thread.id, thread.status(), first.text[:100] if first else ""))
    return blocks.escape("\n".join([wording.slash_command_status(len(lines)), *lines]))


async def _respond(respond: Callable, text: str) -> None:
    """A private answer to a slash command (through its response_url: works where the bot
    is not a member)."""
    try:
        await respond(text=blocks.cut(text, blocks.MESSAGE_TEXT), response_type="ephemeral")
    except Exception as e:  # the response_url expired or Slack is away: nothing to retry
        log.warning("slack: could not answer a %s command: %s", SLASH_COMMAND, e)


def in_background(tasks: set[asyncio.Task[None]], work: Coroutine[Any, Any, None]) -> None:
    """Run `work` (a command after its ack) as a task kept in `tasks` until it is done, so
    stopping the channel can wait for it; its failure is logged."""
    task = asyncio.create_task(work)
    tasks.add(task)
    task.add_done_callback(_finished(tasks))


def _finished(tasks: set[asyncio.Task[None]]) -> Callable[[asyncio.Task[None]], None]:
    def done(task: asyncio.Task[None]) -> None:
        tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("slack: a %s command failed", SLASH_COMMAND, exc_info=task.exception())

    return done
