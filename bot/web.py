"""HTTP: the thread API and health. Thin: parse, call the service, hand the thread to a worker."""

from __future__ import annotations

import hmac
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import asdict
from typing import Any, Protocol

from fastapi import APIRouter, Depends, FastAPI, Header, Request
from fastapi.responses import JSONResponse, PlainTextResponse
from pydantic import BaseModel, Field
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from bot import transcript
from bot.policy import Policy
from bot.ports import Health, History, Locks
from bot.service import Forbidden, Invalid, NotFound, Refused, ThreadService, Unauthorized, WrongState
from bot.views import summary_json, thread_json

log = logging.getLogger(__name__)


class LaunchBody(BaseModel):
    message: str = Field(min_length=1)
    user: str = Field("api", min_length=1)


class RespondBody(BaseModel):
    text: str = ""
    user: str = Field(min_length=1)
    approval_id: str | None = None
    approve: bool | None = None


class ForkBody(BaseModel):
    at: int


class CancelBody(BaseModel):
    user: str = "api"
    reason: str = ""


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

    @threads.post("", status_code=201)
    async def launch(body: LaunchBody, a: Parts = Depends(the_app)) -> dict[str, Any]:
        thread = await a.service.launch(body.message, body.user, channel="api")
        await a.kick(thread.id)
        return {"id": thread.id}

    @threads.get("")
    async def recent(status: str | None = None, limit: int = 50, a: Parts = Depends(the_app)) -> dict:
        return {"threads": [summary_json(t) for t in await a.service.recent(status, min(limit, 500))]}

    @threads.get("/{thread_id}.md", response_class=PlainTextResponse)
    async def show_markdown(thread_id: str, a: Parts = Depends(the_app)) -> PlainTextResponse:
        thread = await a.service.get(thread_id)
        return PlainTextResponse(transcript.markdown(thread, parts.secrets), media_type="text/markdown")

    @threads.get("/{thread_id}")
    async def show(thread_id: str, a: Parts = Depends(the_app)) -> dict[str, Any]:
        return thread_json(await a.service.get(thread_id))

    @threads.post("/{thread_id}/responses", status_code=202)
    async def respond(thread_id: str, body: RespondBody, a: Parts = Depends(the_app)) -> dict:
        thread = await a.service.respond(
            thread_id, body.text, body.user, body.approval_id, body.approve, channel="api"
        )
        await a.kick(thread.id)
        return thread_json(thread)

    @threads.post("/{thread_id}/cancel")
    async def cancel(thread_id: str, body: CancelBody | None = None, a: Parts = Depends(the_app)) -> dict:
        body = body or CancelBody()
        return thread_json(await a.service.cancel(thread_id, body.user, body.reason))

    @threads.post("/{thread_id}/fork", status_code=201)
    async def fork(thread_id: str, body: ForkBody, a: Parts = Depends(the_app)) -> dict[str, Any]:
        thread = await a.service.fork(thread_id, body.at)
        await a.kick(thread.id)
        return {"id": thread.id, "forked_from": thread_id, "at": body.at}

    @web.get("/deploys", dependencies=[Depends(authorized)])
    async def deploys(environment: str, limit: int = 20, a: Parts = Depends(the_app)) -> dict[str, Any]:
        if environment not in a.policy.environments:
            raise Invalid(f"unknown environment {environment!r}")
        records = await a.history.recent(environment, min(max(limit, 1), 200))
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

