"""The console's script and style sheet, and an empty favicon."""

from __future__ import annotations

import functools
from importlib import resources

from fastapi import APIRouter
from fastapi.responses import Response

from bot.adapters.http.console.routes import PREFIX

STATIC = {"console.js": "text/javascript", "console.css": "text/css", "metrics.css": "text/css"}


def router() -> APIRouter:
    r = APIRouter(include_in_schema=False)
    r.get("/favicon.ico")(favicon)
    r.get(PREFIX + "/static/{name}")(static_file)
    return r


@functools.cache
def _files() -> dict[str, bytes]:
    here = resources.files("bot.adapters.http.console")
    return {name: here.joinpath("static", name).read_bytes() for name in STATIC}


async def favicon() -> Response:
    """Browsers ask for it on every page: nothing, rather than a 404 each time."""
    return Response(status_code=204, headers={"Cache-Control": "max-age=86400"})


async def static_file(name: str) -> Response:
    if name not in STATIC:
        return Response("not found", status_code=404, media_type="text/plain")
    return Response(_files()[name], media_type=STATIC[name],
                    headers={"Cache-Control": "max-age=300", "X-Content-Type-Options": "nosniff"})
