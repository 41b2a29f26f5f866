"""Body limits per path: a Content-Length above a path's limit is a 413 before anything is
read, and a body without one (chunked) is counted while it streams: 413 as soon as the count
passes the limit, so no more than the limit is ever held. The table of paths also says what
each asks of credentials (`Limit.auth`) and where a session's CSRF token is checked."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Literal

from starlette.datastructures import Headers
from starlette.exceptions import HTTPException
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from bot.adapters.http.shared import Refusal

log = logging.getLogger(__name__)

SLACK_MAX_BYTES = 3 * 1024 * 1024  # Slack's events and interactions are kilobytes
# GitHub caps a delivery at 25 MB; the events triggers read (release, a tag's push, a
# workflow run) are kilobytes, so a larger one is refused (GitHub shows it as failed).
GITHUB_MAX_BYTES = 5 * 1024 * 1024
# The API's JSON bodies. Generous on purpose: a message at the 20,000-character limit
# (bot.adapters.http.shared.MAX_TEXT_CHARS) still fits when every character is JSON-escaped as a
# surrogate pair (12 bytes), so the clear "message too long" 413 comes from the app.
API_MAX_BYTES = 256 * 1024

Access = Literal["required", "optional", "none"]
# Where a session's CSRF token is checked: "header" here, before the body (X-CSRF-Token);
# "page": by the app, from the form it posted (HTML forms cannot set headers: bot/adapters/http/console
# checks every POST's `csrf_token` field against the same token, Auth.csrf).
Csrf = Literal["header", "page"]


@dataclass(frozen=True)
class Limit:
    path: str  # the path itself and everything under it ("/threads" covers "/threads/x")
    max_bytes: int
    # required: credentials asked (unless local mode); optional: read when given (signing
    # in); none: not even read (the endpoint authenticates itself, or is health)
    auth: Access = "required"
    csrf: Csrf = "header"

    def covers(self, path: str) -> bool:
        return path == self.path or path.startswith(self.path + "/")


def deploybot_limits(email_max_bytes: int | None) -> tuple[Limit, ...]:
    """Every other path (the thread API, /deploys, /docs, /openapi.json, /redoc, and any
    route added later) takes credentials and API_MAX_BYTES."""
    return (
        Limit("/healthz", API_MAX_BYTES, auth="none"),
        Limit("/slack/events", SLACK_MAX_BYTES, auth="none"),  # signed by Slack: checked by the endpoint
        # Signed by GitHub (X-Hub-Signature-256, GITHUB_WEBHOOK_SECRET): checked by the endpoint,
        # which refuses a request without a well-formed signature before reading its body.
        Limit("/github/webhook", GITHUB_MAX_BYTES, auth="none"),
        # The inbound secret is checked by the endpoint before it reads the body.
        Limit("/email/inbound", API_MAX_BYTES if email_max_bytes is None else email_max_bytes, auth="none"),
        # Using a sign-in link asks no session's token (a browser signed in as someone else may
        # use one): the route takes its form only from the bot's own origin (state same_origin).
        Limit("/auth/link", API_MAX_BYTES, auth="optional", csrf="page"),
        Limit("/auth", API_MAX_BYTES, auth="optional"),
        # The web console: without credentials it shows how to sign in (the pages check who
        # is asking themselves: ANONYMOUS sees nothing else); its forms carry the CSRF token.
        Limit("/console", API_MAX_BYTES, auth="optional", csrf="page"),
        Limit("/", API_MAX_BYTES, auth="optional"),  # only "/" itself: a redirect to /console/
        Limit("/favicon.ico", API_MAX_BYTES, auth="none"),  # browsers ask on every page
    )


class BodyTooLarge(HTTPException):
    """Raised from `receive` once a streamed body passes the limit. An HTTPException, so
    FastAPI re-raises it from its body parsing (rather than calling it a 400) and the
    app's exception middleware answers 413."""

    def __init__(self, max_bytes: int) -> None:
        super().__init__(status_code=413, detail=f"request body larger than {max_bytes} bytes")


def declared_too_large(scope: Scope, headers: Headers, max_bytes: int) -> Refusal | None:
    """A Content-Length that is not a number (400) or over `max_bytes` (413), said before the
    body is read; else None."""
    declared = headers.get("content-length")
    if declared is None:
        return None
    if not declared.isascii() or not declared.isdigit():
        return Refusal(400, "invalid Content-Length")
    if len(declared) > 15 or int(declared) > max_bytes:  # int() refuses 4,300+ digits
        log.warning("http: refused %s %s: Content-Length %s is over the %d-byte limit",
                    scope["method"], scope["path"], declared, max_bytes)
        return Refusal(413, f"request body larger than {max_bytes} bytes")
    return None


def body_expected(headers: Headers) -> bool:
    """Whether a body follows the headers (chunked, or a Content-Length but 0)."""
    chunked = "chunked" in headers.get("transfer-encoding", "").lower()
    return chunked or headers.get("content-length") not in (None, "0")


class Counted:
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
            await refuse(scope, receive, send, 413, str(e.detail))


async def refuse(
    scope: Scope, receive: Receive, send: Send, status: int, detail: str, headers: dict[str, str] | None = None
) -> None:
    response = JSONResponse({"detail": detail}, status_code=status, headers={**(headers or {}), "Connection": "close"})
    await response(scope, receive, send)

