"""The live stream (GET /console/changes): Server-Sent Events that say when what a page shows
changed, so the page reloads itself."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator

from fastapi import APIRouter, Request
from fastapi.responses import Response

from bot.adapters.http.console.forms import Page, id_like
from bot.adapters.http.console.reader import Reader
from bot.adapters.http.console.routes import HEADERS, PREFIX, Console
from bot.adapters.http.console.streams import Slotted

STREAM_SECONDS = 10.0  # an event stream ends after this and the browser reconnects (no stream outlives a tab)
POLL_SECONDS = 1.0


def router(console: Console) -> APIRouter:
    r = APIRouter(include_in_schema=False)
    r.get(PREFIX + "/changes")(console.route(changes, counted=False))
    return r


def watched(watch: str) -> bool:
    """Whether `watch` is something a page shows: the board, or one thread."""
    return watch == "board" or (watch.startswith("thread:") and id_like(watch.removeprefix("thread:")))


async def changes(console: Console, request: Request) -> Response:
    """`changed` (with the new version) whenever what `watch` shows changed since `since`. Each
    stream ends after STREAM_SECONDS; the browser reconnects."""
    who = console.viewer(request).identity.principal
    watch, since = request.query_params.get("watch", "board"), request.query_params.get("since", "")
    if not watched(watch):
        raise Page(400, "Not valid", "watch must be board or thread:<id>")
    refused = console.streams.take(who)
    if refused is not None:
        raise Page(429, "Too many live streams", refused)
    return Slotted(console.streams, who, stream(console.reader, request, watch, since),
                   media_type="text/event-stream", headers={**HEADERS, "X-Accel-Buffering": "no"})


async def stream(reader: Reader, request: Request, watch: str, since: str) -> AsyncIterator[str]:
    yield "retry: 1000\n\n"
    last, ends = since, time.monotonic() + STREAM_SECONDS
    while time.monotonic() < ends and not await request.is_disconnected():
        try:
            version = await reader.fingerprint(watch)
        except Exception:  # Redis away for a moment: say nothing, try again
            version = last
        if version != last:
            last = version
            yield f"event: changed\ndata: {version}\n\n"
        await asyncio.sleep(POLL_SECONDS)
