"""HTTP: the thread API, signing in, and health. Thin: parse, call the service, hand the thread
to a worker.

Who is asking was settled before the body was read (bot.adapters.http.front_door puts it in
`scope["state"]["identity"]`); here it meets the body's `user`:
- a person (a personal API token, a signed-in session): they act as themselves; a `user`
  naming anyone else is a 403;
- the service identity (the shared API_TOKEN; or, in local mode with people configured, a
  request without credentials): may start threads, read, write free text and cancel, its
  `user` kept only as an unverified label (via "api") for a pipeline or a bot, and a `user`
  naming a person of deploybot.toml is a 403 ("use your personal token"); deciding, and the
  lock and unlock commands, are a 403 that asks for a personal token;
- None (open mode: nothing configured): the `user` given is trusted, as before.
"""

from __future__ import annotations

import hmac
import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import asdict
from datetime import UTC, datetime
from typing import Any, Protocol
from urllib.parse import parse_qsl

from fastapi import APIRouter, Depends, FastAPI, Header, Query, Request
from fastapi.background import BackgroundTasks
from fastapi.exception_handlers import request_validation_exception_handler
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse, PlainTextResponse, RedirectResponse, Response
from pydantic import BaseModel, Field
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from bot.adapters.http.console import mount as mount_console
from bot.adapters.http.shared import MAX_TEXT_CHARS, SESSION_COOKIE, http_status
from bot.core import commands, transcript, wording
from bot.core.events import LockEnvironment, ResumeDeploys, StopDeploys, UnlockEnvironment
from bot.core.people import API, SESSION, TOKEN, Identity
from bot.core.policy import Policy
from bot.core.views import summary_json, thread_json
from bot.runtime.ports import DeployRecord, FreezeStore, Health, History, Lock, Locks
from bot.runtime.service import Forbidden, Invalid, Refused, ThreadService, Unauthorized

log = logging.getLogger(__name__)

# What a person may write in one go through the API: a request, a reply, a reason to cancel.
# Longer is refused with 413 and a message naming the field (see `too_long` below), not
# pydantic's 422; the bytes of the body as a whole are capped before it is read
# (bot.adapters.http.front_door, wrapped around this app by the root).
TEXT_FIELDS = ("message", "text", "reason")
MAX_LIMIT = 200  # ?limit= on /threads and /deploys


# `user`: who is asking, as the API names them. With a personal token or a session it may be
# left out (or must be that person); in open mode it is trusted; with the shared token it
# is only a label. Absent in open mode: "api".
class LaunchBody(BaseModel):
    message: str = Field(min_length=1, max_length=MAX_TEXT_CHARS)
    user: str | None = Field(None, min_length=1)


class RespondBody(BaseModel):
    text: str = Field("", max_length=MAX_TEXT_CHARS)
    user: str | None = Field(None, min_length=1)
    approval_id: str | None = None
    approve: bool | None = None


class ForkBody(BaseModel):
    at: int


class CancelBody(BaseModel):
    user: str | None = Field(None, min_length=1)
    reason: str = Field("", max_length=MAX_TEXT_CHARS)


class RollbackBody(BaseModel):
    service: str = Field(min_length=1, max_length=100)
    environment: str = Field(min_length=1, max_length=100)
    user: str | None = Field(None, min_length=1)


class EmailLinkBody(BaseModel):
    # Any value: one that is not exactly one bare address is answered like an unknown one
    # (bot.adapters.http.front_door.Auth.email_link), so a list or a display name tells nothing either.
    email: Any


# The shared API_TOKEN (bot.adapters.http.front_door.SERVICE): the bot itself, never a person.
SERVICE = Identity(None, TOKEN, "api")
USE_A_PERSONAL_TOKEN = (
    "to {what}, use a personal token (`python -m bot tokens create NAME`) or sign in "
    "(`python -m bot login-link NAME`): the shared API token speaks for nobody in particular"
)
SIGN_IN_FAILED = (
    "this sign-in link was already used or has expired (links work once, for 10 minutes): ask for a "
    "new one (`@deploybot login` in Slack, or `python -m bot login-link NAME`)"
)
MAX_CODE = 200  # a sign-in link's code is 43 characters; anything much longer is nobody's
EMAIL_LINK_SENT = "if that address belongs to someone deploybot knows, a sign-in link is on its way"


Endpoint = Callable[[Request], Awaitable[Any]]


class Session(Protocol):
    """A signed-in session (bot.adapters.http.front_door.Session)."""

    @property
    def id(self) -> str: ...

    @property
    def person(self) -> str: ...

    @property
    def expires(self) -> int: ...


class SignIn(Protocol):
    """Signing in and out: bot.adapters.http.front_door.Auth, given to `create_app` by the root."""

    @property
    def session_ttl(self) -> int: ...

    @property
    def secure_cookies(self) -> bool:
        """True behind https (PUBLIC_URL): the cookie is Secure even if the request came as http."""
        ...

    async def link_person(self, code: str) -> str | None:
        """Whose link this is, leaving it unused; None: used, expired or unknown."""
        ...

    async def sign_in(self, code: str) -> tuple[Session, str] | None:
        """A link's code -> (the session, its cookie's value); None: used or expired."""
        ...

    async def sign_out(self, session: Any) -> None: ...

    def csrf(self, session: Any) -> str: ...

    async def email_link(self, address: str) -> None: ...


class Parts(Protocol):
    """What the HTTP side needs; the composition root (bot.wiring.app.App) provides it."""

    @property
    def service(self) -> ThreadService: ...

    @property
    def policy(self) -> Policy: ...

    @property
    def locks(self) -> Locks: ...

    @property
    def history(self) -> History: ...

    @property
    def freezes(self) -> FreezeStore | None: ...

    @property
    def health(self) -> Health: ...

    @property
    def llm_configured(self) -> bool: ...

    @property
    def api_token(self) -> str | None:
        """None: the API is open (local mode, bound to 127.0.0.1)."""
        ...

    @property
    def secrets(self) -> tuple[str, ...]:
        """Kept out of transcripts."""
        ...

    @property
    def stream_limits(self) -> tuple[int, int]:
        """The console's live event streams at once: (per person, in all)."""
        ...

    @property
    def slack_endpoint(self) -> Endpoint | None:
        """None with Slack off, or in Socket Mode."""
        ...

    @property
    def email_endpoint(self) -> Endpoint | None: ...

    @property
    def github_endpoint(self) -> Endpoint | None:
        """None without GITHUB_WEBHOOK_SECRET."""
        ...

    async def kick(self, thread_id: str) -> None: ...

    async def start(self, worker: bool = True, receive: bool = True) -> None: ...

    async def close(self) -> None: ...


def create_app(parts: Parts, worker: bool = True, sign_in: SignIn | None = None) -> FastAPI:
    """`worker=False` (serve --no-worker): this process only records events and hands
    threads to worker processes. `sign_in` None: no /auth routes."""

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        await parts.start(worker)
        yield
        await parts.close()

    def the_app() -> Parts:
        return parts

    def authorized(request: Request, authorization: str | None = Header(None)) -> None:
        # The check that counts runs earlier, in bot.adapters.http.front_door, before a body is read
        # (FastAPI reads and parses the body before it solves dependencies); this one stays
        # so a route is never open because the app was served without that wrapper.
        if "identity" in request.scope.get("state", {}):
            return  # bot.adapters.http.front_door checked it
        token = parts.api_token
        if token and not hmac.compare_digest(
            (authorization or "").encode(), f"Bearer {token}".encode()
        ):
            raise Unauthorized("missing or wrong bearer token (Authorization: Bearer <API_TOKEN>)")

    def acting(
        request: Request, user: str | None, deciding: bool = False, text: str = "", named: bool = False
    ) -> Identity:
        """Who this request acts as: the identity the front door found, and the body's
        `user` (see the module's doc). `named`: in open mode the body must name someone."""
        identity: Identity | None = request.scope.get("state", {}).get("identity")
        if identity is None:  # open mode (or served without bot.adapters.http.front_door): names are trusted
            if user is None and named:
                raise Invalid("say who you are: user (or use a personal token, or sign in)")
            return parts.service.directory.by_name(user or API)
        if identity == SERVICE:
            if deciding:
                raise Forbidden(USE_A_PERSONAL_TOKEN.format(what="approve or reject"))
            powers = LockEnvironment | UnlockEnvironment | StopDeploys | ResumeDeploys
            if isinstance(commands.parse(text), powers) or commands.deploy_anyway(text) is not None:
                raise Forbidden(USE_A_PERSONAL_TOKEN.format(
                    what="lock or unlock, stop or resume deploys, or deploy anyway"))
            return parts.service.unproven(user) if user else SERVICE
        if user is not None and user != identity.person:
            how = "signed in" if identity.via == SESSION else "using a personal token"
            raise Forbidden(f"you are {identity.label} here ({how}): user must be {identity.label} or left out")
        return identity

    web = FastAPI(title="deploybot", lifespan=lifespan)
    threads = APIRouter(prefix="/threads", dependencies=[Depends(authorized)])

    @web.exception_handler(RedisConnectionError)
    @web.exception_handler(RedisTimeoutError)
    async def unavailable(_: Request, exc: Exception) -> JSONResponse:
        # Not acknowledged, so the sender retries. If it failed after the event was stored
        # (while handing the thread over), a worker's sweep hands the thread over later.
        log.warning("redis unreachable: %s", exc)
        return JSONResponse({"detail": "storage unavailable, retry shortly"}, status_code=503,
                            headers={"Retry-After": "1"})

    @web.exception_handler(Refused)
    async def refused(_: Request, exc: Refused) -> JSONResponse:
        return JSONResponse({"detail": exc.message}, status_code=http_status(exc))

    @web.exception_handler(RequestValidationError)
    async def too_long(request: Request, exc: RequestValidationError) -> Response:
        """A text field over MAX_TEXT_CHARS is a 413 that says so; anything else invalid
        stays FastAPI's 422."""
        for error in exc.errors():
            loc = error.get("loc", ())
            if error.get("type") == "string_too_long" and loc[:1] == ("body",) and loc[-1] in TEXT_FIELDS:
                return JSONResponse(
                    {"detail": f"{loc[-1]} is longer than {MAX_TEXT_CHARS} characters"}, status_code=413
                )
        return await request_validation_exception_handler(request, exc)

    @threads.post("", status_code=201)
    async def launch(request: Request, body: LaunchBody, a: Parts = Depends(the_app)) -> dict[str, Any]:
        who = acting(request, body.user, text=body.message)
        thread = await a.service.launch(body.message, who, channel="api")
        await a.kick(thread.id)
        return {"id": thread.id}

    @threads.get("")
    async def recent(
        status: str | None = None, limit: int = Query(50, ge=1, le=MAX_LIMIT),
        cursor: str | None = Query(None, max_length=500), a: Parts = Depends(the_app),
    ) -> dict:
        """Newest first, a page at a time: `next_cursor` (absent on the last page) is passed
        back as `?cursor=` for the next. With `status`, read from the status index."""
        found, next_cursor = await a.service.page(status, limit, cursor)
        answer: dict[str, Any] = {"threads": [summary_json(t, a.service.clock()) for t in found]}
        if next_cursor:
            answer["next_cursor"] = next_cursor
        return answer

    @threads.get("/{thread_id}.md", response_class=PlainTextResponse)
    async def show_markdown(thread_id: str, a: Parts = Depends(the_app)) -> PlainTextResponse:
        thread = await a.service.get(thread_id)
        text = transcript.markdown(thread, parts.secrets, a.service.clock())
        return PlainTextResponse(text, media_type="text/markdown")

    @threads.get("/{thread_id}")
    async def show(thread_id: str, a: Parts = Depends(the_app)) -> dict[str, Any]:
        return thread_json(await a.service.get(thread_id), a.service.clock())

    @threads.post("/{thread_id}/responses", status_code=202)
    async def respond(request: Request, thread_id: str, body: RespondBody, a: Parts = Depends(the_app)) -> dict:
        who = acting(request, body.user, deciding=body.approve is not None, text=body.text, named=True)
        thread = await a.service.respond(thread_id, body.text, who, body.approval_id, body.approve, channel="api")
        await a.kick(thread.id)
        return thread_json(thread, a.service.clock())

    @threads.post("/{thread_id}/cancel")
    async def cancel(
        request: Request, thread_id: str, body: CancelBody | None = None, a: Parts = Depends(the_app)
    ) -> dict:
        body = body or CancelBody()
        who = acting(request, body.user)
        thread = await a.service.cancel(thread_id, who, body.reason)
        await a.kick(thread.id)  # its run lets go of what it held: a place in line, a timer
        return thread_json(thread, a.service.clock())

    @threads.post("/{thread_id}/fork", status_code=201)
    async def fork(thread_id: str, body: ForkBody, a: Parts = Depends(the_app)) -> dict[str, Any]:
        thread = await a.service.fork(thread_id, body.at)
        await a.kick(thread.id)
        return {"id": thread.id, "forked_from": thread_id, "at": body.at}

    @web.get("/deploys", dependencies=[Depends(authorized)])
    async def deploys(
        environment: str, service: str | None = None, limit: int = Query(20, ge=1, le=MAX_LIMIT),
        cursor: str | None = Query(None, max_length=500), a: Parts = Depends(the_app),
    ) -> dict[str, Any]:
        """Newest first, a page at a time (`next_cursor`, as GET /threads)."""
        if environment not in a.policy.environments:
            raise Invalid(f"unknown environment {environment!r}")
        if service is not None and service not in a.policy.catalog.services:
            raise Invalid(wording.unknown_service(service, a.policy.catalog.names))
        try:
            records, next_cursor = await a.history.page(environment, limit, cursor, service=service)
        except ValueError:
            raise Invalid(wording.bad_cursor()) from None
        held = await a.locks.held(environment, [service] if service else a.policy.catalog.names)
        holder = next((lock for lock in held if not lock.service), None)
        answer = {
            "environment": environment,
            "lock": _lock_json(holder) if holder else None,  # on the whole environment
            "locks": [_lock_json(lock) for lock in held],  # that one, then each service's
            "deploys": [_record_json(r) for r in records],
        }
        if next_cursor:
            answer["next_cursor"] = next_cursor
        return answer

    @web.post("/deploys/rollback", status_code=201, dependencies=[Depends(authorized)])
    async def rollback(request: Request, body: RollbackBody, a: Parts = Depends(the_app)) -> dict[str, Any]:
        """Starts a thread that rolls the service back, as if the person had asked in chat:
        the same rules (approval, locks, the re-check) apply; the thread says what it found."""
        if body.environment not in a.policy.environments:
            raise Invalid(wording.unknown_environment(body.environment, a.policy.environments))
        service = a.policy.catalog.find(body.service) or body.service  # as chat: `API` is api
        invalid = a.policy.catalog.invalid(service, body.environment)
        if invalid:
            raise Invalid(invalid)
        text = commands.rollback_text(service, body.environment)
        who = acting(request, body.user, text=text)
        thread = await a.service.launch(text, who, channel="api")
        await a.kick(thread.id)
        return {"id": thread.id}

    @web.get("/healthz")
    async def healthz(a: Parts = Depends(the_app)) -> JSONResponse:
        try:
            await a.health.ping()
        except Exception as e:  # any failure to reach Redis makes us unhealthy, not crash
            return JSONResponse({"ok": False, "redis": f"unreachable: {e}"}, status_code=503)
        return JSONResponse({"ok": True, "redis": "ok", "llm": "configured" if a.llm_configured else "none"})

    web.include_router(threads)
    if parts.slack_endpoint:
        web.add_api_route("/slack/events", parts.slack_endpoint, methods=["POST"])
    if parts.email_endpoint:
        web.add_api_route("/email/inbound", parts.email_endpoint, methods=["POST"])
    if parts.github_endpoint:
        web.add_api_route("/github/webhook", parts.github_endpoint, methods=["POST"])
    pages = mount_console(web, parts, sign_in)  # the web console: /console/ (and GET / -> there)
    if sign_in is not None:
        web.include_router(auth_routes(sign_in, pages))
    return web


# --- signing in ------------------------------------------------------------------------------


async def _posted_code(request: Request, as_json: bool) -> str:
    """The `code` a sign-in POST carries (JSON or a form); "" when there is none."""
    body = await request.body()
    fields: Any
    try:
        fields = json.loads(body) if as_json else dict(parse_qsl(body.decode(), max_num_fields=5))
    except (ValueError, UnicodeDecodeError):
        return ""
    code = fields.get("code") if isinstance(fields, dict) else None
    return code if isinstance(code, str) else ""


def _lock_json(lock: Lock) -> dict[str, Any]:
    return {**asdict(lock), "since": lock.since.isoformat()}


def _record_json(record: DeployRecord) -> dict[str, Any]:
    return {k: v.isoformat() if isinstance(v, datetime) else v for k, v in asdict(record).items()}


NO_STORE = {"Cache-Control": "no-store", "Referrer-Policy": "no-referrer"}
LINK_FROM_ELSEWHERE = (
    "a sign-in link is used by the form its own page shows (GET the link in a browser), "
    "or by POSTing its code as JSON"
)
Pages = Callable[..., HTMLResponse]  # (template, status, **context) -> a console-styled page


def auth_routes(sign_in: SignIn, pages: Pages) -> APIRouter:
    """/auth: a sign-in link sets a session cookie; the cookie then stands for its person
    (bot.adapters.http.front_door), with a CSRF token for anything that changes something.

    A link is used only by a POST: a GET (a person's browser, but also a mail scanner or a
    chat unfurl) shows "Sign in as NAME" with a form, so whatever fetches links burns
    nothing, and another site cannot sign a browser in as someone else (its form's POST
    carries a foreign Origin, refused by the front door, or none: refused here)."""
    router = APIRouter(prefix="/auth")

    def secure(request: Request) -> bool:
        return sign_in.secure_cookies or request.url.scheme == "https"

    @router.get("/link")
    async def link_page(request: Request) -> Response:
        """The link's page: a form that signs in as its person, or why it cannot."""
        code = request.query_params.get("code", "")
        person = await sign_in.link_person(code) if len(code) <= MAX_CODE else None
        if person is None:
            return pages("link.html", 400, person=None, code="")
        return pages("link.html", 200, person=person, code=code)

    @router.post("/link")
    async def use_link(request: Request) -> Response:
        """Use a one-time sign-in link (it works once, for 10 minutes): sets the session cookie.
        JSON `{"code": ...}` answers who signed in; the link page's form goes on to the console."""
        as_json = request.headers.get("content-type", "").partition(";")[0].strip().lower() == "application/json"
        if not as_json and request.scope.get("state", {}).get("same_origin") is not True:
            return JSONResponse({"detail": LINK_FROM_ELSEWHERE}, status_code=403, headers=NO_STORE)
        code = await _posted_code(request, as_json)
        signed = await sign_in.sign_in(code) if len(code) <= MAX_CODE else None
        if signed is None:
            if not as_json:
                return pages("link.html", 400, person=None, code="")
            return JSONResponse({"detail": SIGN_IN_FAILED}, status_code=400, headers=NO_STORE)
        session, cookie = signed
        until = datetime.fromtimestamp(session.expires, UTC).isoformat()
        response: Response
        if as_json:
            response = JSONResponse({"person": session.person, "expires": until})
        else:  # a person pressing the button: on to the web console
            response = RedirectResponse("/console/", status_code=303)
        response.headers.update(NO_STORE)
        response.set_cookie(
            SESSION_COOKIE, cookie, max_age=sign_in.session_ttl, path="/", httponly=True, samesite="lax",
            secure=secure(request),
        )
        return response

    @router.post("/email-link", status_code=202)
    async def email_link(body: EmailLinkBody, background: BackgroundTasks) -> dict[str, str]:
        """Mail a sign-in link to this address if it is someone's. The answer is the same
        either way (and comes before anything is looked up)."""
        if isinstance(body.email, str):  # anything else is answered the same, and mails nothing
            background.add_task(sign_in.email_link, body.email)
        return {"detail": EMAIL_LINK_SENT}

    @router.get("/session")
    async def current(request: Request) -> JSONResponse:
        """Who you are signed in as; with a session cookie, the X-CSRF-Token that requests
        changing anything must carry."""
        state = request.scope.get("state", {})
        identity: Identity | None = state.get("identity")
        if identity is None or not identity.known:
            return JSONResponse({"detail": "not signed in"}, status_code=401, headers=NO_STORE)
        answer: dict[str, Any] = {"person": identity.person, "via": identity.via}
        session = state.get("session")
        if session is not None:
            answer["expires"] = datetime.fromtimestamp(session.expires, UTC).isoformat()
            answer["csrf_token"] = sign_in.csrf(session)
        return JSONResponse(answer, headers=NO_STORE)

    @router.post("/sign-out")
    async def sign_out(request: Request) -> JSONResponse:
        """End this session (its cookie stops working, here and wherever it was copied)."""
        session = request.scope.get("state", {}).get("session")
        if session is not None:
            await sign_in.sign_out(session)
        response = JSONResponse({"signed_out": session is not None}, headers=NO_STORE)
        response.delete_cookie(SESSION_COOKIE, path="/", httponly=True, samesite="lax", secure=secure(request))
        return response

    return router
