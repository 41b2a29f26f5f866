"""POST /threads, the plain case, answered without the framework (CPU per request).

Pipelines, webhooks and agents start threads here all day; FastAPI's route (api/threads.py)
spends more CPU on its layers than the launch itself. `FastLaunch` sits inside the front
door (so who is asking is already settled and the body is counted against its limit) and
answers a request that is plainly well formed: a JSON body that `LaunchBody` accepts, for an
identity that may say it. Everything else (another content type, a body the model refuses,
a `user` the identity may not use, no front door) goes on to the framework's route with the
body it read, so every refusal is the route's own, word for word, and the route stays the
one in the OpenAPI schema. What the launch itself refuses is answered with the app's own
error handlers (api/errors.py).
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import OutOfMemoryError
from redis.exceptions import TimeoutError as RedisTimeoutError
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from bot.adapters.http.api import errors, json_text
from bot.adapters.http.api.threads import LaunchBody
from bot.adapters.http.api.who import acting
from bot.adapters.http.shared import Parts
from bot.runtime.service import Refused

PATH = "/threads"
JSON_TYPES = (b"application/json", b"application/json; charset=utf-8")


class FastLaunch:
    def __init__(self, app: ASGIApp, parts: Parts) -> None:
        self.app, self.parts = app, parts

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if not _plain_launch(scope):
            await self.app(scope, receive, send)
            return
        body = await _whole_body(receive)
        if body is None:  # the client went away before its body ended: nothing to launch
            return
        response = await self._answer(scope, body)
        if response is None:  # not the plain case: the framework's route, with the body read
            await self.app(scope, _replaying(body, receive), send)
            return
        await response(scope, receive, send)

    async def _answer(self, scope: Scope, body: bytes) -> Response | None:
        """The launch's response; None when the framework's route is to answer."""
        if json_text.problem(body) is not None:  # refused by the route, in its words
            return None
        try:
            launch = LaunchBody.model_validate_json(body)
        except ValidationError:
            return None
        request = Request(scope)
        try:
            who = acting(request, self.parts, launch.user, text=launch.message)
        except Refused:
            return None
        try:
            thread = await self.parts.service.launch(launch.message, who, channel="api", handoff=self.parts.queue)
        except Refused as e:
            return await errors.refused(request, e)
        except (RedisConnectionError, RedisTimeoutError) as e:
            return await errors.unavailable(request, e)
        except OutOfMemoryError as e:
            return await errors.full(request, e)
        return JSONResponse({"id": thread.id}, status_code=201)


def _plain_launch(scope: Scope) -> bool:
    """POST /threads with a JSON body, past the front door (which put who is asking in the
    state; without it the route checks the token itself)."""
    if scope["type"] != "http" or scope["path"] != PATH or scope["method"] != "POST":
        return False
    if "identity" not in scope.get("state", {}):
        return False
    if any(k == b"idempotency-key" for k, _ in scope["headers"]):
        return False  # the route's: it finds a retry's first thread (api/idempotency.py)
    content_type = next((v for k, v in scope["headers"] if k == b"content-type"), b"")
    return content_type.lower() in JSON_TYPES


async def _whole_body(receive: Receive) -> bytes | None:
    """The body to its end (the front door's Counted stops it past the path's limit); None
    when the client disconnected first."""
    chunks: list[bytes] = []
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return None
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            break
    return b"".join(chunks)


def _replaying(body: bytes, receive: Receive) -> Receive:
    """A receive that gives `body` once, then whatever comes next (a disconnect)."""
    given = False

    async def replay() -> Message:
        nonlocal given
        if given:
            return await receive()
        given = True
        message: dict[str, Any] = {"type": "http.request", "body": body, "more_body": False}
        return message

    return replay
