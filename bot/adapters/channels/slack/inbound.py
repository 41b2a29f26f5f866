"""Slack in: a person's message (a mention, a reply in a thread the bot is part of, a DM)
recorded in its thread, at most once per delivery, before Slack hears "200"; and the
private notes the bot answers a person with.

Whoever speaks is the person deploybot.toml gives that Slack user id to
(`directory.by(KIND, …)`), or someone unknown with no powers but `*`."""

from __future__ import annotations

import logging
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from bot.adapters.channels.slack import blocks, names
from bot.adapters.channels.slack.kind import KIND
from bot.adapters.channels.slack.web import EVENT_TTL
from bot.core.events import new_id
from bot.core.people import Identity
from bot.core.thread import Origin
from bot.runtime.ports import Inbox
from bot.runtime.service import NotFound, Refused, ThreadService

log = logging.getLogger(__name__)
# Makes a one-time sign-in link (a URL) for a person: handed in by the composition root.
SignInLink = Callable[[str], Awaitable[str]]
# Message subtypes that are people talking (a `/me` message too); every other one (edits,
# deletions, joins, bot messages, ...) is ignored.
HUMAN_SUBTYPES = (None, "thread_broadcast", "file_share", "me_message")


def from_a_person(event: dict, bot_user: str | None) -> bool:
    """False (quietly) for what the bot ignores: edits, deletions, joins, and anything a bot
    said (us included), whether it came as a message or as an app_mention."""
    return (
        event.get("subtype") in HUMAN_SUBTYPES
        and not event.get("bot_id")
        and (bot_user is None or event.get("user") != bot_user)
    )


@dataclass(frozen=True)
class Said:
    """A person's message, as far as deploybot reads it."""

    channel: str
    ts: str
    user: str
    text: str
    thread_ts: str | None
    with_files: bool

    @property
    def root(self) -> str:
        return self.thread_ts or self.ts

    @property
    def in_thread(self) -> bool:
        return self.thread_ts is not None


def said_in(event: dict) -> Said | None:
    """The message in `event`; None (and a log line) when it lacks what every message has."""
    channel, ts, user = event.get("channel"), event.get("ts"), event.get("user")
    text, thread_ts = event.get("text") or "", event.get("thread_ts") or None
    if not (
        isinstance(channel, str) and channel and isinstance(ts, str) and ts
        and isinstance(user, str) and user and isinstance(text, str)
        and (thread_ts is None or isinstance(thread_ts, str))
    ):
        log.warning("slack: ignored a %.40r event without a channel, ts, user or text", event.get("type"))
        return None
    files = bool(event.get("files")) or event.get("subtype") == "file_share"
    return Said(channel, ts, user, text, thread_ts, files)


def delivery_id(said: Said, body: dict) -> str:
    """What a repeated delivery of `said` is known by: Slack's event id, else the message's ts."""
    event_id = body.get("event_id")
    return event_id if isinstance(event_id, str) and event_id else said.ts


class Inbound:
    """What every Slack listener works with: the service, the inbox, the worker's kick."""

    def __init__(
        self, service: ThreadService, inbox: Inbox, kick: Callable[[str], Awaitable[None]], web: AsyncWebClient,
        sign_in_link: SignInLink | None = None,
    ) -> None:
        self.service, self.inbox, self.kick, self.web = service, inbox, kick, web
        self.sign_in_link = sign_in_link

    def who(self, user_id: str) -> Identity:
        """The person behind a Slack user id (unknown: `slack:<id>`, with no powers but `*`)."""
        return self.service.directory.by(KIND, user_id)

    async def message(self, said: Said, body: dict, bot_user: str | None, may_start: bool) -> None:
        message_id = delivery_id(said, body)
        scope = names.slack_conversation(said.channel, said.root)
        fresh, thread_id, started = await self.inbox.receive(
            scope, message_id, EVENT_TTL, new_id() if may_start else None
        )
        if not fresh:
            # Recorded before, but maybe never handed over (the process died in between):
            # handing a thread over twice costs one idle run, missing it strands the thread.
            log.info("slack: %s was delivered again; not recorded twice", message_id)
            if thread_id is not None:
                await self.kick(thread_id)
            return
        if thread_id is None:
            return  # a reply in a Slack thread the bot is not part of
        try:
            await self._record(said, thread_id, started, bot_user)
        except Exception:
            await self.inbox.forget(scope, message_id)  # let Slack's retry deliver it again
            raise
        await self.kick(thread_id)

    async def _record(self, said: Said, thread_id: str, started: bool, bot_user: str | None) -> None:
        channel, root, user, text = said.channel, said.root, said.user, said.text
        who = self.who(user)
        if bot_user:
            text = re.sub(rf"<@{re.escape(bot_user)}>\s*", "", text)
        text = blocks.unescape(text).strip()  # stored as typed; escaped again on the way out
        if said.with_files:  # only the words are read: say so where the model and people see it
            text = f"{text}\n\n{blocks.FILES_IGNORED}" if text else blocks.FILES_IGNORED
        origin = Origin(channel=KIND, place={"channel": channel, "thread_ts": root})
        if not started:
            try:
                await self.service.respond(thread_id, text, who, channel="slack")
                return
            except NotFound:
                pass  # bound by a first message whose thread was never stored: start it now
            except Refused as e:
                await self.tell((channel, root), user, e.message)
                return
        await self.service.launch(text or "(empty mention)", who, "slack", origin, thread_id)

    async def tell(self, where: tuple[str, str], user: str, text: str) -> None:
        """An ephemeral note to `user`; `text` is plain (escaped here: it quotes ids and tags)."""
        await self.tell_mrkdwn(where, user, blocks.escape(text))

    async def tell_mrkdwn(self, where: tuple[str, str], user: str, text: str) -> None:
        """An ephemeral note to `user`; `text` is mrkdwn, foreign parts already escaped."""
        channel, thread_ts = where
        try:
            await self.web.chat_postEphemeral(
                channel=channel, user=user, text=blocks.cut(text, blocks.MESSAGE_TEXT),
                thread_ts=thread_ts or None,
            )
        except SlackApiError as e:
            log.error("slack: could not tell %s in %s: %s", user, channel, e.response.get("error", e))
