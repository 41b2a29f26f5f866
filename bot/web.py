"""HTTP: the thread API and health. Thin: parse, call the service, hand the thread to a worker."""

from __future__ import annotations

import hmac
import logging
from contextlib import asynccontextmanager
from dataclasses import asdict
from typing import Any, AsyncIterator

from fastapi import APIRouter, Depends, FastAPI, Header, Request
from fastapi.responses import JSONResponse, PlainTextResponse
from pydantic import BaseModel, Field
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from bot import transcript
from bot.app import App, build
from bot.service import Invalid, Refused, Unauthorized
from bot.settings import Settings
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


def create_app(settings: Settings, app: App | None = None, worker: bool = True) -> FastAPI:
    """`worker=False` (serve --no-worker): this process only records events and hands
    threads to worker processes."""
    built = app or build(settings)

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        await built.start(worker)
        yield
        await built.close()

    def the_app() -> App:
        return built

    def authorized(authorization: str | None = Header(None)) -> None:
        token = settings.api_token
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
        return JSONResponse({"detail": exc.message}, status_code=exc.status)

    @threads.post("", status_code=201)
    async def launch(body: LaunchBody, a: App = Depends(the_app)) -> dict[str, Any]:
        thread = await a.service.launch(body.message, body.user, channel="api")
        await a.kick(thread.id)
        return {"id": thread.id}

    @threads.get("")
    async def recent(status: str | None = None, limit: int = 50, a: App = Depends(the_app)) -> dict:
        return {"threads": [summary_json(t) for t in await a.service.recent(status, min(limit, 500))]}

    @threads.get("/{thread_id}.md", response_class=PlainTextResponse)
    async def show_markdown(thread_id: str, a: App = Depends(the_app)) -> PlainTextResponse:
        thread = await a.service.get(thread_id)
        return PlainTextResponse(transcript.markdown(thread, settings.secrets()), media_type="text/markdown")

    @threads.get("/{thread_id}")
    async def show(thread_id: str, a: App = Depends(the_app)) -> dict[str, Any]:
        return thread_json(await a.service.get(thread_id))

    @threads.post("/{thread_id}/responses", status_code=202)
    async def respond(thread_id: str, body: RespondBody, a: App = Depends(the_app)) -> dict:
        thread = await a.service.respond(
            thread_id, body.text, body.user, body.approval_id, body.approve, channel="api"
        )
        await a.kick(thread.id)
        return thread_json(thread)

    @threads.post("/{thread_id}/cancel")
    async def cancel(thread_id: str, body: CancelBody | None = None, a: App = Depends(the_app)) -> dict:
        body = body or CancelBody()
        return thread_json(await a.service.cancel(thread_id, body.user, body.reason))

    @threads.post("/{thread_id}/fork", status_code=201)
    async def fork(thread_id: str, body: ForkBody, a: App = Depends(the_app)) -> dict[str, Any]:
        thread = await a.service.fork(thread_id, body.at)
        await a.kick(thread.id)
        return {"id": thread.id, "forked_from": thread_id, "at": body.at}

    @web.get("/deploys", dependencies=[Depends(authorized)])
    async def deploys(environment: str, limit: int = 20, a: App = Depends(the_app)) -> dict[str, Any]:
        if environment not in a.runner.policy.environments:
            raise Invalid(f"unknown environment {environment!r}")
        records = await a.environments.recent(environment, min(max(limit, 1), 200))
        holder = await a.environments.holder(environment)
        return {
            "environment": environment,
            "lock": {**asdict(holder), "since": holder.since.isoformat()} if holder else None,
            "deploys": [{**asdict(r), "at": r.at.isoformat()} for r in records],
        }

    @web.get("/healthz")
    async def healthz(a: App = Depends(the_app)) -> JSONResponse:
        try:
            await a.store.ping()
        except Exception as e:  # any failure to reach Redis makes us unhealthy, not crash
            return JSONResponse({"ok": False, "redis": f"unreachable: {e}"}, status_code=503)
        return JSONResponse({"ok": True, "redis": "ok", "llm": "configured" if a.runner.llm else "none"})

    web.include_router(threads)
    if built.slack and not settings.slack_app_token:
        web.add_api_route("/slack/events", built.slack.endpoint, methods=["POST"])
    if built.email:
        web.add_api_route("/email/inbound", built.email.endpoint, methods=["POST"])
    return web

