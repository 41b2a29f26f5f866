"""HTTP: the thread API and health. Thin: parse, call the service, hand the thread to a worker."""

from __future__ import annotations

import hmac
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import asdict
from typing import Any, Protocol

from fastapi import APIRouter, Depends, FastAPI, Header, Query, Request
from fastapi.exception_handlers import request_validation_exception_handler
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, PlainTextResponse, Response
from pydantic import BaseModel, Field
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from bot import transcript
from bot.policy import Policy
from bot.ports import Health, History, Locks
from bot.service import Forbidden, Invalid, NotFound, Refused, ThreadService, Unauthorized, WrongState
from bot.views import summary_json, thread_json

log = logging.getLogger(__name__)

# What a person may write in one go through the API: a request, a reply, a reason to cancel.
# Longer is refused with 413 and a message naming the field (see `too_long` below), not
# pydantic's 422; the bytes of the body as a whole are capped before it is read
# (bot.http_limits, wrapped around this app by the root).
MAX_TEXT_CHARS = 20_000
TEXT_FIELDS = ("message", "text", "reason")
MAX_LIMIT = 200  # ?limit= on /threads and /deploys


class LaunchBody(BaseModel):
    message: str = Field(min_length=1, max_length=MAX_TEXT_CHARS)
    user: str = Field("api", min_length=1)


class RespondBody(BaseModel):
    text: str = Field("", max_length=MAX_TEXT_CHARS)
    user: str = Field(min_length=1)
    approval_id: str | None = None
    approve: bool | None = None


class ForkBody(BaseModel):
    at: int


class CancelBody(BaseModel):
    user: str = "api"
    reason: str = Field("", max_length=MAX_TEXT_CHARS)


# What each refusal means in HTTP; the service itself knows nothing of HTTP.
STATUS = {Unauthorized: 401, Forbidden: 403, NotFound: 404, WrongState: 409, Invalid: 422}


def http_status(refusal: Refused) -> int:
    return next((code for kind, code in STATUS.items() if isinstance(refusal, kind)), 400)


Endpoint = Callable[[Request], Awaitable[Any]]


class Parts(Protocol):
    """What the HTTP side needs; the composition root (bot.app.App) provides it."""

    @property
    def service(self) -> ThreadService: ...

    @property
    def policy(self) -> Policy: ...

    @property
    def locks(self) -> Locks: ...

    @property
    def history(self) -> History: ...

    @property
    def health(self) -> Health: ...

    @property
    def llm_configured(self) -> bool: ...

    @property
    def api_token(self) -> str | None:
        """None: the API is open (local mode, bound to 127.0.0.1)."""
        ...

    @property
    def secrets(self) -> tuple[str, ...]:
        """Kept out of transcripts."""
        ...

    @property
    def slack_endpoint(self) -> Endpoint | None:
        """None with Slack off, or in Socket Mode."""
        ...

    @property
    def email_endpoint(self) -> Endpoint | None: ...

    async def kick(self, thread_id: str) -> None: ...

    async def start(self, worker: bool = True, receive: bool = True) -> None: ...

    async def close(self) -> None: ...


def create_app(parts: Parts, worker: bool = True) -> FastAPI:
    """`worker=False` (serve --no-worker): this process only records events and hands
    threads to worker processes."""

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        await parts.start(worker)
        yield
        await parts.close()

    def the_app() -> Parts:
        return parts

    def authorized(authorization: str | None = Header(None)) -> None:
        # The check that counts runs earlier, in bot.http_limits, before a body is read
        # (FastAPI reads and parses the body before it solves dependencies); this one stays
        # so a route is never open because the app was served without that wrapper.
        token = parts.api_token
        if token and not hmac.compare_digest(
            (authorization or "").encode(), f"Bearer {token}".encode()
        ):
            raise Unauthorized("missing or wrong bearer token (Authorization: Bearer <API_TOKEN>)")

    web = FastAPI(title="deploybot", lifespan=lifespan)
    threads = APIRouter(prefix="/threads", dependencies=[Depends(authorized)])

    @web.exception_handler(RedisConnectionError)
    @web.exception_handler(RedisTimeoutError)
    async def unavailable(_: Request, exc: Exception) -> JSONResponse:
        # Not acknowledged, so the sender retries. If it failed after the event was stored
        # (while handing the thread over), a worker's sweep hands the thread over later.
        log.warning("redis unreachable: %s", exc)
        return JSONResponse({"detail": "storage unavailable, retry shortly"}, status_code=503,
                            headers={"Retry-After": "1"})

    @web.exception_handler(Refused)
    async def refused(_: Request, exc: Refused) -> JSONResponse:
        return JSONResponse({"detail": exc.message}, status_code=http_status(exc))

    @web.exception_handler(RequestValidationError)
    async def too_long(request: Request, exc: RequestValidationError) -> Response:
        """A text field over MAX_TEXT_CHARS is a 413 that says so; anything else invalid
        stays FastAPI's 422."""
        for error in exc.errors():
            loc = error.get("loc", ())
            if error.get("type") == "string_too_long" and loc[:1] == ("body",) and loc[-1] in TEXT_FIELDS:
                return JSONResponse(
                    {"detail": f"{loc[-1]} is longer than {MAX_TEXT_CHARS} characters"}, status_code=413
                )
        return await request_validation_exception_handler(request, exc)

    @threads.post("", status_code=201)
    async def launch(body: LaunchBody, a: Parts = Depends(the_app)) -> dict[str, Any]:
        thread = await a.service.launch(body.message, body.user, channel="api")
        await a.kick(thread.id)
        return {"id": thread.id}

    @threads.get("")
    async def recent(
        status: str | None = None, limit: int = Query(50, ge=1, le=MAX_LIMIT), a: Parts = Depends(the_app)
    ) -> dict:
        return {"threads": [summary_json(t, a.service.clock()) for t in await a.service.recent(status, limit)]}

    @threads.get("/{thread_id}.md", response_class=PlainTextResponse)
    async def show_markdown(thread_id: str, a: Parts = Depends(the_app)) -> PlainTextResponse:
        thread = await a.service.get(thread_id)
        text = transcript.markdown(thread, parts.secrets, a.service.clock())
        return PlainTextResponse(text, media_type="text/markdown")

    @threads.get("/{thread_id}")
    async def show(thread_id: str, a: Parts = Depends(the_app)) -> dict[str, Any]:
        return thread_json(await a.service.get(thread_id), a.service.clock())

    @threads.post("/{thread_id}/responses", status_code=202)
    async def respond(thread_id: str, body: RespondBody, a: Parts = Depends(the_app)) -> dict:
        thread = await a.service.respond(
            thread_id, body.text, body.user, body.approval_id, body.approve, channel="api"
        )
        await a.kick(thread.id)
        return thread_json(thread, a.service.clock())

    @threads.post("/{thread_id}/cancel")
    async def cancel(thread_id: str, body: CancelBody | None = None, a: Parts = Depends(the_app)) -> dict:
        body = body or CancelBody()
        return thread_json(await a.service.cancel(thread_id, body.user, body.reason), a.service.clock())

    @threads.post("/{thread_id}/fork", status_code=201)
    async def fork(thread_id: str, body: ForkBody, a: Parts = Depends(the_app)) -> dict[str, Any]:
        thread = await a.service.fork(thread_id, body.at)
        await a.kick(thread.id)
        return {"id": thread.id, "forked_from": thread_id, "at": body.at}

    @web.get("/deploys", dependencies=[Depends(authorized)])
    async def deploys(
        environment: str, limit: int = Query(20, ge=1, le=MAX_LIMIT), a: Parts = Depends(the_app)
    ) -> dict[str, Any]:
        if environment not in a.policy.environments:
            raise Invalid(f"unknown environment {environment!r}")
        records = await a.history.recent(environment, limit)
        holder = await a.locks.holder(environment)
        return {
            "environment": environment,
            "lock": {**asdict(holder), "since": holder.since.isoformat()} if holder else None,
            "deploys": [{**asdict(r), "at": r.at.isoformat()} for r in records],
        }

    @web.get("/healthz")
    async def healthz(a: Parts = Depends(the_app)) -> JSONResponse:
        try:
            await a.health.ping()
        except Exception as e:  # any failure to reach Redis makes us unhealthy, not crash
            return JSONResponse({"ok": False, "redis": f"unreachable: {e}"}, status_code=503)
        return JSONResponse({"ok": True, "redis": "ok", "llm": "configured" if a.llm_configured else "none"})

    web.include_router(threads)
    if parts.slack_endpoint:
        web.add_api_route("/slack/events", parts.slack_endpoint, methods=["POST"])
    if parts.email_endpoint:
        web.add_api_route("/email/inbound", parts.email_endpoint, methods=["POST"])
    return web

