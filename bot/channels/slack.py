"""Slack: mentions and thread replies in, Block Kit approvals and progress out.

Listeners run before the HTTP answer (`process_before_response`), so an inbound message is
stored in its thread before Slack hears "200"; the agent loop itself runs afterwards in the
worker, so every answer still takes milliseconds, well inside Slack's 3 seconds.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
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

from bot.channels import slack_blocks as blocks
from bot.events import ApprovalRequested, Event, HumanResponse, new_id
from bot.ports import Inbox
from bot.service import Forbidden, NotFound, Refused, ThreadService
from bot.stores import keys as names
from bot.thread import Origin, Thread

log = logging.getLogger(__name__)
EVENT_TTL = 24 * 3600  # Slack retries for a few minutes; a day is plenty to spot a repeat


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
    """Posts what happens in Slack-born threads back into their Slack thread."""

    def __init__(self, web: AsyncWebClient, inbox: Inbox) -> None:
        self.web, self.inbox = web, inbox

    async def publish(self, thread: Thread, new: Sequence[Event]) -> None:
        channel, thread_ts = thread.origin.slack_channel, thread.origin.slack_thread_ts
        if thread.origin.channel != "slack" or not channel or not thread_ts:
            return
        for event in new:
            try:
                await self._post(thread, event, channel, thread_ts)
            except SlackApiError as e:
                log.error(
                    "thread %s: Slack refused %s for %s: %s",
                    thread.id, event.type, channel, e.response.get("error", e),
                )

    async def _post(self, thread: Thread, event: Event, channel: str, thread_ts: str) -> None:
        if isinstance(event, ApprovalRequested):
            posted = await self.web.chat_postMessage(
                channel=channel, thread_ts=thread_ts, text=blocks.fallback_text(event),
                blocks=blocks.approval_request(thread.id, event),
            )
            await self.inbox.link(names.slack_approval_message(event.approval_id), posted["ts"])
        elif isinstance(event, HumanResponse) and event.approval_id and event.approve is not None:
            request = thread.approval(event.approval_id)
            ts = await self.inbox.lookup(names.slack_approval_message(event.approval_id))
            if request and ts:
                await self.web.chat_update(
                    channel=channel, ts=ts, text=blocks.fallback_text(request),
                    blocks=blocks.decided(request, event),
                )
        elif text := blocks.progress_text(thread, event):
            await self.web.chat_postMessage(channel=channel, thread_ts=thread_ts, text=text)


@dataclass
class SlackChannel:
    """The Bolt app and its HTTP endpoint; `kick` hands a thread to the worker."""

    app: AsyncApp
    web: AsyncWebClient
    signing_secret: str
    app_token: str | None = None

    def __post_init__(self) -> None:
        self._handler = AsyncSlackRequestHandler(self.app)
        self._verifier = SignatureVerifier(self.signing_secret)
        self._socket: Any = None

    async def endpoint(self, request: Request) -> Response:
        body = await request.body()
        if not self._verifier.is_valid_request(body, dict(request.headers)):
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
            data = json.loads(parse_qs(body.decode())["payload"][0])
        return isinstance(data, dict) and isinstance(data.get("type"), str)
    except (ValueError, KeyError, IndexError, UnicodeDecodeError):
        return False


def build(
    signing_secret: str,
    web: AsyncWebClient,
    service: ThreadService,
    inbox: Inbox,
    kick: Callable[[str], Awaitable[None]],
    app_token: str | None = None,
) -> SlackChannel:
    # The endpoint verifies signatures before Bolt sees a request (so a forged malformed
    # body is a 401, not a 400); Bolt need not do it again.
    app = AsyncApp(
        signing_secret=signing_secret, client=web, process_before_response=True,
        request_verification_enabled=False,
    )
    inbound = _Inbound(service, inbox, kick, web)

    @app.event("app_mention")
    async def on_mention(event: dict, body: dict, context: dict) -> None:
        await inbound.message(event, body, context.get("bot_user_id"), may_start=True)

    @app.event("message")
    async def on_message(event: dict, body: dict, context: dict) -> None:
        bot_user = context.get("bot_user_id")
        if event.get("subtype") or event.get("bot_id") or event.get("user") in (None, bot_user):
            return  # edits, joins, and anything a bot said (us included)
        direct = event.get("channel_type") == "im"
        if not direct and f"<@{bot_user}>" in event.get("text", ""):
            return  # app_mention delivers this one
        if direct or event.get("thread_ts"):
            await inbound.message(event, body, bot_user, may_start=direct)

    @app.action(blocks.APPROVE)
    async def on_approve(ack: Callable, body: dict, action: dict) -> None:
        await ack()
        await inbound.decide(body, action, approve=True)

    @app.action(blocks.REJECT)
    async def on_reject(ack: Callable, body: dict, action: dict, client: AsyncWebClient) -> None:
        await ack()
        thread_id, approval_id = blocks.parse_button_value(action["value"])
        where = _where(body)
        try:
            await service.check_decision(thread_id, approval_id, body["user"]["id"])
        except Refused as e:
            await inbound.tell(where, body["user"]["id"], _refusal(e))
            return
        await client.views_open(
            trigger_id=body["trigger_id"],
            view=blocks.reject_modal(thread_id, approval_id, *where),
        )

    @app.view(blocks.REJECT_VIEW)
    async def on_feedback(ack: Callable, body: dict, view: dict) -> None:
        values = view["state"]["values"][blocks.FEEDBACK_BLOCK][blocks.FEEDBACK_BLOCK]
        feedback = (values.get("value") or "").strip()
        if not feedback:
            await ack(response_action="errors", errors={blocks.FEEDBACK_BLOCK: "Say what should change."})
            return
        await ack()
        thread_id, approval_id, channel, thread_ts = blocks.parse_modal_metadata(view["private_metadata"])
        user = body["user"]["id"]
        try:
            await service.respond(thread_id, feedback, user, approval_id, approve=False, channel="slack")
        except Refused as e:
            await inbound.tell((channel, thread_ts), user, _refusal(e))
            return
        await kick(thread_id)

    return SlackChannel(app, web, signing_secret, app_token)


def _where(body: dict) -> tuple[str, str]:
    message = body.get("message") or {}
    return body["channel"]["id"], message.get("thread_ts") or body["container"].get("message_ts", "")


def _refusal(e: Refused) -> str:
    return f"You can't decide on this deploy: {e.message}" if isinstance(e, Forbidden) else e.message


class _Inbound:
    def __init__(
        self, service: ThreadService, inbox: Inbox, kick: Callable[[str], Awaitable[None]], web: AsyncWebClient
    ) -> None:
        self.service, self.inbox, self.kick, self.web = service, inbox, kick, web

    async def message(self, event: dict, body: dict, bot_user: str | None, may_start: bool) -> None:
        message_id = body.get("event_id") or event.get("client_msg_id") or event["ts"]
        root = event.get("thread_ts") or event["ts"]
        scope = names.slack_conversation(event["channel"], root)
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
            await self._record(event, root, thread_id, started, bot_user)
        except Exception:
            await self.inbox.forget(scope, message_id)  # let Slack's retry deliver it again
            raise
        await self.kick(thread_id)

    async def _record(
        self, event: dict, root: str, thread_id: str, started: bool, bot_user: str | None
    ) -> None:
        channel, user = event["channel"], event["user"]
        text = event.get("text", "")
        if bot_user:
            text = re.sub(rf"<@{bot_user}>\s*", "", text).strip()
        origin = Origin(channel="slack", slack_channel=channel, slack_thread_ts=root)
        if not started:
            try:
                await self.service.respond(thread_id, text, user, channel="slack")
                return
            except NotFound:
                pass  # bound by a first message whose thread was never stored: start it now
            except Refused as e:
                await self.tell((channel, root), user, e.message)
                return
        await self.service.launch(text or "(empty mention)", user, "slack", origin, thread_id)

    async def decide(self, body: dict, action: dict, approve: bool) -> None:
        thread_id, approval_id = blocks.parse_button_value(action["value"])
        user = body["user"]["id"]
        try:
            await self.service.respond(thread_id, "", user, approval_id, approve=approve, channel="slack")
        except Refused as e:
            await self.tell(_where(body), user, _refusal(e))
            return
        await self.kick(thread_id)

    async def tell(self, where: tuple[str, str], user: str, text: str) -> None:
        channel, thread_ts = where
        try:
            await self.web.chat_postEphemeral(
                channel=channel, user=user, text=text, thread_ts=thread_ts or None
            )
        except SlackApiError as e:
            log.error("slack: could not tell %s in %s: %s", user, channel, e.response.get("error", e))
