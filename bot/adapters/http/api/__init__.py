"""HTTP: the thread API (api/threads.py), deploys (api/deploys.py), signing in (api/auth_routes.py),
health (api/health.py), the channels' endpoints and the web console, as one FastAPI app. Thin:
parse, call the service, hand the thread to a worker. Who a request acts as: api/who.py."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager

from fastapi import FastAPI

from bot.adapters.http.api import auth_routes, deploys, errors, health, metrics, prometheus, threads
from bot.adapters.http.console import mount as mount_console
from bot.adapters.http.shared import Parts, SignIn

__all__ = ["create_app"]


def create_app(parts: Parts, worker: bool = True, sign_in: SignIn | None = None) -> FastAPI:
    """`worker=False` (serve --no-worker): this process only records events and hands
    threads to worker processes. `sign_in` None: no /auth routes."""
    web = FastAPI(title="deploybot", lifespan=_lifespan(parts, worker))
    web.state.parts, web.state.sign_in = parts, sign_in  # what the routes' dependencies give them
    errors.install(web)
    web.include_router(threads.router)  # first: the busiest routes are matched first
    web.include_router(deploys.router)
    web.include_router(health.router)
    web.include_router(metrics.router)  # GET /metrics/delivery
    web.include_router(prometheus.router)  # GET /metrics
    _channels(web, parts)
    mount_console(web, parts, sign_in)  # the web console: /console/ (and GET / -> there)
    if sign_in is not None:
        web.include_router(auth_routes.router)
    return web


def _lifespan(parts: Parts, worker: bool) -> Callable[[FastAPI], AbstractAsyncContextManager[None]]:
    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        await parts.start(worker)
        yield
        await parts.close()

    return lifespan


def _channels(web: FastAPI, parts: Parts) -> None:
    """The channels' own endpoints (each authenticates its requests itself), where configured."""
    for route in parts.routes:
        web.add_api_route(route.path, route.endpoint, methods=["POST"])
