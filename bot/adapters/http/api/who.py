"""Who an API request acts as, and the dependencies every API route shares.

Who is asking was settled before the body was read (bot.adapters.http.front_door puts it in
`scope["state"]["identity"]`); here it meets the body's `user`:
- a person (a personal API token, a signed-in session): they act as themselves; a `user`
  naming anyone else is a 403;
- the service identity (the shared API_TOKEN; or, in local mode with people configured, a
  request without credentials): its `user` is kept only as an unverified label (via "api")
  for a pipeline or a bot, and a `user` naming a person of deploybot.toml is a 403 ("use
  your personal token"). What it may do is the authority's (bot/core/authority.py): a
  command that takes a person's powers is refused here, before a thread is started for it
  or it is recorded in one, with the answer the command itself would get;
- None (open mode: nothing configured): the `user` given is trusted, as before.
"""

from __future__ import annotations

import hmac

from fastapi import Request

from bot.adapters.http.shared import Parts, SignIn
from bot.core import authority
from bot.core.people import API, SERVICE, SESSION, Identity
from bot.runtime.service import Forbidden, Invalid, Unauthorized

MAX_LIMIT = 200  # ?limit= on /threads and /deploys


# The dependencies are async on purpose: FastAPI runs a plain `def` dependency in its thread
# pool, a hop to another thread and back on every request.
async def the_parts(request: Request) -> Parts:
    """The app's parts (create_app keeps them in the app's state): a dependency of every route."""
    return request.app.state.parts  # type: ignore[no-any-return]


async def the_sign_in(request: Request) -> SignIn:
    """Signing in (only the apps built with it serve /auth)."""
    return request.app.state.sign_in  # type: ignore[no-any-return]


async def authorized(request: Request) -> None:
    # The check that counts runs earlier, in bot.adapters.http.front_door, before a body is read
    # (FastAPI reads and parses the body before it solves dependencies); this one stays
    # so a route is never open because the app was served without that wrapper. The header
    # is read here, not declared as a Header parameter: FastAPI would validate it on every
    # request of every route only for this fallback.
    if "identity" in request.scope.get("state", {}):
        return  # bot.adapters.http.front_door checked it
    token = (await the_parts(request)).api_token
    authorization = request.headers.get("authorization", "")
    if token and not hmac.compare_digest(authorization.encode(), f"Bearer {token}".encode()):
        raise Unauthorized("missing or wrong bearer token (Authorization: Bearer <API_TOKEN>)")


def acting(request: Request, parts: Parts, user: str | None, text: str = "", named: bool = False) -> Identity:
    """Who this request acts as: the identity the front door found, and the body's
    `user` (see the module's doc). `named`: in open mode the body must name someone.
    `text`: what it says, refused here if it is a command that takes powers they lack."""
    identity: Identity | None = request.scope.get("state", {}).get("identity")
    if identity is None:  # open mode (or served without bot.adapters.http.front_door): names are trusted
        if user is None and named:
            raise Invalid("say who you are: user (or use a personal token, or sign in)")
        return parts.service.directory.by_name(user or API)
    if identity == SERVICE:
        identity = parts.service.unproven(user) if user else SERVICE
    elif user is not None and user != identity.person:
        how = "signed in" if identity.via == SESSION else "using a personal token"
        raise Forbidden(f"you are {identity.label} here ({how}): user must be {identity.label} or left out")
    refused = authority.why_not_say(parts.service.policy, identity, text) if text else None
    if refused:
        raise Forbidden(refused)
    return identity
