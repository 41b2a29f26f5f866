"""The deploy history (GET /console/deploys), its exports (deploys.csv, deploys.jsonl, with the
same filters), and one deploy's page with its audit trail."""

from __future__ import annotations

import asyncio
import csv
import io
import json
from typing import Any
from urllib.parse import urlencode

from fastapi import APIRouter, Request
from fastapi.responses import Response

from bot.adapters.http.console import model
from bot.adapters.http.console.board import HISTORY_LIMIT
from bot.adapters.http.console.forms import Page, csv_cell, id_like, whole_number
from bot.adapters.http.console.routes import HEADERS, PREFIX, Console
from bot.runtime.ports import DeployRecord

OLDER_SCAN = 10_000  # a deploy's own page looks further back, this many at most
OLDER_PAGE = 1_000


def router(console: Console) -> APIRouter:
    r = APIRouter(include_in_schema=False)
    r.get(PREFIX + "/deploys")(console.route(deploys_page))
    r.get(PREFIX + "/deploys.csv")(console.route(deploys_csv, counted=False))
    r.get(PREFIX + "/deploys.jsonl")(console.route(deploys_jsonl, counted=False))
    r.get(PREFIX + "/deploys/{environment}/{deploy_id}")(console.route(deploy_page))
    return r


async def deploys_page(console: Console, request: Request) -> Response:
    who = console.viewer(request)
    version = await console.reader.fingerprint("board")
    filters, records, current = await _deploys(console, request)
    asked = await console.asked_by(records)
    rows = [model.deployed(rec, asked, who.may_start and _may_roll_back(console, rec, current)) for rec in records]
    query = urlencode({k: v for k, v in filters.items() if v})
    policy = console.policy
    services = list(policy.catalog.names)
    if filters["service"] and filters["service"] not in services:
        services.append(filters["service"])  # deployed once, no longer in the catalog
    return console.render(
        request, "deploys.html", rows=rows, filters=filters, query=query, version=version, watch="board",
        environments=model.ordered(policy.environments, policy), services=services,
    )


async def deploys_csv(console: Console, request: Request) -> Response:
    console.viewer(request)
    rows = await _export(console, request)
    out = io.StringIO()
    columns = list(dict.fromkeys(k for row in rows for k in row)) or ["deploy_id"]
    writer = csv.DictWriter(out, columns, extrasaction="ignore")
    writer.writeheader()
    for row in rows:
        writer.writerow({k: csv_cell(v) for k, v in row.items()})
    return Response(out.getvalue(), media_type="text/csv; charset=utf-8", headers={
        **HEADERS, "Content-Disposition": 'attachment; filename="deploys.csv"'})


async def deploys_jsonl(console: Console, request: Request) -> Response:
    console.viewer(request)
    rows = await _export(console, request)
    body = "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)
    return Response(body, media_type="application/jsonl; charset=utf-8", headers={
        **HEADERS, "Content-Disposition": 'attachment; filename="deploys.jsonl"'})


async def deploy_page(console: Console, request: Request, environment: str, deploy_id: str) -> Response:
    who = console.viewer(request)
    console.known_environment(environment)
    history = await console.parts.history.recent(environment, HISTORY_LIMIT)
    record = next((rec for rec in history if rec.deploy_id == deploy_id), None) or await _older(
        console, environment, deploy_id)
    if record is None:
        raise Page(404, "Not found", f"no deploy {deploy_id!r} in the history of {environment}")
    thread = await console.reader.maybe(record.thread_id) if id_like(record.thread_id) else None
    trail = model.audit(record, thread, console.parts.secrets)
    may = who.may_start and _may_roll_back(console, record, model.rollbackable(history))
    return console.render(request, "deploy.html", record=model.Deployed(record, trail.asked_by, may), trail=trail,
                          thread=thread, secrets=console.parts.secrets)


def _may_roll_back(console: Console, record: DeployRecord, current: set[str]) -> bool:
    """Whether `record` gets a Roll back button (the viewer aside): it is the current
    deploy of a service the catalog still deploys there, and the rollback would not be
    refused outright."""
    policy = console.policy
    return (record.deploy_id in current and record.environment in policy.environments
            and policy.catalog.invalid(record.service, record.environment) is None)


def filters_of(console: Console, request: Request) -> tuple[dict[str, str], int]:
    """The history's filters as asked (`?environment=&service=&tag=&outcome=&person=&limit=`),
    checked and cut to length, and how many records to show."""
    q, policy = request.query_params, console.policy
    environment = q.get("environment", "")
    if environment and environment not in policy.environments:
        raise Page(400, "Not valid", f"environment must be one of {', '.join(sorted(policy.environments))}")
    outcome = q.get("outcome", "")
    if outcome not in ("", "ok", "failed"):
        raise Page(400, "Not valid", "outcome must be ok or failed")
    limit = whole_number(q.get("limit", "100"), "limit", 1, HISTORY_LIMIT * max(1, len(policy.environments)))
    filters = {"environment": environment, "service": q.get("service", "")[:100], "tag": q.get("tag", "")[:200],
               "outcome": outcome, "person": q.get("person", "")[:200], "limit": str(limit) if q.get("limit") else ""}
    return filters, limit


async def _deploys(console: Console, request: Request) -> tuple[dict[str, str], list[DeployRecord], set[str]]:
    """The filters, the records they keep (newest first), and the ids of the deploys a
    rollback would roll back now (model.rollbackable: of the whole history, unfiltered)."""
    filters, limit = filters_of(console, request)
    names = [filters["environment"]] if filters["environment"] else sorted(console.policy.environments)
    recent = await asyncio.gather(*(console.parts.history.recent(e, HISTORY_LIMIT) for e in names))
    records = [rec for recs in recent for rec in recs]
    current = model.rollbackable(records)
    service, tag, outcome = filters["service"], filters["tag"], filters["outcome"]
    records = [
        rec for rec in model.newest_first(records)
        if (not service or rec.service == service) and (not tag or rec.tag == tag)
        and (not outcome or rec.ok == (outcome == "ok"))
    ]
    if filters["person"]:
        asked = await console.asked_by(records)
        records = [rec for rec in records if filters["person"] in (rec.approved_by, asked.get(rec.deploy_id))]
    return filters, records[:limit], current


async def _export(console: Console, request: Request) -> list[dict[str, Any]]:
    _, records, _ = await _deploys(console, request)
    threads = {t.id: t for t in await console.reader.threads(list(dict.fromkeys(r.thread_id for r in records)))}
    secrets = console.parts.secrets
    return [model.record_fields(model.audit(rec, threads.get(rec.thread_id), secrets)) for rec in records]


async def _older(console: Console, environment: str, deploy_id: str) -> DeployRecord | None:
    """A deploy beyond the newest HISTORY_LIMIT (GitHub's deployment page links here for
    good): looked for a page at a time, OLDER_SCAN records at most."""
    cursor: str | None = None
    for _ in range(OLDER_SCAN // OLDER_PAGE):
        records, cursor = await console.parts.history.page(environment, OLDER_PAGE, cursor)
        found = next((rec for rec in records if rec.deploy_id == deploy_id), None)
        if found is not None or cursor is None:
            return found
    return None
