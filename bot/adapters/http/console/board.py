"""The board (GET /console/): every environment, its services' deploys, locks, freezes,
what runs and what waits; and GET / -> here."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from datetime import datetime

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse, Response

from bot.adapters.http.console import model
from bot.adapters.http.console.routes import PREFIX, Console, Viewer
from bot.core.freeze_windows import ALL, Freeze
from bot.core.policy import Policy
from bot.core.thread import Thread
from bot.runtime import promoting
from bot.runtime.ports import DeployRecord, Lock

BOARD_SCAN = 200  # active threads the board and the approvals page look through for running deploys and approvals
HISTORY_LIMIT = 200  # the newest deploys per environment the pages look through


def router(console: Console) -> APIRouter:
    r = APIRouter(include_in_schema=False)
    r.get("/")(root)
    r.get(PREFIX + "/")(console.route(board))
    return r


async def root() -> RedirectResponse:
    return RedirectResponse(PREFIX + "/", status_code=307)


async def board(console: Console, request: Request) -> Response:
    who = console.viewer(request)
    version = await console.reader.fingerprint("board")  # before reading: a change meanwhile shows up live
    now = console.service.clock()
    policy = console.policy
    names = model.ordered(policy.environments, policy)
    helds, histories, threads, stopped = await asyncio.gather(
        asyncio.gather(*(console.parts.locks.held(e, model.services_in(e, policy)) for e in names)),
        asyncio.gather(*(console.parts.history.recent(e, HISTORY_LIMIT) for e in names)),
        console.reader.active(BOARD_SCAN),
        stopped_now(console),
    )
    shown = [  # what the rows show: each service's current deploy and its newest one
        rec for records in histories
        for rec in {*model.latest_per_service(records), *model.newest_per_service(records).values()}
    ]
    asked = await console.asked_by(shown)
    promoted = await _candidates(console, who, names, now)
    cards = [
        _card(console, who, name, locks, records, asked, stopped, now, promoted)
        for name, locks, records in zip(names, helds, histories, strict=True)
    ]
    _place(threads, {c.name: c for c in cards}, who, console, now, [r for rs in histories for r in rs])
    stoppable = console.freezes is not None
    return console.render(
        request, "board.html", environments=cards, version=version, watch="board",
        everywhere=model.freezing([*policy.freezes, *stopped], ALL, now),
        stop_all=model.stop(ALL, stopped, policy, who.identity, stoppable),
    )


async def everywhere(console: Console) -> list[DeployRecord]:
    """The newest deploys of every environment (HISTORY_LIMIT each)."""
    history, names = console.parts.history, console.policy.environments
    histories = await asyncio.gather(*(history.recent(e, HISTORY_LIMIT) for e in names))
    return [record for records in histories for record in records]


def _promote(policy: Policy, environment: str, row: model.ServiceRow, locks: list[Lock], freezes: list[Freeze],
             now: datetime,
             promoted: dict[tuple[str, str], DeployRecord | None]) -> model.Promotable | None:
    source = policy.promotion.previous(row.name, environment)
    if source is None or not row.in_catalog or (environment, row.name) not in promoted:
        return None
    current = row.current.record if row.current else None  # what the row shows on there now
    return model.promotable(row.name, environment, source, promoted[environment, row.name], current, locks,
                            freezes, policy, now)


async def stopped_now(console: Console) -> list[Freeze]:
    """The stops in force (stop-the-line); none where stopping is not offered."""
    return await console.freezes.current() if console.freezes is not None else []


async def _candidates(console: Console, who: Viewer, names: list[str],
                      now: datetime) -> dict[tuple[str, str], DeployRecord | None]:
    """(environment, service) -> what `promote` would deploy there (None: nothing passed the
    environment before), for every service with an environment before, for a viewer who may
    start threads."""
    policy = console.policy
    wanted = [(e, s) for e in names for s in model.services_in(e, policy)
              if who.may_start and policy.promotion.previous(s, e) is not None]
    found = await asyncio.gather(*(
        promoting.candidates(console.parts.history, policy, s, e, now) for e, s in wanted))
    return {pair: (best[0] if best else None) for pair, best in zip(wanted, found, strict=True)}


def _card(console: Console, who: Viewer, name: str, locks: list[Lock], records: list[DeployRecord],
          asked: dict[str, str], stopped: list[Freeze], now: datetime,
          promoted: dict[tuple[str, str], DeployRecord | None]) -> model.Environment:
    """One environment's card: its lock, its services' rows, its freezes and stops."""
    policy = console.policy
    card = model.environment(name, policy, who.identity)
    whole = next((lock for lock in locks if not lock.service), None)
    card.lock = model.held(whole, policy, who.identity) if whole else None
    card.services = model.service_rows(
        name, model.services_in(name, policy), records, locks, policy, who.identity, asked, who.may_start)
    freezes = [*policy.freezes, *stopped]
    card.services = [  # each one's Promote button, where its promotion order has an environment before
        replace(row, promote=_promote(policy, name, row, locks, freezes, now, promoted))
        for row in card.services
    ]
    card.freeze = model.freezing([*policy.freezes, *stopped], name, now)
    card.next_freeze = model.next_window(policy.freezes, name, now)
    card.stop = model.stop(name, stopped, policy, who.identity, console.freezes is not None)
    return card


def _place(threads: list[Thread], by_name: dict[str, model.Environment], who: Viewer, console: Console,
           now: datetime, records: list[DeployRecord]) -> None:
    """Put each active thread's running deploy, pending approvals (their commits marked faulty
    in `records`, the history) and place in line on its environment's card."""
    for t in threads:
        going = model.running(t)
        if going and going.environment in by_name:
            by_name[going.environment].running.append(going)
        for a in model.marked_faulty(model.approvals(t, who.identity, console.policy, now), records):
            if a.pending and a.request.environment in by_name:
                by_name[a.request.environment].waiting.append(a)
        waits = model.queued(t, now)
        if waits and waits.environment in by_name:
            by_name[waits.environment].in_line.append(waits)
        checking = model.verifying(t, who.identity, console.policy)
        if checking and checking.environment in by_name:
            by_name[checking.environment].verifying.append(checking)
    for c in by_name.values():
        c.in_line.sort(key=lambda q: (q.position, q.since))
