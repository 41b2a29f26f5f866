"""/threads: start a thread, list them, read one (JSON or markdown), reply or decide, cancel,
fork. Thin: parse, call the service, hand the thread to a worker."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import JSONResponse, PlainTextResponse
from pydantic import BaseModel, Field

from bot.adapters.http.api import idempotency, json_text
from bot.adapters.http.api.who import MAX_LIMIT, acting, authorized, the_parts
from bot.adapters.http.shared import MAX_TEXT_CHARS, Parts
from bot.core import transcript
from bot.core.views import summary_json, thread_json


# `user`: who is asking, as the API names them. With a personal token or a session it may be
# left out (or must be that person); in open mode it is trusted; with the shared token it
# is only a label. Absent in open mode: "api".
class LaunchBody(BaseModel):
    message: str = Field(min_length=1, max_length=MAX_TEXT_CHARS)
    user: str | None = Field(None, min_length=1)


class RespondBody(BaseModel):
    text: str = Field("", max_length=MAX_TEXT_CHARS)
    user: str | None = Field(None, min_length=1)
    approval_id: str | None = None
    approve: bool | None = None


class ForkBody(BaseModel):
    at: int
    user: str | None = Field(None, min_length=1)


class CancelBody(BaseModel):
    user: str | None = Field(None, min_length=1)
    reason: str = Field("", max_length=MAX_TEXT_CHARS)


router = APIRouter(prefix="/threads", dependencies=[Depends(authorized), Depends(json_text.checked)])


# The busiest route (pipelines and bots start threads here): it reads the parts itself, hands
# the thread to a worker in the round trip that stores it (ThreadStore.create), and
# answers with its own response: FastAPI solves no dependency of its own for it and does not
# validate and re-serialise the answer (CPU per request).
@router.post("", status_code=201, response_class=JSONResponse, responses={201: {"description": "the new thread's id"}})
async def launch(request: Request, body: LaunchBody) -> JSONResponse:
    """With an `Idempotency-Key` header, a retry of the same launch answers 200 with the
    thread the first made (api/idempotency.py)."""
    a: Parts = await the_parts(request)
    key = idempotency.key_of(request.headers.get(idempotency.HEADER))
    who = acting(request, a, body.user, text=body.message)
    if key is not None:
        thread, new = await idempotency.launch(a.service, body.message, who, key, a.queue)
        return JSONResponse({"id": thread.id}, status_code=201 if new else 200)
    thread = await a.service.launch(body.message, who, channel="api", handoff=a.queue)
    return JSONResponse({"id": thread.id}, status_code=201)


@router.get("")
async def recent(
    status: str | None = None, limit: int = Query(50, ge=1, le=MAX_LIMIT),
    cursor: str | None = Query(None, max_length=500), a: Parts = Depends(the_parts),
) -> dict:
    """Newest first, a page at a time: `next_cursor` (absent on the last page) is passed
    back as `?cursor=` for the next. With `status`, read from the status index."""
    found, next_cursor = await a.service.page(status, limit, cursor)
    answer: dict[str, Any] = {"threads": [summary_json(t, a.service.clock()) for t in found]}
    if next_cursor:
        answer["next_cursor"] = next_cursor
    return answer


@router.get("/{thread_id}.md", response_class=PlainTextResponse)
async def show_markdown(thread_id: str, a: Parts = Depends(the_parts)) -> PlainTextResponse:
    thread = await a.service.get(thread_id)
    text = transcript.markdown(thread, a.secrets, a.service.clock())
    return PlainTextResponse(text, media_type="text/markdown")


@router.get("/{thread_id}")
async def show(thread_id: str, a: Parts = Depends(the_parts)) -> dict[str, Any]:
    return thread_json(await a.service.get(thread_id), a.service.clock(), a.service.policy)


@router.post("/{thread_id}/responses", status_code=202)
async def respond(request: Request, thread_id: str, body: RespondBody, a: Parts = Depends(the_parts)) -> dict:
    who = acting(request, a, body.user, text=body.text, named=True)
    thread = await a.service.respond(thread_id, body.text, who, body.approval_id, body.approve, channel="api")
    await a.kick(thread.id)
    return thread_json(thread, a.service.clock(), a.service.policy)


@router.post("/{thread_id}/cancel")
async def cancel(
    request: Request, thread_id: str, body: CancelBody | None = None, a: Parts = Depends(the_parts)
) -> dict:
    body = body or CancelBody()
    who = acting(request, a, body.user)
    thread = await a.service.cancel(thread_id, who, body.reason)
    await a.kick(thread.id)  # its run lets go of what it held: a place in line, a timer
    return thread_json(thread, a.service.clock(), a.service.policy)


@router.post("/{thread_id}/fork", status_code=201)
async def fork(request: Request, thread_id: str, body: ForkBody, a: Parts = Depends(the_parts)) -> dict[str, Any]:
    thread = await a.service.fork(thread_id, body.at, acting(request, a, body.user))
    await a.kick(thread.id)
    return {"id": thread.id, "forked_from": thread_id, "at": body.at}
