"""What every route of the web console shares: its constants, the viewer, the templates, and
`Console`, the per-app context each page's router is built with (console/board.py,
approvals.py, threads.py, thread.py, environments.py, deploys.py, sign_in.py, live.py,
static.py). Server-rendered pages under /console/, forms that POST back with a CSRF token,
and a Server-Sent Events stream that says when a page's content changed.

Every action goes through what the JSON API uses: ThreadService (respond, decide, cancel,
fork; its policy decides who may approve) and, for Lock and Unlock (of an environment, or of
one service there), Stop and Resume deploys (stop-the-line, for one environment or all) and
Roll back, the same chat command a person would send, carried out by a worker that asks the
policy again (a rollback is a deploy: approval and locks apply in its thread). Deploy anyway
is "deploy anyway: REASON" said in the blocked deploy's thread, as the person. The console
only asks the policy first so it can hide a button and refuse a forged form with a 403.
"""

from __future__ import annotations

import functools
import getpass
import inspect
import secrets
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import jinja2
import markupsafe
from fastapi import Request
from fastapi.responses import HTMLResponse, Response

from bot.adapters.http.console import mine, model
from bot.adapters.http.console.forms import PREFIX, Page, browser_id, csrf_token, read_form, refusal_page
from bot.adapters.http.console.reader import Reader
from bot.adapters.http.console.streams import Streams
from bot.adapters.http.shared import (
    BROWSER_COOKIE,
    RETURN_COOKIE,
    RETURN_FOR,
    Parts,
    SignIn,
    console_path,
    secure_cookies,
)
from bot.core import authority, wording
from bot.core.characters import visible
from bot.core.code_links import CodeLinks
from bot.core.people import ANONYMOUS, SERVICE, Identity, shown
from bot.core.thread import Thread
from bot.runtime.ports import DeployRecord
from bot.runtime.service import Forbidden, Invalid, Refused

__all__ = ["HEADERS", "PREFIX", "Console", "Page", "Viewer", "standalone", "templates"]

MAX_REASON_CHARS = 500
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
    "rejected": wording.rejected_notice(gave_feedback=True, model=True),
    "rejected-no-feedback": wording.rejected_notice(gave_feedback=False, model=True),
    "rejected-no-model": wording.rejected_notice(gave_feedback=False, model=False),
    "lock": "Lock asked for: it shows here once it is set.",
    "unlock": "Unlock asked for: it shows here once the lock is lifted.",
    "rollback": "Rollback asked for: this thread finds what to put back, and asks for approval where it must.",
    "promote": "Promotion asked for: this thread finds the newest commit that passed the environment before, "
               "and asks for approval where it must.",
    "approved-partly": "Approved: the deploy starts once enough other approvers have approved too.",
    "stop": "Stop asked for: the freeze shows here once deploys are stopped.",
    "resume": "Resume asked for: the freeze is gone from here once deploys may start again.",
    "anyway": "Deploy anyway asked for: this thread goes on past what stopped the deploy (approval still applies).",
    "sent": "Sent.",
    "cancelled": "Cancelled.",
    "resumed": "Handed to a worker.",
    "forked": "Forked: this is the new thread.",
    "link": "If that address belongs to someone deploybot knows, a sign-in link is on its way.",
    "link-recent": "A link was asked for from this browser less than a minute ago: give it a minute to arrive "
                   "(and look in the spam folder). Each address gets at most one link a minute.",
    "deploy": "Deploy asked for: this thread checks the tag and asks for approval where it must.",
    "verify": "Verify now asked for: the checks run at once; the bake ends only if every one holds.",
    "skipped": "Skip verification asked for: the bake ends, recorded with your reason.",
}


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
    start_refused: str | None = None  # why the authority lets this viewer start no thread; None: it does

    @property
    def label(self) -> str:
        return self.identity.label

    @property
    def is_service(self) -> bool:
        return self.identity == SERVICE

    @property
    def may_start(self) -> bool:
        """Whether this viewer may start threads here (ask for a deploy, a rollback): the
        authority's answer, as on every channel."""
        return self.start_refused is None

    def starts(self) -> None:
        """Refuse, with the authority's sentence, a viewer who may start no thread."""
        if self.start_refused is not None:
            raise Forbidden(self.start_refused)


def _local_user() -> str:
    try:
        return getpass.getuser()
    except Exception:  # no user name in a bare container
        return "local"


def templates() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("bot.adapters.http.console", "templates"),
        autoescape=True,  # every value printed is escaped, whatever the file's name
        finalize=_shown,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["when"] = lambda d: d.strftime("%Y-%m-%d %H:%M:%S UTC") if d else ""
    env.filters["iso"] = lambda d: d.isoformat() if d else ""
    env.filters["short"] = lambda s, n=7: (s or "")[:n]
    env.globals.update(ago=model.ago, left=model.left, change_lines=wording.change_lines,
                       expired_in_place=wording.expired_in_place)
    env.globals.update(shown=shown, confirm_rollback=wording.confirm_rollback, confirm_cancel=wording.confirm_cancel,
                       confirm_promote=wording.confirm_promote,
                       confirm_stop=wording.confirm_stop, confirm_take=wording.confirm_take,
                       verified_on_record=wording.verified_on_record, skipped_on_record=wording.skipped_on_record,
                       menu=wording.menu, matrix_scrolls=wording.matrix_scrolls)
    return env


def _shown(value: Any) -> Any:
    """Every value a template prints, without format characters (bot.core.characters): a
    U+202E in a reason would show the rest of its line reversed. Markup (a macro's output)
    stays markup."""
    if isinstance(value, markupsafe.Markup):
        return markupsafe.Markup(visible(str(value)))
    return visible(value) if isinstance(value, str) else value


@functools.cache
def _pages() -> jinja2.Environment:
    return templates()


def standalone(name: str, status: int, **context: Any) -> HTMLResponse:
    """A template of the console's, for nobody in particular (no viewer, no navigation)."""
    body = _pages().get_template(name).render(
        **{"viewer": None, "notice": None, "path": "", "prefix": PREFIX, "can_mail_links": False,
           "slack_login": False, **context}
    )
    return HTMLResponse(body, status_code=status, headers=HEADERS)


Handler = Callable[..., Awaitable[Response]]  # (console, request, path parameters...) -> a response


class Console:
    """One app's console: what its routes read (the service, the policy, the stores), who is
    asking (`viewer`), and how a page is answered (`render`, `page`). Each page's router is
    built from one (`route` binds a handler to it)."""

    def __init__(self, parts: Parts, sign_in: SignIn | None) -> None:
        self.parts, self.sign_in = parts, sign_in
        self.policy, self.service = parts.policy, parts.service
        self.freezes = parts.freezes  # stop-the-line: the store the deploy path checks
        self.reader = Reader(parts.service.store, parts.locks, parts.history, parts.policy, freezes=self.freezes,
                             now=self.service.clock)
        self.streams = Streams(*parts.stream_limits)
        self.words = model.Words()
        self.pages = templates()
        self.local_user = _local_user()
        self.key = secrets.token_bytes(32)  # CSRF without sign-in support (an app built without /auth)

    # --- who is asking ------------------------------------------------------------------------

    def csrf_for(self, session: Any | None, request: Request) -> str:
        if session is None:  # this browser's own, from its cookie
            state = request.scope.setdefault("state", {})
            session = _NoSession(f"browser:{browser_id(request.cookies.get(BROWSER_COOKIE, ''), state)}")
        if self.sign_in is not None:
            return self.sign_in.csrf(session)
        return csrf_token(self.key, session.id)

    def viewer(self, request: Request) -> Viewer:
        state = request.scope.get("state", {})
        if "identity" not in state and self.parts.api_token:  # served without the front door: nobody checked
            raise Page(401, "Sign in", "")
        identity: Identity | None = state.get("identity")
        if identity == ANONYMOUS:
            raise Page(401, "Sign in", "")
        if identity is None:  # open mode: nothing configured, names are trusted
            identity = self.service.directory.by_name(self.local_user if not self.parts.api_token else "api")
        session = state.get("session")
        refused = authority.why_not(self.policy, identity, authority.Start())
        return Viewer(identity, session, self.csrf_for(session, request), self.policy.open_mode, refused)

    async def form(self, request: Request, who: Viewer) -> dict[str, str]:
        """The posted form, once its CSRF token is the viewer's (else a 403 page)."""
        return read_form(await request.body(), who.csrf)

    # --- answering ------------------------------------------------------------------------------

    def render(self, request: Request, name: str, code: int = 200, **context: Any) -> HTMLResponse:
        try:
            who: Viewer | None = self.viewer(request)
        except Page:
            who = None
        notice = NOTICES.get(request.query_params.get("notice", ""))
        body = self.pages.get_template(name).render(
            viewer=who, notice=notice, path=request.url.path, now=self.service.clock(), prefix=PREFIX,
            can_mail_links=self.sign_in is not None and self.sign_in.mails_links,
            slack_login=self.sign_in is not None and self.sign_in.slack_login,
            waiting_for_you=request.scope.get("state", {}).get("waiting_for_you", 0),
            model_configured=self.parts.llm_configured, code_links=self.code_links, **context,
        )
        response = HTMLResponse(body, status_code=code, headers=HEADERS)
        new_browser = request.scope.get("state", {}).get("new_browser")
        if new_browser:
            response.set_cookie(BROWSER_COOKIE, new_browser, path=PREFIX, httponly=True, samesite="lax",
                                secure=secure_cookies(self.sign_in, request))
        return response

    def code_links(self, service: str) -> CodeLinks:
        """Where the service's tags and commits are on its code host (none for a service unknown now)."""
        found = self.policy.catalog.services.get(service)
        return found.links if found is not None else CodeLinks()

    def page(self, request: Request, error: Page) -> HTMLResponse:
        if error.status == 401:
            response = self.render(request, "sign_in.html", 401)
            self.remember_page(request, response)
            return response
        return self.render(request, "error.html", error.status, title=error.title, detail=error.detail)

    def remember_page(self, request: Request, response: Response) -> None:
        """The page a signed-out browser asked for, so that signing in goes back to it (a link
        opened in another browser opens the console's front page)."""
        query = request.url.query
        asked = console_path(request.url.path + (f"?{query}" if query else ""))
        if request.method == "GET" and asked is not None:
            response.set_cookie(RETURN_COOKIE, asked, max_age=RETURN_FOR, path="/", httponly=True,
                                samesite="lax", secure=secure_cookies(self.sign_in, request))

    def route(self, handler: Handler, counted: bool = True) -> Handler:
        """`handler` as an endpoint of this console: called with it, and a refusal or a bad
        parameter turned into its page, never a 500 or JSON. FastAPI reads the handler's own
        parameters, but the first (the console). `counted`: a page (GET) that says how many
        approvals wait for the viewer (not a stream, not an export)."""

        async def run(request: Request, **params: Any) -> Response:
            try:
                if counted and request.method == "GET":
                    await self.count_mine(request)
                return await handler(self, request, **params)
            except Page as e:
                return self.page(request, e)
            except Refused as e:
                return self.page(request, refusal_page(e))

        signature = inspect.signature(handler, eval_str=True)  # its module's names, resolved there
        run.__signature__ = signature.replace(  # type: ignore[attr-defined]
            parameters=list(signature.parameters.values())[1:])
        run.__name__, run.__doc__ = handler.__name__, handler.__doc__
        return run

    async def count_mine(self, request: Request) -> None:
        """How many approvals the viewer may decide now, for `render` (the banner and the
        title): nothing for the shared token, which decides nothing, or for a stranger."""
        try:
            who = self.viewer(request)
        except Page:
            return
        if who.is_service:
            return
        n = await mine.waiting_for(self.reader, who.identity, self.policy, self.service.clock())
        request.scope.setdefault("state", {})["waiting_for_you"] = n

    # --- what the pages look up -----------------------------------------------------------------

    def known_environment(self, name: str) -> str:
        if name not in self.policy.environments:
            raise Page(404, "Not found", f"there is no environment {name!r}")
        return name

    def known_service(self, name: str, environment: str) -> str:
        if name not in self.policy.catalog.services:
            raise Page(404, "Not found", wording.unknown_service(name, self.policy.catalog.names))
        why = self.policy.catalog.invalid(name, environment)
        if why:
            raise Invalid(why)
        return name

    async def asked_by(self, records: list[DeployRecord]) -> dict[str, str]:
        """Who asked for each deploy (by deploy id), from its thread, else its record."""
        ids = list(dict.fromkeys(r.thread_id for r in records))
        threads = {t.id: t for t in await self.reader.threads(ids)}
        return {r.deploy_id: model.audit(r, threads.get(r.thread_id)).asked_by for r in records}

    async def launch(self, said: str, who: Viewer) -> Thread:
        """A new thread for what `who` said (a chat command), handed to a worker."""
        return await self.service.launch(said, who.identity, channel="console", handoff=self.parts.queue)
