"""The HTTP front door: what a request must pass before the app reads a byte of its body.

`HttpLimits`, a pure ASGI middleware around the whole app (the root wraps `api.create_app` in
it), composes one check of each module, in this order:

- origins.py: the `Host` header must name the bot itself, in every mode (local too), else
  400; a request that changes anything and comes from another origin's page is a 403, but on
  the paths that authenticate themselves by a signature (Slack, GitHub, inbound email), which
  servers call and no browser's cookies reach;
- auth.py: who is asking (`Auth.identify`: the shared token, a personal token, a session
  cookie with its CSRF token), on every path but the public ones (limits.py's table: health,
  and the Slack, GitHub and email endpoints, which authenticate themselves); /auth and the web
  console (/console) take credentials when given but ask for none (the console's pages show
  ANONYMOUS how to sign in, and its forms carry the session's CSRF token in a field the
  console checks: Limit.csrf "page"). The identity goes to the app in
  `scope["state"]["identity"]` (None: open mode), the session in `scope["state"]["session"]`;
- limits.py: the body limit of the path, by Content-Length before anything is read and by
  counting a streamed body.

Refusals say why in JSON (`{"detail": ...}`, like the app's own) and close the connection,
so a client still sending a huge body is not read to the end. Signed sessions are
sessions.py's; the filter that keeps secrets out of the logs is logs.py's.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence

from starlette.datastructures import Headers
from starlette.types import ASGIApp, Receive, Scope, Send

from bot.adapters.http.auth import Auth, Seen
from bot.adapters.http.limits import (
    API_MAX_BYTES,
    Counted,
    Limit,
    body_expected,
    declared_too_large,
    deploybot_limits,
    refuse,
)
from bot.adapters.http.origins import foreign, own_hosts
from bot.adapters.http.shared import Refusal

log = logging.getLogger(__name__)

UNAVAILABLE = "storage unavailable, retry shortly"
# What a refusal says besides why: how to authenticate (401), when to retry (503).
HEADERS = {401: {"WWW-Authenticate": "Bearer"}, 503: {"Retry-After": "1"}}


class HttpLimits:
    """The middleware: `HttpLimits(create_app(parts), Auth(api_token, ...), email_max_bytes)`.
    `limits` replaces the table from `deploybot_limits`; any other path takes credentials
    and `default_max_bytes`."""

    def __init__(
        self,
        app: ASGIApp,
        auth: Auth,
        email_max_bytes: int | None = None,
        limits: Sequence[Limit] | None = None,
        default_max_bytes: int = API_MAX_BYTES,
        hosts: Iterable[str] = (),
    ) -> None:
        """`hosts`: names to answer to besides loopback (own_hosts: PUBLIC_URL's host, ALLOWED_HOSTS)."""
        self.app = app
        self.auth = auth
        self.hosts = own_hosts(hosts)
        self.limits = tuple(deploybot_limits(email_max_bytes) if limits is None else limits)
        self.default = Limit("/", default_max_bytes)

    def limit(self, path: str) -> Limit:
        return next((rule for rule in self.limits if rule.covers(path)), self.default)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":  # lifespan (and websockets, which we do not serve)
            await self.app(scope, receive, send)
            return
        rule = self.limit(scope["path"])
        headers = Headers(scope=scope)
        refusal = foreign(scope, headers, self.hosts, checks_origin=rule.auth != "none")
        if refusal is None and rule.auth != "none":
            refusal = await self.identify(scope, rule)
        refusal = refusal or declared_too_large(scope, headers, rule.max_bytes)
        if refusal is not None:
            await refuse(scope, receive, send, refusal.status, refusal.detail, HEADERS.get(refusal.status))
            return
        await Counted(self.app, rule.max_bytes, body_expected(headers))(scope, receive, send)

    async def identify(self, scope: Scope, rule: Limit) -> Refusal | None:
        """Who is asking, into the request's state for the app; or why not."""
        try:
            seen = await self.auth.identify(scope, required=rule.auth == "required", csrf_header=rule.csrf == "header")
        except Exception as e:  # Redis unreachable while checking a token or a session
            log.warning("http: could not check credentials: %s", e)
            return Refusal(503, UNAVAILABLE)
        if isinstance(seen, Refusal):
            return seen
        _remember(scope, seen)
        return None


def _remember(scope: Scope, seen: Seen) -> None:
    state = scope.setdefault("state", {})
    state["identity"], state["session"] = seen.identity, seen.session
