"""A service's page (GET /console/services/NAME): what runs in each environment, what holds it
there (a lock, a freeze, a deploy running or waiting), and its history across environments,
newest first, each deploy linked to its audit trail and, where the service says where its code
lives, to the code host's tag, commit and compare pages."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from fastapi import APIRouter, Request
from fastapi.responses import Response

from bot.adapters.http.console import grid, model
from bot.adapters.http.console.board import BOARD_SCAN, HISTORY_LIMIT, stopped_now
from bot.adapters.http.console.forms import Page
from bot.adapters.http.console.matrix import busy
from bot.adapters.http.console.routes import PREFIX, Console
from bot.runtime.ports import DeployRecord, Lock

HISTORY_SHOWN = 30  # deploys of the service across its environments, newest first


@dataclass(frozen=True)
class Place:
    """The service in one environment: its matrix cell, and what holds it there."""

    cell: grid.Cell
    locks: tuple[Lock, ...]  # the environment's own lock, then the service's there
    freeze: model.Freezing | None


def router(console: Console) -> APIRouter:
    r = APIRouter(include_in_schema=False)
    r.get(PREFIX + "/services/{name}")(console.route(service_page))
    return r


async def service_page(console: Console, request: Request, name: str) -> Response:
    who = console.viewer(request)
    policy, now = console.policy, console.service.clock()
    found = policy.catalog.find(name) if len(name) <= 100 else None
    if found is None:
        raise Page(404, "Not found", f"there is no service {name[:100]!r}")
    service = policy.catalog.services[found]
    version = await console.reader.fingerprint("board")
    names = model.ordered(policy.environments, policy)
    helds, histories, threads, stopped = await asyncio.gather(
        asyncio.gather(*(console.parts.locks.held(e, [service.name]) for e in names)),
        asyncio.gather(*(console.parts.history.recent(e, HISTORY_LIMIT, service=service.name) for e in names)),
        console.reader.active(BOARD_SCAN),
        stopped_now(console),
    )
    holding = [*policy.freezes, *stopped]
    frozen = {e: model.freezing(holding, e, now) for e in names}
    [row] = [r for r in grid.cells(
        policy, names, dict(zip(names, histories, strict=True)), dict(zip(names, helds, strict=True)),
        [e for e, f in frozen.items() if f is not None], busy(threads, now),
    ) if r.service == service.name]
    places = [Place(cell, tuple(held), frozen[cell.environment])
              for cell, held in zip(row.cells, helds, strict=True)]
    return console.render(
        request, "service.html", service=service, places=places, history=_across(histories),
        may_deploy=who.may_start, version=version, watch="board",
    )


def _across(histories: list[list[DeployRecord]]) -> list[DeployRecord]:
    """The service's deploys in every environment, newest first."""
    return sorted((r for h in histories for r in h), key=lambda r: r.at, reverse=True)[:HISTORY_SHOWN]
