"""The matrix (GET /console/matrix): services as rows, environments as columns; in each cell
what is deployed there now, since when, what holds it, and a Deploy link to the form."""

from __future__ import annotations

import asyncio
from datetime import datetime

from fastapi import APIRouter, Request
from fastapi.responses import Response

from bot.adapters.http.console import grid, model
from bot.adapters.http.console.board import BOARD_SCAN, HISTORY_LIMIT, stopped_now
from bot.adapters.http.console.routes import PREFIX, Console
from bot.core.thread import Thread


def router(console: Console) -> APIRouter:
    r = APIRouter(include_in_schema=False)
    r.get(PREFIX + "/matrix")(console.route(matrix_page))
    return r


async def matrix_page(console: Console, request: Request) -> Response:
    who = console.viewer(request)
    version = await console.reader.fingerprint("board")
    now, policy = console.service.clock(), console.policy
    names = model.ordered(policy.environments, policy)
    services = policy.catalog.names
    helds, histories, threads, stopped = await asyncio.gather(
        asyncio.gather(*(console.parts.locks.held(e, services) for e in names)),
        asyncio.gather(*(console.parts.history.recent(e, HISTORY_LIMIT) for e in names)),
        console.reader.active(BOARD_SCAN),
        stopped_now(console),
    )
    holding = [*policy.freezes, *stopped]
    rows = grid.cells(
        policy, names, dict(zip(names, histories, strict=True)), dict(zip(names, helds, strict=True)),
        [e for e in names if model.freezing(holding, e, now) is not None], busy(threads, now),
    )
    return console.render(
        request, "matrix.html", rows=rows, environments=names, deployed=grid.anything_deployed(rows),
        may_deploy=who.may_start, version=version, watch="board",
    )


def busy(threads: list[Thread], now: datetime) -> dict[tuple[str, str], grid.Busy]:
    """What the active threads do, by (service, environment): deploy now, or wait for approval."""
    found: dict[tuple[str, str], grid.Busy] = {}
    for t in threads:
        going = model.running(t)
        if going:
            key = (going.service, going.environment)
            found[key] = grid.Busy(running=t.id, waiting=found.get(key, grid.Busy()).waiting)
        pending = t.pending_approval(now)
        if pending is not None:
            key = (pending.service, pending.environment)
            found[key] = grid.Busy(running=found.get(key, grid.Busy()).running, waiting=t.id)
    return found
