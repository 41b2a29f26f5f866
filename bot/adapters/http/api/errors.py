"""What the API answers when something goes wrong: JSON with a `detail`, never a 500 page."""

from __future__ import annotations

import logging

from fastapi import FastAPI, Request
from fastapi.exception_handlers import request_validation_exception_handler
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import OutOfMemoryError
from redis.exceptions import TimeoutError as RedisTimeoutError

from bot.adapters.http.shared import MAX_TEXT_CHARS, http_status
from bot.runtime.service import Refused

log = logging.getLogger(__name__)

# What a person may write in one go through the API: a request, a reply, a reason to cancel.
# Longer is refused with 413 and a message naming the field (see `too_long`), not pydantic's
# 422; the bytes of the body as a whole are capped before it is read
# (bot.adapters.http.front_door, wrapped around this app by the root).
TEXT_FIELDS = ("message", "text", "reason")
FULL = "storage is full: nothing was stored, retry shortly (deploybot's Redis reached its maxmemory)"


def install(web: FastAPI) -> None:
    web.add_exception_handler(RedisConnectionError, unavailable)
    web.add_exception_handler(RedisTimeoutError, unavailable)
    web.add_exception_handler(OutOfMemoryError, full)
    web.add_exception_handler(Refused, refused)  # type: ignore[arg-type]
    web.add_exception_handler(RequestValidationError, too_long)  # type: ignore[arg-type]


async def unavailable(_: Request, exc: Exception) -> JSONResponse:
    # Not acknowledged, so the sender retries. If it failed after the event was stored
    # (while handing the thread over), a worker's sweep hands the thread over later.
    log.warning("redis unreachable: %s", exc)
    return JSONResponse({"detail": "storage unavailable, retry shortly"}, status_code=503,
                        headers={"Retry-After": "1"})


async def full(_: Request, exc: Exception) -> JSONResponse:
    """Redis is out of memory (maxmemory reached, noeviction): nothing was stored, as when it is
    unreachable, and the sender is told to retry; the operator must free or add memory."""
    log.error("redis is full, writes are refused: %s", exc)
    return JSONResponse({"detail": FULL}, status_code=503, headers={"Retry-After": "5"})


async def refused(_: Request, exc: Refused) -> JSONResponse:
    return JSONResponse({"detail": exc.message}, status_code=http_status(exc))


async def too_long(request: Request, exc: RequestValidationError) -> Response:
    """A text field over MAX_TEXT_CHARS is a 413 that says so; anything else invalid
    stays FastAPI's 422."""
    for error in exc.errors():
        loc = error.get("loc", ())
        if error.get("type") == "string_too_long" and loc[:1] == ("body",) and loc[-1] in TEXT_FIELDS:
            return JSONResponse({"detail": f"{loc[-1]} is longer than {MAX_TEXT_CHARS} characters"}, status_code=413)
    return await request_validation_exception_handler(request, exc)
