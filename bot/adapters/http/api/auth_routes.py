"""/auth: a sign-in link sets a session cookie; the cookie then stands for its person
(bot.adapters.http.front_door), with a CSRF token for anything that changes something.

A link is used only by a POST: a GET (a person's browser, but also a mail scanner or a
chat unfurl) shows "Sign in as NAME" with a form, so whatever fetches links burns
nothing, and another site cannot sign a browser in as someone else (its form's POST
carries a foreign Origin, refused by the front door, or none: refused here)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any
from urllib.parse import parse_qsl

from fastapi import APIRouter, Depends, Request
from fastapi.background import BackgroundTasks
from fastapi.responses import JSONResponse, RedirectResponse, Response
from pydantic import BaseModel

from bot.adapters.http.api import json_text
from bot.adapters.http.api.who import the_sign_in
from bot.adapters.http.console.routes import standalone
from bot.adapters.http.shared import (
    CONSOLE_PREFIX,
    RETURN_COOKIE,
    SESSION_COOKIE,
    Session,
    SignIn,
    console_path,
    secure_cookies,
)
from bot.core.people import Identity

SIGN_IN_FAILED = (
    "this sign-in link was already used or has expired (links work once, for 10 minutes): ask for a "
    "new one (`@deploybot login` in Slack, or `python -m bot login-link NAME`)"
)
MAX_CODE = 200  # a sign-in link's code is 43 characters; anything much longer is nobody's
EMAIL_LINK_SENT = "if that address belongs to someone deploybot knows, a sign-in link is on its way"
NO_STORE = {"Cache-Control": "no-store", "Referrer-Policy": "no-referrer"}
LINK_FROM_ELSEWHERE = (
    "a sign-in link is used by the form its own page shows (GET the link in a browser), "
    "or by POSTing its code as JSON"
)


class EmailLinkBody(BaseModel):
    # Any value: one that is not exactly one bare address is answered like an unknown one
    # (bot.adapters.http.auth.Auth.email_link), so a list or a display name tells nothing either.
    email: Any


router = APIRouter(prefix="/auth", dependencies=[Depends(json_text.checked)])


@router.get("/link")
async def link_page(request: Request, sign_in: SignIn = Depends(the_sign_in)) -> Response:
    """The link's page: a form that signs in as its person, or why it cannot."""
    code = request.query_params.get("code", "")
    person = await sign_in.link_person(code) if len(code) <= MAX_CODE else None
    if person is None:
        return standalone("link.html", 400, person=None, code="", **_ways(sign_in))
    return standalone("link.html", 200, person=person, code=code)


def _ways(sign_in: SignIn) -> dict[str, bool]:
    """The ways to get a new link that work here: the page offers only those."""
    return {"can_mail_links": sign_in.mails_links, "slack_login": sign_in.slack_login}


@router.post("/link")
async def use_link(request: Request, sign_in: SignIn = Depends(the_sign_in)) -> Response:
    """Use a one-time sign-in link (it works once, for 10 minutes): sets the session cookie.
    JSON `{"code": ...}` answers who signed in; the link page's form goes on to the console."""
    as_json = request.headers.get("content-type", "").partition(";")[0].strip().lower() == "application/json"
    if not as_json and request.scope.get("state", {}).get("same_origin") is not True:
        return JSONResponse({"detail": LINK_FROM_ELSEWHERE}, status_code=403, headers=NO_STORE)
    code = await posted_code(request, as_json)
    signed = await sign_in.sign_in(code) if len(code) <= MAX_CODE else None
    if signed is None:
        if not as_json:
            return standalone("link.html", 400, person=None, code="", **_ways(sign_in))
        return JSONResponse({"detail": SIGN_IN_FAILED}, status_code=400, headers=NO_STORE)
    response = _signed_in(signed[0], as_json, console_path(request.cookies.get(RETURN_COOKIE)))
    response.set_cookie(
        SESSION_COOKIE, signed[1], max_age=sign_in.session_ttl, path="/", httponly=True, samesite="lax",
        secure=secure_cookies(sign_in, request),
    )
    return response


def _signed_in(session: Session, as_json: bool, asked: str | None) -> Response:
    """JSON: who signed in, until when; a person pressing the button: on to the console page
    this browser asked for before it was signed in (`asked`), else the console's front page."""
    response: Response
    if as_json:
        until = datetime.fromtimestamp(session.expires, UTC).isoformat()
        response = JSONResponse({"person": session.person, "expires": until})
    else:
        response = RedirectResponse(asked or CONSOLE_PREFIX + "/", status_code=303)
        response.delete_cookie(RETURN_COOKIE, path="/", httponly=True, samesite="lax")
    response.headers.update(NO_STORE)
    return response


@router.post("/email-link", status_code=202)
async def email_link(
    body: EmailLinkBody, background: BackgroundTasks, sign_in: SignIn = Depends(the_sign_in)
) -> dict[str, str]:
    """Mail a sign-in link to this address if it is someone's. The answer is the same
    either way (and comes before anything is looked up)."""
    if isinstance(body.email, str):  # anything else is answered the same, and mails nothing
        background.add_task(sign_in.email_link, body.email)
    return {"detail": EMAIL_LINK_SENT}


@router.get("/session")
async def current(request: Request, sign_in: SignIn = Depends(the_sign_in)) -> JSONResponse:
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
async def sign_out(request: Request, sign_in: SignIn = Depends(the_sign_in)) -> JSONResponse:
    """End this session (its cookie stops working, here and wherever it was copied)."""
    session = request.scope.get("state", {}).get("session")
    if session is not None:
        await sign_in.sign_out(session)
    response = JSONResponse({"signed_out": session is not None}, headers=NO_STORE)
    response.delete_cookie(SESSION_COOKIE, path="/", httponly=True, samesite="lax",
                           secure=secure_cookies(sign_in, request))
    return response


async def posted_code(request: Request, as_json: bool) -> str:
    """The `code` a sign-in POST carries (JSON or a form); "" when there is none."""
    body = await request.body()
    fields: Any
    try:
        fields = json.loads(body) if as_json else dict(parse_qsl(body.decode(), max_num_fields=5))
    except (ValueError, UnicodeDecodeError):
        return ""
    code = fields.get("code") if isinstance(fields, dict) else None
    return code if isinstance(code, str) else ""
