"""Slack's HTTP endpoint (signature first, then shape, then Bolt) and the channel's life:
the pooled Web API session, and Socket Mode when an app token is set."""

from __future__ import annotations

import asyncio
import json
import logging
from dataclasses import dataclass, field
from urllib.parse import parse_qs

import aiohttp
from slack_bolt.adapter.starlette.async_handler import AsyncSlackRequestHandler
from slack_bolt.async_app import AsyncApp
from slack_sdk.signature import SignatureVerifier
from slack_sdk.web.async_client import AsyncWebClient
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from bot.adapters.channels.slack.socket_mode import SocketMode

log = logging.getLogger(__name__)


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
        self._socket: SocketMode | None = None

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
            self._socket = SocketMode(self.app, self.app_token)
            await self._socket.open()

    async def stop(self) -> None:
        if self.background:
            await asyncio.gather(*list(self.background), return_exceptions=True)
        if self._socket:
            await self._socket.close()
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
