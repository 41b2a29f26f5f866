"""The list of threads (GET /console/threads): by status, searched, a page at a time."""

from __future__ import annotations

from datetime import datetime
from urllib.parse import urlencode

from fastapi import APIRouter, Request
from fastapi.responses import Response

from bot.adapters.http.console import model
from bot.adapters.http.console.forms import Page, indexed_as, whole_number
from bot.adapters.http.console.routes import PREFIX, Console
from bot.core.thread import STATUSES, Thread

PAGE_SIZE = 25
SEARCH_SCAN = 1_000  # threads a filtered or searched list looks through, newest first


def router(console: Console) -> APIRouter:
    r = APIRouter(include_in_schema=False)
    r.get(PREFIX + "/threads")(console.route(threads_page))
    return r


def link(status: str, search: str, number: int, cursor: str | None = None) -> str:
    """The list's page `number` (after `cursor`, when paging the index), as filtered."""
    given = (("status", status), ("q", search), ("page", str(number)), ("cursor", cursor))
    return PREFIX + "/threads?" + urlencode({k: v for k, v in given if v})


async def threads_page(console: Console, request: Request) -> Response:
    console.viewer(request)
    q = request.query_params
    status = q.get("status", "")
    if status and status not in STATUSES:
        raise Page(400, "Not valid", f"status must be one of {', '.join(STATUSES)}")
    search = q.get("q", "")[:200]
    number = whole_number(q.get("page", "1"), "page", 1, 10_000)
    cursor = q.get("cursor", "")[:500] or None
    version = await console.reader.fingerprint("board")
    now = console.service.clock()
    searching = bool(search.strip())
    if searching:
        shown, more = await _searched(console, status, search, number, now)
        after, previous = None, link(status, search, number - 1) if number > 1 else None
    else:  # a page of the index (or of every thread, by recency), as GET /threads
        shown, after = await console.service.page(status or None, PAGE_SIZE, cursor)
        more, previous = after is not None, link(status, search, 1) if cursor else None
    return console.render(
        request, "threads.html", rows=[model.row(t, now) for t in shown], status=status, q=search,
        statuses=STATUSES, page=number, previous=previous, first_page=not searching and bool(cursor),
        next_page=(link(status, search, number + 1, after) if more else None), version=version, watch="board",
        scan=SEARCH_SCAN,
    )


async def _searched(console: Console, status: str, search: str, number: int,
                    now: datetime) -> tuple[list[Thread], bool]:
    """Page `number` of the threads matching `search` (and `status`), and whether more follow:
    by status from the index, by recency otherwise, SEARCH_SCAN threads at most."""
    scanned, _ = await console.reader.listed(indexed_as(status) if status else None, SEARCH_SCAN)
    hits = [t for t in scanned if (not status or t.status(now) == status) and model.matches(t, search)]
    start = (number - 1) * PAGE_SIZE
    return hits[start:start + PAGE_SIZE], len(hits) > start + PAGE_SIZE
