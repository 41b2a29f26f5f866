"""The web console: environments board, approvals inbox, thread timelines, deploy history and
audit, served by the same app under /console/. What every page shares is console/routes.py;
each page (and what its buttons do) is its own router."""

from __future__ import annotations

from fastapi import FastAPI

from bot.adapters.http.console import (
    approvals,
    board,
    deploy_form,
    deploys,
    environments,
    live,
    matrix,
    services,
    sign_in,
    static,
    thread,
    threads,
)
from bot.adapters.http.console import metrics as metrics_page
from bot.adapters.http.console.routes import Console
from bot.adapters.http.shared import Parts, SignIn

__all__ = ["mount"]


def mount(web: FastAPI, parts: Parts, signing_in: SignIn | None = None) -> None:
    """Add the console's routes to `web`, and `GET /` -> /console/. (A page outside the console
    styled like it, a sign-in link's, is routes.standalone.)"""
    console = Console(parts, signing_in)
    for page in (board, approvals, threads, thread, deploys, environments, sign_in, live):
        web.include_router(page.router(console))
    web.include_router(metrics_page.router(console))  # /console/metrics
    for page in (matrix, deploy_form, services):  # deploying from the console, a page per service
        web.include_router(page.router(console))
    web.include_router(static.router())
