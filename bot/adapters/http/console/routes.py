"""The web console's routes: server-rendered pages under /console/, forms that POST back with a
CSRF token, and a Server-Sent Events stream that says when a page's content changed.

Every action goes through what the JSON API uses: ThreadService (respond, decide, cancel,
fork; its policy decides who may approve) and, for Lock and Unlock (of an environment, or of
one service there), Stop and Resume deploys (stop-the-line, for one environment or all) and
Roll back, the same chat command a person would send, carried out by a worker that asks the
policy again (a rollback is a deploy: approval and locks apply in its thread). Deploy anyway
is "deploy anyway: REASON" said in the blocked deploy's thread, as the person. The console
only asks the policy first so it can hide a button and refuse a forged form with a 403.
"""

from __future__ import annotations

import asyncio
import csv
import functools
import getpass
import hashlib
import hmac
import io
import json
import re
import secrets
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib import resources
from typing import Any, Protocol
from urllib.parse import parse_qsl, urlencode

import jinja2
from fastapi import APIRouter, FastAPI, Request
from fastapi.background import BackgroundTasks
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from bot.adapters.http.console import model
from bot.adapters.http.console.reader import Reader
from bot.adapters.http.console.streams import Slotted, Streams
from bot.adapters.http.shared import BROWSER_COOKIE, MAX_ADDRESS, MAX_TEXT_CHARS, SESSION_COOKIE, STATUS
from bot.core import commands, wording
from bot.core.events import ResumeDeploys, StopDeploys
from bot.core.freeze_windows import ALL, Freeze
from bot.core.people import ANONYMOUS, SERVICE, Identity
from bot.core.policy import Policy, lock_owner
from bot.core.thread import STATUSES
from bot.runtime.ports import DeployRecord, FreezeStore, History, Locks
from bot.runtime.service import Forbidden, Invalid, Refused, ThreadService, WrongState

PREFIX = "/console"
MAX_REASON_CHARS = 500
PAGE_SIZE = 25
SEARCH_SCAN = 1_000  # threads a filtered or searched list looks through, newest first
BOARD_SCAN = 200  # active threads the board and the approvals page look through for running deploys and approvals
DECIDED_SCAN = 50  # recent threads the approvals page looks through for decided approvals
HISTORY_LIMIT = 200  # the newest deploys per environment the pages look through
OLDER_SCAN = 10_000  # a deploy's own page looks further back, this many at most
STREAM_SECONDS = 10.0  # an event stream ends after this and the browser reconnects (no stream outlives a tab)
POLL_SECONDS = 1.0
HEADERS = {
    "Cache-Control": "no-store",
    # Not no-referrer: with it a browser sends `Origin: null` on a form's POST, which the front
    # door (bot.adapters.http.front_door) must refuse as another origin's. Nothing leaves for other sites.
    "Referrer-Policy": "same-origin",
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Content-Security-Policy": (
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
    ),
}
NOTICES = {  # ?notice= after an action: fixed words, so a link cannot make the page say anything
    "approved": "Approved: the deploy starts shortly.",
    "rejected": "Rejected: the model re-plans from your feedback.",
    "lock": "Lock asked for: it shows here once it is set.",
    "unlock": "Unlock asked for: it shows here once the lock is lifted.",
    "rollback": "Rollback asked for: this thread finds what to put back, and asks for approval where it must.",
    "approved-partly": "Approved: the deploy starts once enough other approvers have approved too.",
    "stop": "Stop asked for: the freeze shows here once deploys are stopped.",
    "resume": "Resume asked for: the freeze is gone from here once deploys may start again.",
    "anyway": "Deploy anyway asked for: this thread goes on past what stopped the deploy (approval still applies).",
    "sent": "Sent.",
    "cancelled": "Cancelled.",
    "resumed": "Handed to a worker.",
    "forked": "Forked: this is the new thread.",
    "link": "If that address belongs to someone deploybot knows, a sign-in link is on its way.",
}
STATIC = {"console.js": "text/javascript", "console.css": "text/css"}


class Parts(Protocol):
    """What the console needs of the app (bot.adapters.http.api.Parts provides it)."""

    @property
    def freezes(self) -> FreezeStore | None: ...

    @property
    def service(self) -> ThreadService: ...

    @property
    def policy(self) -> Policy: ...

    @property
    def locks(self) -> Locks: ...

    @property
    def history(self) -> History: ...

    @property
    def api_token(self) -> str | None: ...

    @property
    def secrets(self) -> tuple[str, ...]: ...

    @property
    def stream_limits(self) -> tuple[int, int]:
        """Live event streams at once: (per person, in all)."""
        ...

    async def kick(self, thread_id: str) -> None: ...


class SignIn(Protocol):
    """Signing in and out (bot.adapters.http.front_door.Auth, as bot.adapters.http.api.SignIn)."""

    @property
    def secure_cookies(self) -> bool: ...

    async def sign_out(self, session: Any) -> None: ...

    def csrf(self, session: Any) -> str: ...

    async def email_link(self, address: str) -> None: ...


class Page(Exception):
    """Stop and show a page saying why: a refusal, a bad parameter, something not found."""

    def __init__(self, status: int, title: str, detail: str) -> None:
        super().__init__(detail)
        self.status, self.title, self.detail = status, title, detail


@dataclass(frozen=True)
class _NoSession:
    """Whose CSRF token a request without a session uses (local mode, a bearer token): its
    browser's (BROWSER_COOKIE). Auth.csrf derives a token from any id, with the same secret
    sessions use; a browser's id is prefixed, so it never equals a session's."""

    id: str = "deploybot console: no session"


@dataclass(frozen=True)
class Viewer:
    identity: Identity
    session: Any | None
    csrf: str
    open_mode: bool

    @property
    def label(self) -> str:
        return self.identity.label

    @property
    def is_service(self) -> bool:
        return self.identity == SERVICE

    @property
    def may_start(self) -> bool:
        """Whether this viewer may start threads here (ask for a rollback): anyone but the
        shared token, which only reads the console."""
        return not self.is_service


def _local_user() -> str:
    try:
        return getpass.getuser()
    except Exception:  # no user name in a bare container
        return "local"


def templates() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("bot.adapters.http.console", "templates"),
        autoescape=True,  # every value printed is escaped, whatever the file's name
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["when"] = lambda d: d.strftime("%Y-%m-%d %H:%M:%S UTC") if d else ""
    env.filters["iso"] = lambda d: d.isoformat() if d else ""
    env.filters["short"] = lambda s, n=7: (s or "")[:n]
    env.globals.update(ago=model.ago, left=model.left, change_lines=wording.change_lines,
                       expired_in_place=wording.expired_in_place)
    return env


def mount(web: FastAPI, parts: Parts, sign_in: SignIn | None = None) -> Callable[..., HTMLResponse]:
    """Add the console's routes to `web`, and `GET /` -> /console/. Returns `standalone`,
    for pages outside the console styled like it (a sign-in link's)."""
    web.include_router(router(parts, sign_in))
    return standalone


@functools.cache
def _pages() -> jinja2.Environment:
    return templates()


def standalone(name: str, status: int, **context: Any) -> HTMLResponse:
    """A template of the console's, for nobody in particular (no viewer, no navigation)."""
    body = _pages().get_template(name).render(
        viewer=None, notice=None, path="", prefix=PREFIX, can_mail_links=False, **context
    )
    return HTMLResponse(body, status_code=status, headers=HEADERS)


def router(parts: Parts, sign_in: SignIn | None) -> APIRouter:  # noqa: C901 (one closure per route)
    pages = templates()
    policy, service = parts.policy, parts.service
    freezes = parts.freezes  # stop-the-line: the store the deploy path checks
    reader = Reader(parts.service.store, parts.locks, parts.history, parts.policy, freezes=freezes,
                    now=service.clock)
    streams = Streams(*parts.stream_limits)
    words = model.Words()
    local_user = _local_user()
    key = secrets.token_bytes(32)  # CSRF without sign-in support (an app built without /auth)
    here = resources.files("bot.adapters.http.console")
    static = {name: here.joinpath("static", name).read_bytes() for name in STATIC}
    r = APIRouter(include_in_schema=False)

    def csrf_for(session: Any | None, request: Request) -> str:
        if session is None:  # this browser's own, from its cookie
            session = _NoSession(f"browser:{browser(request)}")
        if sign_in is not None:
            return sign_in.csrf(session)
        return hmac.new(key, session.id.encode(), hashlib.sha256).hexdigest()

    def browser(request: Request) -> str:
        """This browser's id: its cookie's, or a new one that `render` gives it."""
        given = request.cookies.get(BROWSER_COOKIE, "")
        if re.fullmatch(r"[0-9a-f]{32}", given):
            return given
        state = request.scope.setdefault("state", {})
        return state.setdefault("new_browser", secrets.token_hex(16))  # type: ignore[no-any-return]

    def viewer(request: Request) -> Viewer:
        state = request.scope.get("state", {})
        if "identity" not in state and parts.api_token:  # served without bot.adapters.http.front_door: nobody checked
            raise Page(401, "Sign in", "")
        identity: Identity | None = state.get("identity")
        if identity == ANONYMOUS:
            raise Page(401, "Sign in", "")
        if identity is None:  # open mode: nothing configured, names are trusted
            identity = service.directory.by_name(local_user if not parts.api_token else "api")
        session = state.get("session")
        return Viewer(identity, session, csrf_for(session, request), policy.open_mode)

    def render(request: Request, name: str, code: int = 200, **context: Any) -> HTMLResponse:
        try:
            who = viewer(request)
        except Page:
            who = None
        notice = NOTICES.get(request.query_params.get("notice", ""))
        body = pages.get_template(name).render(
            viewer=who, notice=notice, path=request.url.path, now=service.clock(), prefix=PREFIX,
            can_mail_links=sign_in is not None, **context,
        )
        response = HTMLResponse(body, status_code=code, headers=HEADERS)
        new_browser = request.scope.get("state", {}).get("new_browser")
        if new_browser:
            secure = (sign_in is not None and sign_in.secure_cookies) or request.url.scheme == "https"
            response.set_cookie(BROWSER_COOKIE, new_browser, path=PREFIX, httponly=True, samesite="lax",
                                secure=secure)
        return response

    def page(request: Request, error: Page) -> HTMLResponse:
        if error.status == 401:
            return render(request, "sign_in.html", 401)
        return render(request, "error.html", error.status, title=error.title, detail=error.detail)

    def refused(request: Request, e: Refused) -> HTMLResponse:
        status = next((code for kind, code in STATUS.items() if isinstance(e, kind)), 400)
        titles = {401: "Sign in", 403: "Not allowed", 404: "Not found", 409: "Not possible now"}
        return page(request, Page(status, titles.get(status, "Not valid"), e.message))

    Handler = Callable[..., Awaitable[Response]]

    def guarded(handler: Handler) -> Handler:
        """Turn a refusal or a bad parameter into its page, never a 500 or JSON."""

        @functools.wraps(handler)  # FastAPI reads the handler's own parameters
        async def run(request: Request, *args: Any, **kwargs: Any) -> Response:
            try:
                return await handler(request, *args, **kwargs)
            except Page as e:
                return page(request, e)
            except Refused as e:
                return refused(request, e)

        return run

    async def form(request: Request, who: Viewer) -> dict[str, str]:
        """The posted form, once its CSRF token is the viewer's (else a 403 page)."""
        body = (await request.body()).decode("utf-8", "replace")
        try:
            fields = dict(parse_qsl(body, keep_blank_values=True, max_num_fields=20))
        except ValueError:
            raise Page(400, "Not valid", "this form could not be read") from None
        if not hmac.compare_digest(fields.get("csrf_token", "").encode(), who.csrf.encode()):
            raise Page(403, "Not allowed", "this form has no valid CSRF token: reload the page and try again")
        return fields

    def back(fields: dict[str, str], default: str, notice: str) -> RedirectResponse:
        target = fields.get("next", "")
        if not (target.startswith(PREFIX + "/") and "//" not in target and "\\" not in target):
            target = default
        target = re.sub(r"([?&])notice=[^&]*&?", r"\1", target).rstrip("?&")
        joiner = "&" if "?" in target else "?"
        return RedirectResponse(f"{target}{joiner}notice={notice}", status_code=303)

    def text(fields: dict[str, str], name: str, limit: int, required: bool = False) -> str:
        value = fields.get(name, "")
        if len(value) > limit:
            raise Page(413, "Too long", f"{name} is longer than {limit} characters")
        if required and not value.strip():
            raise Page(422, "Not valid", f"say something: {name} is empty")
        return value

    def known_environment(name: str) -> str:
        if name not in policy.environments:
            raise Page(404, "Not found", f"there is no environment {name!r}")
        return name

    # --- pages -------------------------------------------------------------------------

    @r.get("/")
    async def root() -> RedirectResponse:
        return RedirectResponse(PREFIX + "/", status_code=307)

    @r.get(PREFIX + "/")
    @guarded
    async def board(request: Request) -> Response:
        who = viewer(request)
        version = await reader.fingerprint("board")  # before reading: a change meanwhile shows up live
        now = service.clock()
        names = model.ordered(policy.environments, policy)
        services = {e: model.services_in(e, policy) for e in names}
        helds, histories, threads, stopped = await asyncio.gather(
            asyncio.gather(*(parts.locks.held(e, services[e]) for e in names)),
            asyncio.gather(*(parts.history.recent(e, HISTORY_LIMIT) for e in names)),
            reader.active(BOARD_SCAN),
            _stopped(),
        )
        holding = [*policy.freezes, *stopped]
        shown = [  # what the rows show: each service's current deploy and its newest one
            rec for records in histories
            for rec in {*model.latest_per_service(records), *model.newest_per_service(records).values()}
        ]
        asked = await _asked_by(shown)
        cards = []
        for name, locks, records in zip(names, helds, histories, strict=True):
            card = model.environment(name, policy, who.identity)
            whole = next((lock for lock in locks if not lock.service), None)
            card.lock = model.held(whole, policy, who.identity) if whole else None
            card.services = model.service_rows(
                name, services[name], records, locks, policy, who.identity, asked, who.may_start)
            card.freeze = model.freezing(holding, name, now)
            card.next_freeze = model.next_window(policy.freezes, name, now)
            card.stop = model.stop(name, stopped, policy, who.identity, who.may_start, freezes is not None)
            cards.append(card)
        by_name = {c.name: c for c in cards}
        for t in threads:
            going = model.running(t)
            if going and going.environment in by_name:
                by_name[going.environment].running.append(going)
            for a in model.approvals(t, who.identity, policy, now):
                if a.pending and a.request.environment in by_name:
                    by_name[a.request.environment].waiting.append(a)
            waits = model.queued(t, now)
            if waits and waits.environment in by_name:
                by_name[waits.environment].in_line.append(waits)
        for c in cards:
            c.in_line.sort(key=lambda q: (q.position, q.since))
        everywhere = model.freezing(holding, ALL, now)
        stop_all = model.stop(ALL, stopped, policy, who.identity, who.may_start, freezes is not None)
        return render(request, "board.html", environments=cards, version=version, watch="board",
                      everywhere=everywhere, stop_all=stop_all)

    async def _stopped() -> list[Freeze]:
        return await freezes.current() if freezes is not None else []

    async def _asked_by(records: list[DeployRecord]) -> dict[str, str]:
        ids = list(dict.fromkeys(r.thread_id for r in records))
        threads = {t.id: t for t in await reader.threads(ids)}
        return {r.deploy_id: model.audit(threads.get(r.thread_id), r.deploy_id, record=r).asked_by for r in records}

    @r.get(PREFIX + "/approvals")
    @guarded
    async def approvals_page(request: Request) -> Response:
        who = viewer(request)
        version = await reader.fingerprint("board")
        now = service.clock()
        active, recent = await asyncio.gather(reader.active(BOARD_SCAN), reader.recent(DECIDED_SCAN))
        threads = list({t.id: t for t in (*active, *recent)}.values())
        found = [a for t in threads for a in model.approvals(t, who.identity, policy, now)]
        pending = sorted((a for a in found if a.pending), key=lambda a: a.request.expires_at)
        decided = sorted((a for a in found if a.closed_at is not None), key=lambda a: a.closed_at or now,
                         reverse=True)[:50]
        return render(request, "approvals.html", pending=pending, decided=decided, version=version, watch="board")

    @r.get(PREFIX + "/threads")
    @guarded
    async def threads_page(request: Request) -> Response:
        viewer(request)
        q = request.query_params
        status = q.get("status", "")
        if status and status not in STATUSES:
            raise Page(400, "Not valid", f"status must be one of {', '.join(STATUSES)}")
        search = q.get("q", "")[:200]
        number = _int(q.get("page", "1"), "page", 1, 10_000)
        cursor = q.get("cursor", "")[:500] or None
        version = await reader.fingerprint("board")
        now = service.clock()
        start = (number - 1) * PAGE_SIZE
        after: str | None = None
        if search.strip():  # by status from the index, by recency otherwise; then the search
            statuses = _indexed_as(status) if status else None
            scanned, _ = await reader.listed(statuses, SEARCH_SCAN)
            hits = [t for t in scanned if (not status or t.status(now) == status) and model.matches(t, search)]
            shown, more = hits[start:start + PAGE_SIZE], len(hits) > start + PAGE_SIZE
        else:  # a page of the index (or of every thread, by recency), as GET /threads
            shown, after = await service.page(status or None, PAGE_SIZE, cursor)
            more = after is not None

        def link(n: int, at: str | None = None) -> str:
            return PREFIX + "/threads?" + urlencode({k: v for k, v in (("status", status), ("q", search),
                                                                      ("page", str(n)), ("cursor", at)) if v})

        previous = (link(number - 1) if number > 1 else None) if search.strip() else \
            (link(1) if cursor else None)
        return render(
            request, "threads.html", rows=[model.row(t, now) for t in shown], status=status, q=search,
            statuses=STATUSES, page=number, previous=previous, first_page=not search.strip() and bool(cursor),
            next_page=(link(number + 1, after) if more else None), version=version, watch="board",
            scan=SEARCH_SCAN,
        )

    @r.get(PREFIX + "/threads/{thread_id}")
    @guarded
    async def thread_page(request: Request, thread_id: str) -> Response:
        who = viewer(request)
        if not _id_like(thread_id):
            raise Page(404, "Not found", f"there is no thread {thread_id!r}")
        version = await reader.fingerprint(f"thread:{thread_id}")
        thread = await reader.maybe(thread_id)
        if thread is None:
            raise Page(404, "Not found", f"there is no thread {thread_id!r}")
        now = service.clock()
        return render(
            request, "thread.html", thread=thread, status=thread.status(now),
            items=model.timeline(thread, parts.secrets, words),
            approvals=model.approvals(thread, who.identity, policy, now),
            blocked=model.blocked(thread, who.identity, policy) if who.may_start else None,
            version=version, watch=f"thread:{thread.id}",
        )

    @r.get(PREFIX + "/deploys")
    @guarded
    async def deploys_page(request: Request) -> Response:
        who = viewer(request)
        version = await reader.fingerprint("board")
        filters, records, current = await _deploys(request)
        asked = await _asked_by(records)
        rows = [model.deployed(rec, asked, who.may_start and _may_roll_back(rec, current)) for rec in records]
        query = urlencode({k: v for k, v in filters.items() if v})
        services = list(policy.catalog.names)
        if filters["service"] and filters["service"] not in services:
            services.append(filters["service"])  # deployed once, no longer in the catalog
        return render(
            request, "deploys.html", rows=rows, filters=filters, query=query, version=version, watch="board",
            environments=model.ordered(policy.environments, policy), services=services,
        )

    @r.get(PREFIX + "/deploys.csv")
    @guarded
    async def deploys_csv(request: Request) -> Response:
        viewer(request)
        rows = await _export(request)
        out = io.StringIO()
        columns = list(dict.fromkeys(k for row in rows for k in row)) or ["deploy_id"]
        writer = csv.DictWriter(out, columns, extrasaction="ignore")
        writer.writeheader()
        for row in rows:
            writer.writerow({k: _cell(v) for k, v in row.items()})
        return Response(out.getvalue(), media_type="text/csv; charset=utf-8", headers={
            **HEADERS, "Content-Disposition": 'attachment; filename="deploys.csv"'})

    @r.get(PREFIX + "/deploys.jsonl")
    @guarded
    async def deploys_jsonl(request: Request) -> Response:
        viewer(request)
        rows = await _export(request)
        body = "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)
        return Response(body, media_type="application/jsonl; charset=utf-8", headers={
            **HEADERS, "Content-Disposition": 'attachment; filename="deploys.jsonl"'})

    def _may_roll_back(record: DeployRecord, current: set[str]) -> bool:
        """Whether `record` gets a Roll back button (the viewer aside): it is the current
        deploy of a service the catalog still deploys there, and the rollback would not be
        refused outright."""
        return (record.deploy_id in current and record.environment in policy.environments
                and policy.catalog.invalid(record.service, record.environment) is None)

    async def _deploys(request: Request) -> tuple[dict[str, str], list[DeployRecord], set[str]]:
        """The filters, the records they keep (newest first), and the ids of the deploys a
        rollback would roll back now (model.rollbackable: of the whole history, unfiltered)."""
        q = request.query_params
        environment = q.get("environment", "")
        if environment and environment not in policy.environments:
            raise Page(400, "Not valid", f"environment must be one of {', '.join(sorted(policy.environments))}")
        outcome = q.get("outcome", "")
        if outcome not in ("", "ok", "failed"):
            raise Page(400, "Not valid", "outcome must be ok or failed")
        service_name, tag, person = q.get("service", "")[:100], q.get("tag", "")[:200], q.get("person", "")[:200]
        limit = _int(q.get("limit", "100"), "limit", 1, HISTORY_LIMIT * max(1, len(policy.environments)))
        names = [environment] if environment else sorted(policy.environments)
        records = [rec for recs in await asyncio.gather(*(parts.history.recent(e, HISTORY_LIMIT) for e in names))
                   for rec in recs]
        current = model.rollbackable(records)
        records = [
            rec for rec in model.newest_first(records)
            if (not service_name or rec.service == service_name) and (not tag or rec.tag == tag)
            and (not outcome or rec.ok == (outcome == "ok"))
        ]
        if person:
            asked = await _asked_by(records)
            records = [rec for rec in records if person in (rec.approved_by, asked.get(rec.deploy_id))]
        filters = {"environment": environment, "service": service_name, "tag": tag, "outcome": outcome,
                   "person": person, "limit": str(limit) if q.get("limit") else ""}
        return filters, records[:limit], current

    async def _export(request: Request) -> list[dict[str, Any]]:
        _, records, _ = await _deploys(request)
        threads = {t.id: t for t in await reader.threads(list(dict.fromkeys(r.thread_id for r in records)))}
        return [
            model.record_fields(rec, model.audit(threads.get(rec.thread_id), rec.deploy_id, parts.secrets, rec))
            for rec in records
        ]

    async def _older(environment: str, deploy_id: str) -> DeployRecord | None:
        """A deploy beyond the newest HISTORY_LIMIT (GitHub's deployment page links here for
        good): looked for a page at a time, OLDER_SCAN records at most."""
        cursor: str | None = None
        for _ in range(OLDER_SCAN // 1000):
            records, cursor = await parts.history.page(environment, 1000, cursor)
            found = next((rec for rec in records if rec.deploy_id == deploy_id), None)
            if found is not None or cursor is None:
                return found
        return None

    @r.get(PREFIX + "/deploys/{environment}/{deploy_id}")
    @guarded
    async def deploy_page(request: Request, environment: str, deploy_id: str) -> Response:
        who = viewer(request)
        known_environment(environment)
        history = await parts.history.recent(environment, HISTORY_LIMIT)
        record = next((rec for rec in history if rec.deploy_id == deploy_id), None) or await _older(
            environment, deploy_id)
        if record is None:
            raise Page(404, "Not found", f"no deploy {deploy_id!r} in the history of {environment}")
        thread = await reader.maybe(record.thread_id) if _id_like(record.thread_id) else None
        trail = model.audit(thread, deploy_id, parts.secrets, record)
        may = who.may_start and _may_roll_back(record, model.rollbackable(history))
        return render(request, "deploy.html", record=model.Deployed(record, trail.asked_by, may), trail=trail,
                      thread=thread, secrets=parts.secrets)

    # --- actions -------------------------------------------------------------------------

    async def _decide(request: Request, thread_id: str, approval_id: str, approve: bool) -> Response:
        who = viewer(request)
        fields = await form(request, who)
        feedback = "" if approve else text(fields, "feedback", MAX_TEXT_CHARS)
        thread = await service.respond(thread_id, feedback, who.identity, approval_id, approve, channel="console")
        await parts.kick(thread.id)
        notice = "rejected"
        if approve:
            notice = "approved" if thread.decision_for(approval_id) is not None else "approved-partly"
        return back(fields, f"{PREFIX}/threads/{thread_id}", notice)

    @r.post(PREFIX + "/approvals/{thread_id}/{approval_id}/approve")
    @guarded
    async def approve(request: Request, thread_id: str, approval_id: str) -> Response:
        return await _decide(request, thread_id, approval_id, True)

    @r.post(PREFIX + "/approvals/{thread_id}/{approval_id}/reject")
    @guarded
    async def reject(request: Request, thread_id: str, approval_id: str) -> Response:
        return await _decide(request, thread_id, approval_id, False)

    def known_service(name: str, environment: str) -> str:
        if name not in policy.catalog.services:
            raise Page(404, "Not found", wording.unknown_service(name, policy.catalog.names))
        why = policy.catalog.invalid(name, environment)
        if why:
            raise Invalid(why)
        return name

    async def _lock(request: Request, environment: str, service_name: str = "") -> Response:
        who = viewer(request)
        fields = await form(request, who)
        known_environment(environment)
        if service_name:
            known_service(service_name, environment)
        reason = " ".join(text(fields, "reason", MAX_REASON_CHARS, required=True).split())
        why = policy.may_lock(who.identity, environment)
        if why:
            raise Forbidden(why)
        # The chat command, so the lock is set (and checked again) where every lock is, and recorded.
        where = wording.lock_target(environment, service_name)
        thread = await service.launch(f"lock {where}: {reason}", who.identity, channel="console")
        await parts.kick(thread.id)
        return back(fields, PREFIX + "/", "lock")

    async def _unlock(request: Request, environment: str, service_name: str = "") -> Response:
        who = viewer(request)
        fields = await form(request, who)
        known_environment(environment)
        if service_name:
            known_service(service_name, environment)
        held = await parts.locks.held(environment, [service_name] if service_name else [])
        holder = next((lock for lock in held if lock.service == service_name), None)
        if holder is None:
            raise WrongState(wording.not_locked(wording.lock_target(environment, service_name)))
        why = policy.may_unlock(who.identity, environment, holder.owner,
                                target=wording.lock_target(environment, service_name), locked_by=holder.by())
        if why:
            raise Forbidden(why)
        where = wording.lock_target(environment, service_name)
        command = f"unlock {where}"
        if holder.owner.startswith("manual:") and holder.owner != lock_owner(who.identity):
            # Someone else's lock: taken on purpose, with a reason they are told.
            reason = " ".join(fields.get("reason", "").split())[:500]
            if not reason:
                raise Page(400, "Not valid", wording.take_with_force(wording.lock_target(environment, service_name),
                                                                      holder.by()))
            command += f" --force: {reason}"
        thread = await service.launch(command, who.identity, channel="console")
        await parts.kick(thread.id)
        return back(fields, PREFIX + "/", "unlock")

    @r.post(PREFIX + "/environments/{environment}/lock")
    @guarded
    async def lock(request: Request, environment: str) -> Response:
        return await _lock(request, environment)

    @r.post(PREFIX + "/environments/{environment}/unlock")
    @guarded
    async def unlock(request: Request, environment: str) -> Response:
        return await _unlock(request, environment)

    @r.post(PREFIX + "/environments/{environment}/services/{service_name}/lock")
    @guarded
    async def lock_service(request: Request, environment: str, service_name: str) -> Response:
        return await _lock(request, environment, service_name)

    @r.post(PREFIX + "/environments/{environment}/services/{service_name}/unlock")
    @guarded
    async def unlock_service(request: Request, environment: str, service_name: str) -> Response:
        return await _unlock(request, environment, service_name)

    async def _stop(request: Request, scope: str) -> Response:
        """Stop the line for `scope` (an environment, or ALL) with the exact chat command, as
        Lock does: `stop deploys to ENV [until WHEN]: REASON`, `stop all deploys ...`."""
        who = viewer(request)
        fields = await form(request, who)
        if scope != ALL:
            known_environment(scope)
        reason = " ".join(text(fields, "reason", MAX_REASON_CHARS, required=True).split())
        until = _until(fields.get("until", ""))
        _may_stop(who, scope)
        if until is not None and until <= service.clock():
            raise Invalid(wording.until_in_the_past(until))
        said = commands.stop_text(scope, reason, f"{until:%Y-%m-%dT%H:%M}Z" if until else "")
        step = commands.parse(said, policy.catalog)
        meant = (scope, reason, until)
        if not (isinstance(step, StopDeploys) and (step.environment, step.reason, step.until) == meant):
            raise Invalid(f"this reason cannot be said as one command: {reason!r}")
        thread = await service.launch(said, who.identity, channel="console")
        await parts.kick(thread.id)
        return back(fields, PREFIX + "/", "stop")

    async def _resume(request: Request, scope: str) -> Response:
        who = viewer(request)
        fields = await form(request, who)
        if scope != ALL:
            known_environment(scope)
        _may_stop(who, scope)
        assert freezes is not None  # _may_stop refuses without a store
        if not any(f.scope == scope for f in await freezes.current()):
            raise WrongState(wording.not_stopped_now(wording.freeze_scope(scope)))
        said = commands.resume_text(scope)
        step = commands.parse(said, policy.catalog)
        assert isinstance(step, ResumeDeploys) and step.environment == scope, said
        thread = await service.launch(said, who.identity, channel="console")
        await parts.kick(thread.id)
        return back(fields, PREFIX + "/", "resume")

    def _may_stop(who: Viewer, scope: str) -> None:
        if not who.may_start:
            raise Forbidden(wording.shared_token_cannot("stop or resume deploys"))
        if freezes is None:
            raise WrongState(wording.cannot_stop_here())
        why = policy.may_stop(who.identity, scope)
        if why:
            raise Forbidden(why)

    @r.post(PREFIX + "/environments/{environment}/stop")
    @guarded
    async def stop_environment(request: Request, environment: str) -> Response:
        return await _stop(request, environment)

    @r.post(PREFIX + "/environments/{environment}/resume")
    @guarded
    async def resume_environment(request: Request, environment: str) -> Response:
        return await _resume(request, environment)

    @r.post(PREFIX + "/stop")
    @guarded
    async def stop_all(request: Request) -> Response:
        return await _stop(request, ALL)

    @r.post(PREFIX + "/resume")
    @guarded
    async def resume_all(request: Request) -> Response:
        return await _resume(request, ALL)

    @r.post(PREFIX + "/threads/{thread_id}/deploy-anyway")
    @guarded
    async def deploy_anyway(request: Request, thread_id: str) -> Response:
        """"deploy anyway: REASON" in the thread, as the person: the thread forces the deploy
        that CI checks or a freeze stopped (and checks again that they may)."""
        who = viewer(request)
        fields = await form(request, who)
        reason = " ".join(text(fields, "reason", MAX_REASON_CHARS, required=True).split())
        if not who.may_start:
            raise Forbidden(wording.shared_token_cannot("deploy anyway"))
        thread = await service.get(thread_id)
        found = model.blocked(thread, who.identity, policy)
        if found is None:
            raise WrongState(wording.nothing_to_force())
        if found.why_not:
            raise Forbidden(found.why_not)
        said = f"deploy anyway: {reason}"
        if commands.deploy_anyway(said) != reason:
            raise Invalid(f"this reason cannot be said as one command: {reason!r}")
        thread = await service.respond(thread_id, said, who.identity, channel="console")
        await parts.kick(thread.id)
        return back(fields, f"{PREFIX}/threads/{thread_id}", "anyway")

    @r.post(PREFIX + "/environments/{environment}/services/{service_name}/rollback")
    @guarded
    async def roll_back(request: Request, environment: str, service_name: str) -> Response:
        """Start a thread that rolls the service back, as POST /deploys/rollback does: the
        exact command, so the same rules apply there (approval, locks, the re-check) and the
        thread says what it found. `deploy_id`, when posted: the deploy the button was shown
        on, which must still be the current one (else the rollback would undo another)."""
        who = viewer(request)
        fields = await form(request, who)
        if not who.may_start:
            raise Forbidden(wording.shared_token_cannot("ask for a rollback"))
        known_environment(environment)
        known_service(service_name, environment)
        shown = fields.get("deploy_id", "")[:200]
        if shown:
            history = await parts.history.recent(environment, HISTORY_LIMIT, service=service_name)
            now_on = model.current_of(history, service_name)
            if now_on is None or now_on.deploy_id != shown:
                where = wording.lock_target(environment, service_name)
                raise WrongState(f"deploy {shown} is no longer what is on {where}: reload the page and look again")
        thread = await service.launch(commands.rollback_text(service_name, environment), who.identity,
                                      channel="console")
        await parts.kick(thread.id)
        return back({}, f"{PREFIX}/threads/{thread.id}", "rollback")

    @r.post(PREFIX + "/threads/{thread_id}/respond")
    @guarded
    async def respond(request: Request, thread_id: str) -> Response:
        who = viewer(request)
        fields = await form(request, who)
        said = text(fields, "text", MAX_TEXT_CHARS, required=True)
        thread = await service.respond(thread_id, said, who.identity, channel="console")
        await parts.kick(thread.id)
        return back(fields, f"{PREFIX}/threads/{thread_id}", "sent")

    @r.post(PREFIX + "/threads/{thread_id}/cancel")
    @guarded
    async def cancel(request: Request, thread_id: str) -> Response:
        who = viewer(request)
        fields = await form(request, who)
        reason = text(fields, "reason", MAX_TEXT_CHARS)
        await service.cancel(thread_id, who.identity, reason, channel="console")
        await parts.kick(thread_id)  # its run lets go of what it held: a place in line, a timer
        return back(fields, f"{PREFIX}/threads/{thread_id}", "cancelled")

    @r.post(PREFIX + "/threads/{thread_id}/fork")
    @guarded
    async def fork(request: Request, thread_id: str) -> Response:
        who = viewer(request)
        fields = await form(request, who)
        at = _int(fields.get("at", ""), "at", 1, 1_000_000)
        thread = await service.fork(thread_id, at)
        await parts.kick(thread.id)
        return back({}, f"{PREFIX}/threads/{thread.id}", "forked")

    @r.post(PREFIX + "/threads/{thread_id}/resume")
    @guarded
    async def resume(request: Request, thread_id: str) -> Response:
        who = viewer(request)
        fields = await form(request, who)
        thread = await service.get(thread_id)
        if thread.cancelled():
            raise WrongState("this thread was cancelled: fork it to go on")
        await parts.kick(thread.id)  # a run re-derives what to do from the events
        return back(fields, f"{PREFIX}/threads/{thread_id}", "resumed")

    # --- signing in and out -----------------------------------------------------------------

    @r.post(PREFIX + "/sign-in")
    @guarded
    async def mail_link(request: Request, background: BackgroundTasks) -> Response:
        """Mail a sign-in link (the same answer whoever's address it is)."""
        body = (await request.body()).decode("utf-8", "replace")
        fields = dict(parse_qsl(body, keep_blank_values=True, max_num_fields=5))
        address = fields.get("email", "")
        if sign_in is not None and len(address) <= MAX_ADDRESS:  # not a bare address: mails nothing
            background.add_task(sign_in.email_link, address)
        return back({}, PREFIX + "/", "link")

    @r.post(PREFIX + "/sign-out")
    @guarded
    async def sign_out(request: Request) -> Response:
        who = viewer(request)
        await form(request, who)
        if who.session is not None and sign_in is not None:
            await sign_in.sign_out(who.session)
        response = RedirectResponse(PREFIX + "/", status_code=303)
        secure = (sign_in is not None and sign_in.secure_cookies) or request.url.scheme == "https"
        response.delete_cookie(SESSION_COOKIE, path="/", httponly=True, samesite="lax", secure=secure)
        return response

    # --- live updates and static files ---------------------------------------------------------

    @r.get(PREFIX + "/changes")
    @guarded
    async def changes(request: Request) -> Response:
        """Server-Sent Events: `changed` (with the new version) whenever what `watch` shows
        changed since `since`. Each stream ends after STREAM_SECONDS; the browser reconnects."""
        who = viewer(request).identity.principal
        watch, since = request.query_params.get("watch", "board"), request.query_params.get("since", "")
        if watch != "board" and not (watch.startswith("thread:") and _id_like(watch.removeprefix("thread:"))):
            raise Page(400, "Not valid", "watch must be board or thread:<id>")

        async def stream() -> AsyncIterator[str]:
            yield "retry: 1000\n\n"
            last, ends = since, time.monotonic() + STREAM_SECONDS
            while time.monotonic() < ends and not await request.is_disconnected():
                try:
                    version = await reader.fingerprint(watch)
                except Exception:  # Redis away for a moment: say nothing, try again
                    version = last
                if version != last:
                    last = version
                    yield f"event: changed\ndata: {version}\n\n"
                await asyncio.sleep(POLL_SECONDS)

        refused = streams.take(who)
        if refused is not None:
            raise Page(429, "Too many live streams", refused)
        return Slotted(streams, who, stream(), media_type="text/event-stream",
                       headers={**HEADERS, "X-Accel-Buffering": "no"})

    @r.get("/favicon.ico")
    async def favicon() -> Response:
        """Browsers ask for it on every page: nothing, rather than a 404 each time."""
        return Response(status_code=204, headers={"Cache-Control": "max-age=86400"})

    @r.get(PREFIX + "/static/{name}")
    async def static_file(name: str) -> Response:
        if name not in static:
            return Response("not found", status_code=404, media_type="text/plain")
        return Response(static[name], media_type=STATIC[name],
                        headers={"Cache-Control": "max-age=300", "X-Content-Type-Options": "nosniff"})

    return r


def _indexed_as(status: str) -> tuple[str, ...]:
    """The index's statuses a thread in `status` now may have (the index has no clock: an
    expired approval is still waited for there)."""
    return ("waiting_for_human", "waiting_for_approval") if status == "waiting_for_human" else (status,)


def _int(value: str, name: str, low: int, high: int) -> int:
    # ASCII digits only: str.isdigit() also takes "²", which int() refuses (a 500).
    if not re.fullmatch(r"[0-9]{1,9}", value.strip()) or not low <= int(value) <= high:
        raise Page(400, "Not valid", f"{name} must be a whole number from {low} to {high}")
    return int(value)


_ID = re.compile(r"^[A-Za-z0-9_.:-]{1,200}$")
_UNTIL = re.compile(r"^(\d{4}-\d{2}-\d{2})(?:[T ](\d{1,2}:\d{2}))?Z?$")


def _until(value: str) -> datetime | None:
    """A stop's optional end, in UTC, as a datetime-local field posts it (`2026-11-26T08:00`)
    or as the chat command takes it (`2026-11-26 08:00`, a date alone: its start)."""
    value = value.strip()
    if not value:
        return None
    m = _UNTIL.match(value)
    try:
        if m is None:
            raise ValueError(value)
        hour, minute = (m[2] or "0:00").split(":")
        return datetime.fromisoformat(f"{m[1]}T{int(hour):02d}:{minute}").replace(tzinfo=UTC)
    except ValueError:
        raise Page(422, "Not valid", "until must be a date and a time in UTC, like 2026-11-26 08:00") from None


def _id_like(value: str) -> bool:
    return bool(_ID.match(value))


def _cell(value: Any) -> Any:
    """A CSV cell a spreadsheet shows as text: one starting with = + - @ (a formula) gets a '."""
    if isinstance(value, str) and value[:1] in ("=", "+", "-", "@", "\t", "\r"):
        return "'" + value
    return value
