"""The approvals inbox (GET /console/approvals) and deciding: Approve and Reject."""

from __future__ import annotations

import asyncio

from fastapi import APIRouter, Request
from fastapi.responses import Response

from bot.adapters.http.console import model
from bot.adapters.http.console.board import BOARD_SCAN, everywhere
from bot.adapters.http.console.forms import back, text
from bot.adapters.http.console.routes import PREFIX, Console
from bot.adapters.http.shared import MAX_TEXT_CHARS
from bot.core import standing

DECIDED_SCAN = 50  # recent threads the approvals page looks through for decided approvals
DECIDED_SHOWN = 50


def router(console: Console) -> APIRouter:
    r = APIRouter(include_in_schema=False)
    r.get(PREFIX + "/approvals")(console.route(approvals_page))
    r.post(PREFIX + "/approvals/{thread_id}/{approval_id}/approve")(console.route(approve))
    r.post(PREFIX + "/approvals/{thread_id}/{approval_id}/reject")(console.route(reject))
    return r


async def approvals_page(console: Console, request: Request) -> Response:
    who = console.viewer(request)
    version = await console.reader.fingerprint("board")
    now = console.service.clock()
    active, recent = await asyncio.gather(console.reader.active(BOARD_SCAN), console.reader.recent(DECIDED_SCAN))
    threads = list({t.id: t for t in (*active, *recent)}.values())
    found = [a for t in threads for a in model.approvals(t, who.identity, console.policy, now)]
    pending = sorted((a for a in found if a.pending), key=lambda a: a.request.expires_at)
    if pending:  # each one's commit, marked faulty anywhere since it was asked
        pending = model.marked_faulty(pending, await everywhere(console))
    decided = sorted((a for a in found if a.closed_at is not None), key=lambda a: a.closed_at or now,
                     reverse=True)[:DECIDED_SHOWN]
    return console.render(request, "approvals.html", pending=pending, decided=decided, version=version,
                          watch="board")


async def approve(console: Console, request: Request, thread_id: str, approval_id: str) -> Response:
    return await _decide(console, request, thread_id, approval_id, True)


async def reject(console: Console, request: Request, thread_id: str, approval_id: str) -> Response:
    return await _decide(console, request, thread_id, approval_id, False)


async def _decide(console: Console, request: Request, thread_id: str, approval_id: str, approve: bool) -> Response:
    who = console.viewer(request)
    fields = await console.form(request, who)
    feedback = "" if approve else text(fields, "feedback", MAX_TEXT_CHARS)
    thread = await console.service.respond(thread_id, feedback, who.identity, approval_id, approve,
                                           channel="console")
    await console.parts.kick(thread.id)
    notice = "rejected" if feedback.strip() else "rejected-no-feedback"
    if not console.parts.llm_configured:
        notice = "rejected-no-model"
    if approve:
        decided = standing.find(thread, approval_id)
        notice = "approved" if decided is not None and decided.decision is not None else "approved-partly"
    return back(fields, f"{PREFIX}/threads/{thread_id}", notice)
