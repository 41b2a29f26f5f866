"""The web console: environments board, approvals inbox, thread timelines, deploy history and
audit, served by the same app under /console/. What every page shares is console/routes.py;
each page (and what its buttons do) is its own router."""

from __future__ import annotations

from collections.abc import Callable

from fastapi import FastAPI
from fastapi.responses import HTMLResponse

from bot.adapters.http.console import approvals, board, deploys, environments, live, sign_in, static, thread, threads
from bot.adapters.http.console.routes import Console, standalone
from bot.adapters.http.shared import Parts, SignIn

__all__ = ["mount"]


def mount(web: FastAPI, parts: Parts, signing_in: SignIn | None = None) -> Callable[..., HTMLResponse]:
    """Add the console's routes to `web`, and `GET /` -> /console/. Returns `standalone`,
    for pages outside the console styled like it (a sign-in link's)."""
    console = Console(parts, signing_in)
    for page in (board, approvals, threads, thread, deploys, environments, sign_in, live):
        web.include_router(page.router(console))
    web.include_router(static.router())
    return standalone
