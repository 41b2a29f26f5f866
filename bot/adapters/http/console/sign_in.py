"""The console's sign-in form (mail me a link) and Sign out. Using a link is /auth's
(bot/adapters/http/auth_routes.py)."""

from __future__ import annotations

from urllib.parse import parse_qsl

from fastapi import APIRouter, Request
from fastapi.background import BackgroundTasks
from fastapi.responses import RedirectResponse, Response

from bot.adapters.http.auth import LINK_EVERY
from bot.adapters.http.console.forms import back
from bot.adapters.http.console.routes import PREFIX, Console
from bot.adapters.http.shared import MAX_ADDRESS, SESSION_COOKIE, secure_cookies

LINK_ASKED_COOKIE = "deploybot_link_asked"  # this browser asked for a link less than LINK_EVERY ago


def router(console: Console) -> APIRouter:
    r = APIRouter(include_in_schema=False)
    r.post(PREFIX + "/sign-in")(console.route(mail_link))
    r.post(PREFIX + "/sign-out")(console.route(sign_out))
    return r


async def mail_link(console: Console, request: Request, background: BackgroundTasks) -> Response:
    """Mail a sign-in link (the same answer whoever's address it is)."""
    body = (await request.body()).decode("utf-8", "replace")
    fields = dict(parse_qsl(body, keep_blank_values=True, max_num_fields=5))
    address = fields.get("email", "")
    if console.sign_in is not None and len(address) <= MAX_ADDRESS:  # not a bare address: mails nothing
        background.add_task(console.sign_in.email_link, address)
    # Asked again from this browser within the minute a person gets one link: say so (it tells
    # nothing of whose address it is: the mark is this browser's, set whatever was typed).
    again = LINK_ASKED_COOKIE in request.cookies
    response = back({}, PREFIX + "/", "link-recent" if again else "link")
    response.set_cookie(LINK_ASKED_COOKIE, "1", max_age=LINK_EVERY, path=PREFIX, httponly=True,
                        samesite="lax", secure=secure_cookies(console.sign_in, request))
    return response


async def sign_out(console: Console, request: Request) -> Response:
    who = console.viewer(request)
    await console.form(request, who)
    if who.session is not None and console.sign_in is not None:
        await console.sign_in.sign_out(who.session)
    response = RedirectResponse(PREFIX + "/", status_code=303)
    response.delete_cookie(SESSION_COOKIE, path="/", httponly=True, samesite="lax",
                           secure=secure_cookies(console.sign_in, request))
    return response
