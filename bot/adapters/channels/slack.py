"""Slack: mentions and thread replies in, Block Kit approvals and progress out.

Whoever speaks or clicks is the person deploybot.toml gives that Slack user id to
(`directory.by_slack`), or someone unknown with no powers but `*`. `@deploybot login` (or a
DM saying "login") answers privately with a one-time sign-in link for the web, and nothing
else: it neither starts a thread nor enters one.

Listeners run before the HTTP answer (`process_before_response`), so an inbound message is
stored in its thread before Slack hears "200"; the agent loop itself runs afterwards in the
worker, so every answer still takes milliseconds, well inside Slack's 3 seconds.
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
import re
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs

import aiohttp
from slack_bolt.adapter.starlette.async_handler import AsyncSlackRequestHandler
from slack_bolt.async_app import AsyncApp
from slack_sdk.errors import SlackApiError
from slack_sdk.http_retry.builtin_async_handlers import (
    AsyncConnectionErrorRetryHandler,
    AsyncRateLimitErrorRetryHandler,
    AsyncServerErrorRetryHandler,
)
from slack_sdk.signature import SignatureVerifier
from slack_sdk.web.async_client import AsyncWebClient
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from bot.adapters.channels import slack_blocks as blocks
from bot.adapters.redis import keys as names
from bot.core import wording
from bot.core.commands import EXAMPLES
from bot.core.commands import parse as parse_command
from bot.core.events import (
    ApprovalEscalated,
    ApprovalExpired,
    ApprovalReminded,
    ApprovalRequested,
    Event,
    HumanResponse,
    UserMessage,
    new_id,
)
from bot.core.people import Directory, Identity
from bot.core.policy import Policy
from bot.core.thread import Origin, Thread
from bot.core.triggers import slack_targets
from bot.runtime.ports import Inbox
from bot.runtime.service import Forbidden, NotFound, Refused, ThreadService

log = logging.getLogger(__name__)
EVENT_TTL = 24 * 3600  # Slack retries for a few minutes; a day is plenty to spot a repeat
# Makes a one-time sign-in link (a URL) for a person: handed in by the composition root.
SignInLink = Callable[[str], Awaitable[str]]


def client(token: str, api_url: str) -> AsyncWebClient:
    return AsyncWebClient(
        token=token,
        base_url=api_url,
        retry_handlers=[
            AsyncConnectionErrorRetryHandler(max_retry_count=2),
            AsyncRateLimitErrorRetryHandler(max_retry_count=3),  # waits for Retry-After
            AsyncServerErrorRetryHandler(max_retry_count=2),
        ],
    )


class SlackNotifier:
    """Posts what happens in Slack-born threads back into their Slack thread, and what
    happens in any thread with Slack notify targets (a trigger's, a schedule's) into a Slack
    thread of its own in each of those channels. An approval's message is updated in place
    as it goes (each approval of several, the decision, its expiry); its reminders are
    posted under it; whoever it is escalated to gets it by direct message, buttons and all.

    `policy`: who may decide (named in reminders) and the Slack ids of the people it is
    escalated to. Without it reminders name "the approvers" and nobody gets a DM."""

    def __init__(self, web: AsyncWebClient, inbox: Inbox, policy: Policy | None = None) -> None:
        self.web, self.inbox, self.policy = web, inbox, policy

    async def publish(self, thread: Thread, new: Sequence[Event]) -> None:
        channel, thread_ts = thread.origin.slack_channel, thread.origin.slack_thread_ts
        if thread.origin.channel == "slack" and channel and thread_ts:
            await self._post_all(thread, new, channel, thread_ts, names.slack_approval_message)
        for target in slack_targets(thread.origin.notify):
            if target == channel and thread.origin.channel == "slack":
                continue  # already answered there
            try:
                root = await self._notify_root(thread, new, target)
            except SlackApiError as e:
                log.error("thread %s: Slack refused to start a thread in %s: %s",
                          thread.id, target, e.response.get("error", e))
                continue
            await self._post_all(thread, new, target, root, functools.partial(_notify_approval, channel=target))
        for event in new:  # direct messages: once, whichever Slack threads the thread is in
            try:
                await self._direct(thread, event)
            except SlackApiError as e:
                log.error("thread %s: Slack refused a direct message for %s: %s",
                          thread.id, event.type, e.response.get("error", e))

    async def _notify_root(self, thread: Thread, new: Sequence[Event], channel: str) -> str:
        """The ts of the message `thread` is posted under in `channel`: posted with the
        thread's first event, and bound to the thread so replies there continue it."""
        name = names.slack_notify_root(thread.id, channel)
        ts = await self.inbox.lookup(name)
        if ts:
            return ts
        first = next((e for e in thread.events if isinstance(e, UserMessage)), None)
        text = blocks.escape(wording.started_by(first.channel, first.user, first.text)) if first else thread.id
        posted = await self.web.chat_postMessage(channel=channel, text=blocks.cut(text, blocks.MESSAGE_TEXT))
        ts = await self.inbox.link(name, posted["ts"], thread.id)
        # Replies in that Slack thread are the thread's, as under a mention.
        await self.inbox.receive(names.slack_conversation(channel, ts), "root", EVENT_TTL, thread.id)
        return ts

    async def _post_all(
        self, thread: Thread, new: Sequence[Event], channel: str, thread_ts: str, approval_key: Callable[[str], str]
    ) -> None:
        for event in new:
            try:
                await self._post(thread, event, channel, thread_ts, approval_key)
            except SlackApiError as e:
                log.error(
                    "thread %s: Slack refused %s for %s: %s",
                    thread.id, event.type, channel, e.response.get("error", e),
                )

    async def _post(
        self, thread: Thread, event: Event, channel: str, thread_ts: str, key: Callable[[str], str]
    ) -> None:
        """`key`: approval id -> the Inbox name its approval message in this Slack thread is
        kept under (to update it in place as it goes)."""
        if isinstance(event, ApprovalRequested):
            posted = await self.web.chat_postMessage(
                channel=channel, thread_ts=thread_ts, text=blocks.fallback_text(event, thread.id),
                blocks=blocks.approval_request(thread.id, event),
            )
            await self.inbox.link(key(event.approval_id), posted["ts"], thread.id)
        elif isinstance(event, HumanResponse) and event.approval_id and event.approve is not None:
            ts = await self.inbox.lookup(key(event.approval_id))
            if ts and (shown := _approval_blocks(thread, event.approval_id)):
                await self.web.chat_update(channel=channel, ts=ts, **shown)
        elif isinstance(event, ApprovalExpired):
            ts = await self.inbox.lookup(key(event.approval_id))
            if ts and (shown := _approval_blocks(thread, event.approval_id)):
                await self.web.chat_update(channel=channel, ts=ts, **shown)
            if text := blocks.progress_text(thread, event):  # the requester's word: nothing was deployed
                await self.web.chat_postMessage(channel=channel, thread_ts=thread_ts, text=text)
        elif isinstance(event, ApprovalReminded):
            request = thread.pending_approval()
            if request is not None and request.approval_id == event.approval_id:
                deciders = (
                    blocks.mentions(self._deciders(thread, request), self.policy.directory) if self.policy
                    else blocks.escape(wording.the_approvers())
                )
                text = blocks.reminder_text(request, deciders, thread.id)
                await self.web.chat_postMessage(channel=channel, thread_ts=thread_ts, text=text)
        elif isinstance(event, ApprovalEscalated):
            request = thread.approval(event.approval_id)
            if request is not None:
                text = blocks.escalated_text(request, event.to, self._directory(), thread.id)
                await self.web.chat_postMessage(channel=channel, thread_ts=thread_ts, text=text)
        elif text := blocks.progress_text(thread, event):
            await self.web.chat_postMessage(channel=channel, thread_ts=thread_ts, text=text)

    # --- direct messages to whoever an approval is escalated to ----------------------------

    async def _direct(self, thread: Thread, event: Event) -> None:
        """An escalation asks each of its people by DM (posted to their Slack user id: the
        app's own conversation with them, which chat:write allows); once it is decided or
        lapsed, or someone approves one of several, those messages are updated like the one
        in the thread."""
        if isinstance(event, ApprovalEscalated):
            request = thread.approval(event.approval_id)
            if request is None or thread.decision_for(request.approval_id) or thread.expiry(request.approval_id):
                return
            for user in self._slack_ids(event.to):
                name = names.slack_dm_approval(request.approval_id, user)
                if await self.inbox.lookup(name):
                    continue  # asked already (the event was published again)
                posted = await self.web.chat_postMessage(
                    channel=user, text=blocks.fallback_text(request, thread.id),
                    blocks=blocks.approval_request(
                        thread.id, request, thread.approvals_for(request.approval_id), blocks.escalated_note(request)
                    ),
                )
                await self.inbox.link(name, f"{posted['channel']} {posted['ts']}")
        elif isinstance(event, HumanResponse | ApprovalExpired) and event.approval_id:
            if isinstance(event, HumanResponse) and event.approve is None:
                return
            escalation = thread.escalation(event.approval_id)
            request = thread.approval(event.approval_id)
            if escalation is None or request is None:
                return
            shown = _approval_blocks(thread, event.approval_id, blocks.escalated_note(request))
            for user in self._slack_ids(escalation.to):
                where = await self.inbox.lookup(names.slack_dm_approval(event.approval_id, user))
                if where and shown:
                    channel, _, ts = where.partition(" ")
                    await self.web.chat_update(channel=channel, ts=ts, **shown)

    def _directory(self) -> Directory:
        return self.policy.directory if self.policy is not None else Directory()

    def _slack_ids(self, principals: Sequence[str]) -> list[str]:
        """The Slack user ids of people (principals): a person's own ids, or a `slack:<id>`."""
        found: list[str] = []
        for principal in principals:
            person = self._directory().people.get(principal)
            if person is not None:
                found += person.slack
            elif principal.startswith("slack:"):
                found.append(principal.removeprefix("slack:"))
        return list(dict.fromkeys(found))

    def _deciders(self, thread: Thread, request: ApprovalRequested) -> list[str]:
        assert self.policy is not None
        return self.policy.still_to_decide(thread, request)


def _approval_blocks(thread: Thread, approval_id: str, note: str = "") -> dict[str, Any] | None:
    """What an approval message shows now (`text` and `blocks` for chat.update): decided,
    lapsed, or still open with the approvals it got so far (buttons kept; `note` on top)."""
    request = thread.approval(approval_id)
    if request is None:
        return None
    approvals = thread.approvals_for(approval_id)
    decision = thread.decision_for(approval_id)
    expiry = thread.expiry(approval_id)
    if decision is not None:
        shown = blocks.decided(request, decision, thread.id, approvals)
    elif expiry is not None:
        shown = blocks.expired(request, expiry.expires_at, thread.id)
    else:
        shown = blocks.approval_request(thread.id, request, approvals, note)
    return {"text": blocks.fallback_text(request, thread.id), "blocks": shown}


def _notify_approval(approval_id: str, channel: str) -> str:
    return names.slack_notify_approval_message(approval_id, channel)


@dataclass
class SlackChannel:
    """The Bolt app and its HTTP endpoint; `kick` hands a thread to the worker."""

    app: AsyncApp
    web: AsyncWebClient
    signing_secret: str
    app_token: str | None = None
    background: set[asyncio.Task[None]] = field(default_factory=set)  # slash commands after their ack

    def __post_init__(self) -> None:
        self._handler = AsyncSlackRequestHandler(self.app)
        self._verifier = SignatureVerifier(self.signing_secret)
        self._socket: Any = None

    async def endpoint(self, request: Request) -> Response:
        """Signature first, then shape, then Bolt. What can be checked without the body (the
        timestamp is a number and recent, a signature is there) is checked before it is read,
        and the body (at most 3 MB: bot.adapters.http.front_door) is read as bytes: a forged or broken
        request is a 401 with a log line, never an exception out of slack-sdk."""
        timestamp = request.headers.get("x-slack-request-timestamp", "")
        signature = request.headers.get("x-slack-signature", "")
        # int() refuses over 4,300 digits and accepts non-ASCII digits ("٣"): both excluded.
        if not (timestamp.isascii() and timestamp.isdigit() and len(timestamp) <= 12):
            log.warning("slack: refused a request whose timestamp is not a number: %.40r", timestamp)
            return JSONResponse({"error": "invalid signature"}, status_code=401)
        if abs(self._verifier.clock.now() - int(timestamp)) > 60 * 5:  # slack-sdk's window
            log.warning("slack: refused a stale request (timestamp %s)", timestamp)
            return JSONResponse({"error": "invalid signature"}, status_code=401)
        if not signature.isascii():  # hmac.compare_digest raises on non-ASCII text
            log.warning("slack: refused a request whose signature is not ASCII")
            return JSONResponse({"error": "invalid signature"}, status_code=401)
        body = await request.body()
        try:
            text = body.decode()
        except UnicodeDecodeError:
            # Slack signs UTF-8 text (slack-sdk can only check that): this one is unverifiable.
            log.warning("slack: refused a body that is not UTF-8 (%d bytes)", len(body))
            return JSONResponse({"error": "invalid signature"}, status_code=401)
        if not self._verifier.is_valid(text, timestamp, signature):
            log.warning("slack: refused a request with a bad or stale signature")
            return JSONResponse({"error": "invalid signature"}, status_code=401)
        if not _well_formed(body, request.headers.get("content-type", "")):
            log.warning("slack: malformed payload (%d bytes) refused", len(body))
            return JSONResponse({"error": "malformed payload"}, status_code=400)
        response = await self._handler.handle(request)
        # An event type nobody listens to is still delivered: answer 200 so Slack stops retrying.
        return Response(status_code=200) if response.status_code == 404 else response

    async def start(self, receive: bool = True) -> None:
        """`receive=False` in worker processes: they post to Slack but never take events."""
        # One pooled session: without it slack-sdk opens a new connection (and TLS
        # handshake) for every API call.
        self.web.session = aiohttp.ClientSession()
        if self.app_token and receive:
            from slack_bolt.adapter.socket_mode.async_handler import AsyncSocketModeHandler

            self._socket = AsyncSocketModeHandler(self.app, self.app_token)
            await self._socket.connect_async()

    async def stop(self) -> None:
        if self.background:
            await asyncio.gather(*list(self.background), return_exceptions=True)
        if self._socket:
            await self._socket.close_async()
        if self.web.session:
            await self.web.session.close()
            self.web.session = None


def _well_formed(body: bytes, content_type: str) -> bool:
    try:
        if "json" in content_type:
            data = json.loads(body)
        else:
            form = parse_qs(body.decode())
            if "command" in form:  # a slash command: flat form fields, no JSON payload
                return all(len(form.get(k, ())) == 1 for k in ("command", "user_id", "channel_id"))
            data = json.loads(form["payload"][0])
        if not (isinstance(data, dict) and isinstance(data.get("type"), str)):
            return False
        if data["type"].startswith("view_") and not isinstance(data.get("view"), dict):
            return False  # Bolt reads view.callback_id before any listener runs
        if data["type"] == "block_actions":
            # Bolt matches listeners on actions[].action_id before any of ours runs: a signed
            # payload without them would raise inside Bolt (a 500) instead of being refused.
            actions = data.get("actions")
            return bool(actions) and isinstance(actions, list) and all(
                isinstance(a, dict) and isinstance(a.get("action_id"), str) for a in actions
            )
        return True
    except (ValueError, KeyError, IndexError, RecursionError):  # UnicodeDecodeError is a ValueError
        return False


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
    inbound = _Inbound(service, inbox, kick, web, sign_in_link)
    background: set[asyncio.Task[None]] = set()  # slash commands at work after their ack

    @app.event("app_mention")
    async def on_mention(event: dict, body: dict, context: dict) -> None:
        bot_user = context.get("bot_user_id")
        if not _from_a_person(event, bot_user) or not (said := _said(event)):
            return
        if _asks_to_log_in(said.text, bot_user):
            await inbound.login(said, body, direct=False)
        else:
            await inbound.message(said, body, bot_user, may_start=True)

    @app.event("message")
    async def on_message(event: dict, body: dict, context: dict) -> None:
        bot_user = context.get("bot_user_id")
        if not _from_a_person(event, bot_user) or not (said := _said(event)):
            return
        direct = event.get("channel_type") == "im"
        if not direct and f"<@{bot_user}>" in said.text:
            return  # app_mention delivers this one
        if direct and _asks_to_log_in(said.text, bot_user):
            await inbound.login(said, body, direct=True)
        elif direct or said.in_thread:
            await inbound.message(said, body, bot_user, may_start=direct)

    @app.command(SLASH_COMMAND)
    async def on_command(ack: Callable, body: dict, respond: Callable) -> None:
        # Acknowledged at once, the work done after Slack has its answer: posting the command
        # in the channel is a Slack API call, which must not count against Slack's 3 seconds.
        # (Bolt's lazy listeners would do the same, but deep-copy the request, pooled client
        # session included, which cannot be copied.)
        await ack()
        task = asyncio.create_task(inbound.command(body, respond))
        background.add(task)
        task.add_done_callback(_finished(background))

    @app.action(blocks.APPROVE)
    async def on_approve(ack: Callable, body: dict, action: dict) -> None:
        await ack()
        await inbound.decide(body, action, approve=True)

    @app.action(blocks.REJECT)
    async def on_reject(ack: Callable, body: dict, action: dict, client: AsyncWebClient) -> None:
        await ack()
        click = await inbound.click(body, action)
        if click is None:
            return
        thread_id, approval_id, user, where = click
        try:
            await service.check_decision(thread_id, approval_id, inbound.who(user))
        except Refused as e:
            await inbound.tell(where, user, _refusal(e))
            return
        trigger_id = body.get("trigger_id")
        try:
            if not isinstance(trigger_id, str) or not trigger_id:
                raise ValueError("no trigger_id")
            await client.views_open(
                trigger_id=trigger_id, view=blocks.reject_modal(thread_id, approval_id, *where)
            )
        except (ValueError, SlackApiError) as e:
            why = e.response.get("error", e) if isinstance(e, SlackApiError) else e
            log.warning("slack: could not open the reject form for thread %s: %s", thread_id, why)
            await inbound.tell(where, user, COULD_NOT_OPEN_FORM)

    @app.view(blocks.REJECT_VIEW)
    async def on_feedback(ack: Callable, body: dict, view: dict) -> None:
        try:
            thread_id, approval_id, channel, thread_ts = blocks.parse_modal_metadata(
                view.get("private_metadata") if isinstance(view, dict) else None
            )
        except ValueError as e:
            log.warning("slack: refused a reject form with unreadable metadata: %s", e)
            await ack(response_action="errors", errors={blocks.FEEDBACK_BLOCK: STALE_FORM})
            return
        feedback, user = blocks.feedback_value(view), _user(body)
        if feedback is None or user is None:
            log.warning("slack: refused a reject form for thread %s without %s", thread_id,
                        "its feedback field" if feedback is None else "a user")
            await ack(response_action="errors", errors={blocks.FEEDBACK_BLOCK: STALE_FORM})
            return
        feedback = feedback.strip()
        if not feedback:
            await ack(response_action="errors", errors={blocks.FEEDBACK_BLOCK: "Say what should change."})
            return
        await ack()
        try:
            await service.respond(thread_id, feedback, inbound.who(user), approval_id, approve=False, channel="slack")
        except Refused as e:
            await inbound.tell((channel, thread_ts), user, _refusal(e))
            return
        await kick(thread_id)

    return SlackChannel(app, web, signing_secret, app_token, background)


def _finished(tasks: set[asyncio.Task[None]]) -> Callable[[asyncio.Task[None]], None]:
    def done(task: asyncio.Task[None]) -> None:
        tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("slack: a %s command failed", SLASH_COMMAND, exc_info=task.exception())

    return done


SLASH_COMMAND = "/deploy"
LOGIN_WORDS = ("login", "log in", "sign in")
NOT_IN_CHANNEL = "deploybot is not in this channel: invite it (`/invite @deploybot`) and try again."
OPEN_STATUSES = ("running", "waiting_for_sender", "waiting_for_approval", "waiting_for_lock", "waiting_for_human")
SIGN_IN_NOT_SET_UP = "Sign-in is not set up on this deploybot."
SIGN_IN_FAILED = "deploybot could not make a sign-in link just now; try again in a moment."
COULD_NOT_OPEN_FORM = "Slack did not open the rejection form; click Reject again."
STALE_FORM = "This form is out of date or incomplete: click Reject on the approval message again."
NOT_OUR_BUTTON = "That button is not one deploybot can act on; use the buttons of its latest approval message."
# Message subtypes that are people talking (a `/me` message too); every other one (edits,
# deletions, joins, bot messages, ...) is ignored.
HUMAN_SUBTYPES = (None, "thread_broadcast", "file_share", "me_message")


def _from_a_person(event: dict, bot_user: str | None) -> bool:
    """False (quietly) for what the bot ignores: edits, deletions, joins, and anything a bot
    said (us included), whether it came as a message or as an app_mention."""
    return (
        event.get("subtype") in HUMAN_SUBTYPES
        and not event.get("bot_id")
        and (bot_user is None or event.get("user") != bot_user)
    )


@dataclass(frozen=True)
class _Said:
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


def _said(event: dict) -> _Said | None:
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
    return _Said(channel, ts, user, text, thread_ts, files)


def _asks_to_log_in(text: str, bot_user: str | None) -> bool:
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
        f"<{blocks.escape(url)}|sign in>. It works once and soon expires; do not share it."
    )


def _user(body: dict) -> str | None:
    user = body.get("user")
    user_id = user.get("id") if isinstance(user, dict) else None
    return user_id if isinstance(user_id, str) and user_id else None


def _where(body: dict) -> tuple[str, str] | None:
    """(channel, thread_ts) of the message a button sits on; None when the payload lacks it."""
    channel = body.get("channel")
    channel_id = channel.get("id") if isinstance(channel, dict) else None
    if not isinstance(channel_id, str) or not channel_id:
        return None
    message, container = body.get("message"), body.get("container")
    thread_ts = (message.get("thread_ts") if isinstance(message, dict) else None) or (
        container.get("message_ts") if isinstance(container, dict) else None
    )
    return channel_id, thread_ts if isinstance(thread_ts, str) else ""


async def _respond(respond: Callable, text: str) -> None:
    """A private answer to a slash command (through its response_url: works where the bot
    is not a member)."""
    try:
        await respond(text=blocks.cut(text, blocks.MESSAGE_TEXT), response_type="ephemeral")
    except Exception as e:  # the response_url expired or Slack is away: nothing to retry
        log.warning("slack: could not answer a %s command: %s", SLASH_COMMAND, e)


def _refusal(e: Refused) -> str:
    return f"You can't decide on this deploy: {e.message}" if isinstance(e, Forbidden) else e.message


class _Inbound:
    def __init__(
        self, service: ThreadService, inbox: Inbox, kick: Callable[[str], Awaitable[None]], web: AsyncWebClient,
        sign_in_link: SignInLink | None = None,
    ) -> None:
        self.service, self.inbox, self.kick, self.web = service, inbox, kick, web
        self.sign_in_link = sign_in_link

    def who(self, user_id: str) -> Identity:
        """The person behind a Slack user id (unknown: `slack:<id>`, with no powers but `*`)."""
        return self.service.directory.by_slack(user_id)

    async def message(self, said: _Said, body: dict, bot_user: str | None, may_start: bool) -> None:
        event_id = body.get("event_id")
        message_id = event_id if isinstance(event_id, str) and event_id else said.ts
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

    async def login(self, said: _Said, body: dict, direct: bool) -> None:
        """`@deploybot login` or a DM saying "login": a one-time sign-in link for the Slack
        user's person, told privately (an ephemeral message in a channel, a reply in the DM).
        Never starts a thread nor enters one; a repeated delivery is answered once."""
        event_id = body.get("event_id")
        message_id = event_id if isinstance(event_id, str) and event_id else said.ts
        scope = names.slack_conversation(said.channel, said.root)
        fresh, _, _ = await self.inbox.receive(scope, message_id, EVENT_TTL, None)
        if not fresh:
            log.info("slack: %s was delivered again; its sign-in link was already sent", message_id)
            return
        who = self.who(said.user)
        if self.sign_in_link is None:
            text = blocks.escape(SIGN_IN_NOT_SET_UP)
        elif who.person is None:
            log.info("slack: %s asked to sign in but is nobody in deploybot.toml", said.user)
            text = blocks.escape(not_in_the_directory(said.user))
        else:
            try:
                url = await self.sign_in_link(who.person)
            except Exception:
                log.exception("slack: could not make a sign-in link for %s", who.person)
                text = blocks.escape(SIGN_IN_FAILED)
            else:
                log.info("slack: sent %s (%s) a sign-in link", who.person, said.user)
                text = sign_in_text(who.person, url)
        where = (said.channel, said.thread_ts or "")
        if direct:  # only they and the bot see a DM: an ordinary reply
            try:
                await self.web.chat_postMessage(channel=said.channel, text=text, thread_ts=said.thread_ts)
            except SlackApiError as e:
                log.error("slack: could not answer %s in %s: %s", said.user, said.channel, e.response.get("error", e))
        else:
            await self.tell_mrkdwn(where, said.user, text)

    async def command(self, body: dict, respond: Callable) -> None:
        """`/deploy ...`: `help` and `status` are answered privately; anything else is posted
        in the channel it was typed in and starts a thread answered under that post, like a
        mention. Runs after the acknowledgement; a repeated delivery is taken once."""
        user, channel, trigger_id = body.get("user_id"), body.get("channel_id"), body.get("trigger_id")
        text = body.get("text")
        text = text if isinstance(text, str) else ""
        if not all(isinstance(v, str) and v for v in (user, channel, trigger_id)):
            log.warning("slack: ignored a %s command without a user, channel or trigger id", SLASH_COMMAND)
            return
        assert isinstance(user, str) and isinstance(channel, str) and isinstance(trigger_id, str)
        fresh, _, _ = await self.inbox.receive(names.slack_command(trigger_id), "command", EVENT_TTL, None)
        if not fresh:
            log.info("slack: command %s was delivered again; taken once", trigger_id)
            return
        typed = " ".join(blocks.unescape(text).split())
        word = typed.lower()
        if word in ("", "help"):
            await _respond(respond, blocks.escape(wording.slash_command_help(SLASH_COMMAND, EXAMPLES)))
            return
        if word == "status":
            await _respond(respond, await self._status(channel))
            return
        message = typed if parse_command(typed) is not None or word.startswith("deploy ") else f"deploy {typed}"
        who = self.who(user)
        shown = blocks.escape(f"{SLASH_COMMAND} {typed}")
        try:
            posted = await self.web.chat_postMessage(
                channel=channel, text=blocks.cut(f"<@{user}> asked: {shown}", blocks.MESSAGE_TEXT),
            )
        except SlackApiError as e:
            error = e.response.get("error", e)
            log.warning("slack: could not post %s in %s: %s", SLASH_COMMAND, channel, error)
            await _respond(respond, blocks.escape(NOT_IN_CHANNEL if error in ("not_in_channel", "channel_not_found")
                                                  else f"Slack refused to post here: {error}"))
            return
        ts = posted["ts"]
        scope = names.slack_conversation(channel, ts)
        _, thread_id, _ = await self.inbox.receive(scope, ts, EVENT_TTL, new_id())
        assert thread_id is not None
        origin = Origin(channel="slack", slack_channel=channel, slack_thread_ts=ts)
        await self.service.launch(message, who, "slack", origin, thread_id, evidence=f"{user} {SLASH_COMMAND}")
        await self.kick(thread_id)

    async def _status(self, channel: str) -> str:
        """The open threads of this Slack channel only: a member of one channel is not shown
        what was asked elsewhere (another channel, email, the API)."""
        threads = [
            t for t in await self.service.recent(limit=50)
            if t.status() in OPEN_STATUSES and t.origin.slack_channel == channel
        ]
        lines = []
        for thread in threads[:10]:
            first = next((e for e in thread.events if isinstance(e, UserMessage)), None)
            lines.append(wording.status_line(thread.id, thread.status(), first.text[:100] if first else ""))
        return blocks.escape("\n".join([wording.slash_command_status(len(lines)), *lines]))

    async def _record(self, said: _Said, thread_id: str, started: bool, bot_user: str | None) -> None:
        channel, root, user, text = said.channel, said.root, said.user, said.text
        who = self.who(user)
        if bot_user:
            text = re.sub(rf"<@{re.escape(bot_user)}>\s*", "", text)
        text = blocks.unescape(text).strip()  # stored as typed; escaped again on the way out
        if said.with_files:  # only the words are read: say so where the model and people see it
            text = f"{text}\n\n{blocks.FILES_IGNORED}" if text else blocks.FILES_IGNORED
        origin = Origin(channel="slack", slack_channel=channel, slack_thread_ts=root)
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

    async def click(self, body: dict, action: object) -> tuple[str, str, str, tuple[str, str]] | None:
        """(thread_id, approval_id, user, where) of a click on an approval button; None (told
        or logged) when the payload is not one."""
        user, where = _user(body), _where(body)
        try:
            value = action.get("value") if isinstance(action, dict) else None
            thread_id, approval_id = blocks.parse_button_value(value)
        except ValueError as e:
            log.warning("slack: ignored a click on a button deploybot did not make: %s", e)
            if user and where:
                await self.tell(where, user, NOT_OUR_BUTTON)
            return None
        if not user or not where:
            log.warning("slack: ignored a click on thread %s without a user or channel", thread_id)
            return None
        return thread_id, approval_id, user, where

    async def decide(self, body: dict, action: object, approve: bool) -> None:
        click = await self.click(body, action)
        if click is None:
            return
        thread_id, approval_id, user, where = click
        try:
            await self.service.respond(thread_id, "", self.who(user), approval_id, approve=approve, channel="slack")
        except Refused as e:
            await self.tell(where, user, _refusal(e))
            return
        await self.kick(thread_id)

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
