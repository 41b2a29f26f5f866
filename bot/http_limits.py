"""The HTTP front door: what a request must pass before the app reads a byte of its body.

A pure ASGI middleware around the whole app (the root wraps `web.create_app` in it):

- a body limit per path: a Content-Length above it is a 413 before anything is read, and a
  body without one (chunked) is counted while it streams: 413 as soon as the count passes
  the limit, so no more than the limit is ever held;
- on every path but the public ones (health, and the Slack and email endpoints, which
  authenticate themselves), `Authorization: Bearer <API_TOKEN>` is checked, in constant
  time, before the body is read: an unauthenticated request is never parsed. Without
  API_TOKEN (local mode, bound to 127.0.0.1) the API stays open, as before.

Refusals say why in JSON (`{"detail": ...}`, like the app's own) and close the connection,
so a client still sending a huge body is not read to the end.

Also here: the filter that keeps query-string secrets (`/email/inbound?secret=...`) out of
uvicorn's access log.
"""

from __future__ import annotations

import copy
import hmac
import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote_plus

from starlette.datastructures import Headers
from starlette.exceptions import HTTPException
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

log = logging.getLogger(__name__)

SLACK_MAX_BYTES = 3 * 1024 * 1024  # Slack's events and interactions are kilobytes
# The API's JSON bodies. Generous on purpose: a message at the 20,000-character limit
# (bot.web.MAX_TEXT_CHARS) still fits when every character is JSON-escaped as a
# surrogate pair (12 bytes), so the clear "message too long" 413 comes from the app.
API_MAX_BYTES = 256 * 1024
UNAUTHORIZED = "missing or wrong bearer token (Authorization: Bearer <API_TOKEN>)"


@dataclass(frozen=True)
class Limit:
    path: str  # the path itself and everything under it ("/threads" covers "/threads/x")
    max_bytes: int
    public: bool = False  # True: no API token asked (the endpoint authenticates, or is health)

    def covers(self, path: str) -> bool:
        return path == self.path or path.startswith(self.path + "/")


def deploybot_limits(email_max_bytes: int | None) -> tuple[Limit, ...]:
    """Every other path (the thread API, /deploys, /docs, /openapi.json, /redoc, and any
    route added later) takes the API token and API_MAX_BYTES."""
    return (
        Limit("/healthz", API_MAX_BYTES, public=True),
        Limit("/slack/events", SLACK_MAX_BYTES, public=True),  # signed by Slack: checked by the endpoint
        # The inbound secret is checked by the endpoint before it reads the body.
        Limit("/email/inbound", API_MAX_BYTES if email_max_bytes is None else email_max_bytes, public=True),
    )


class BodyTooLarge(HTTPException):
    """Raised from `receive` once a streamed body passes the limit. An HTTPException, so
    FastAPI re-raises it from its body parsing (rather than calling it a 400) and the
    app's exception middleware answers 413."""

    def __init__(self, max_bytes: int) -> None:
        super().__init__(status_code=413, detail=f"request body larger than {max_bytes} bytes")


class HttpLimits:
    """The middleware: `HttpLimits(create_app(parts), api_token, email_max_bytes)`.
    `limits` replaces the table from `deploybot_limits`; any other path takes the token and
    `default_max_bytes`."""

    def __init__(
        self,
        app: ASGIApp,
        api_token: str | None,
        email_max_bytes: int | None = None,
        limits: Sequence[Limit] | None = None,
        default_max_bytes: int = API_MAX_BYTES,
    ) -> None:
        self.app = app
        self.expected = f"Bearer {api_token}".encode() if api_token else None
        self.limits = tuple(deploybot_limits(email_max_bytes) if limits is None else limits)
        self.default = Limit("/", default_max_bytes)

    def limit(self, path: str) -> Limit:
        return next((rule for rule in self.limits if rule.covers(path)), self.default)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":  # lifespan (and websockets, which we do not serve)
            await self.app(scope, receive, send)
            return
        rule = self.limit(scope["path"])
        headers = Headers(scope=scope)
        if self.expected is not None and not rule.public and not self._authorized(scope):
            await _refuse(scope, receive, send, 401, UNAUTHORIZED, {"WWW-Authenticate": "Bearer"})
            return
        declared = headers.get("content-length")
        if declared is not None:
            if not declared.isascii() or not declared.isdigit():
                await _refuse(scope, receive, send, 400, "invalid Content-Length")
                return
            if len(declared) > 15 or int(declared) > rule.max_bytes:  # int() refuses 4,300+ digits
                log.warning("http: refused %s %s: Content-Length %s is over the %d-byte limit",
                            scope["method"], scope["path"], declared, rule.max_bytes)
                await _refuse(scope, receive, send, 413, f"request body larger than {rule.max_bytes} bytes")
                return
        chunked = "chunked" in headers.get("transfer-encoding", "").lower()
        await _Counted(self.app, rule.max_bytes, chunked or declared not in (None, "0"))(scope, receive, send)

    def _authorized(self, scope: Scope) -> bool:
        assert self.expected is not None
        offered = next((v for k, v in scope["headers"] if k.lower() == b"authorization"), b"")
        return hmac.compare_digest(offered, self.expected)


class _Counted:
    """One request: counts the body as the app receives it and stops it past the limit.

    A response that starts before the body was read to its end (a refusal: too large, or
    an endpoint that said 401 without reading) closes the connection: otherwise the server
    would go on reading the rest of the body, only to throw it away."""

    def __init__(self, app: ASGIApp, max_bytes: int, body_expected: bool) -> None:
        self.app, self.max_bytes = app, max_bytes
        self.unread = body_expected
        self.received = 0
        self.over = False
        self.started = False

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        async def counted_receive() -> Message:
            if self.over:
                raise BodyTooLarge(self.max_bytes)
            message = await receive()
            if message["type"] == "http.request":
                self.received += len(message.get("body", b""))
                if self.received > self.max_bytes:
                    # The chunk that crossed the limit is dropped here: the app holds at
                    # most max_bytes of this body.
                    self.over = True
                    log.warning("http: refused %s %s: body over the %d-byte limit while streaming",
                                scope["method"], scope["path"], self.max_bytes)
                    raise BodyTooLarge(self.max_bytes)
                self.unread = message.get("more_body", False)
            return message

        async def closing_send(message: Message) -> None:
            if message["type"] == "http.response.start":
                self.started = True
                if self.over or self.unread:
                    message = {**message, "headers": [*message.get("headers", []), (b"connection", b"close")]}
            await send(message)

        try:
            await self.app(scope, counted_receive, closing_send)
        except BodyTooLarge as e:  # an app that did not turn it into a response itself
            if self.started:
                raise
            await _refuse(scope, receive, send, 413, str(e.detail))


async def _refuse(
    scope: Scope, receive: Receive, send: Send, status: int, detail: str, headers: dict[str, str] | None = None
) -> None:
    response = JSONResponse({"detail": detail}, status_code=status, headers={**(headers or {}), "Connection": "close"})
    await response(scope, receive, send)


# --- access log --------------------------------------------------------------------------

SECRET_PARAMETERS = frozenset({"secret", "token", "api_token", "access_token", "api_key", "password"})
_QUERY = re.compile(r"\?[^\s\"']*")


def redact_query(text: str) -> str:
    """`/email/inbound?secret=abc&x=1` -> `/email/inbound?secret=[redacted]&x=1`. Parameter
    names are compared as the app reads them (percent-decoded), so `?%73ecret=` is caught too."""

    def pair(item: str) -> str:
        name, eq, _ = item.partition("=")
        return f"{name}=[redacted]" if eq and unquote_plus(name).strip().lower() in SECRET_PARAMETERS else item

    return _QUERY.sub(lambda m: "?" + "&".join(pair(p) for p in m.group(0)[1:].split("&")), text)


class RedactQuerySecrets(logging.Filter):
    """On "uvicorn.access": its records carry the path with its query string as an argument
    (`'%s - "%s %s HTTP/%s" %d'`); every string argument (and the message) is redacted."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.args, tuple):
            record.args = tuple(redact_query(a) if isinstance(a, str) else a for a in record.args)
        if isinstance(record.msg, str):
            record.msg = redact_query(record.msg)
        return True


def uvicorn_log_config() -> dict[str, Any]:
    """uvicorn's own logging configuration, with the redaction on its access logger."""
    from uvicorn.config import LOGGING_CONFIG

    config = copy.deepcopy(LOGGING_CONFIG)
    config.setdefault("filters", {})["redact_query_secrets"] = {"()": RedactQuerySecrets}
    config["loggers"]["uvicorn.access"].setdefault("filters", []).append("redact_query_secrets")
    return config
