"""The HTTP front door: what a request must pass before the app reads a byte of its body.

A pure ASGI middleware around the whole app (the root wraps `web.create_app` in it):

- a body limit per path: a Content-Length above it is a 413 before anything is read, and a
  body without one (chunked) is counted while it streams: 413 as soon as the count passes
  the limit, so no more than the limit is ever held;
- who is asking, before the body is read (`Auth.identify`): on every path but the public
  ones (health, and the Slack, GitHub and email endpoints, which authenticate themselves) one of
  - `Authorization: Bearer <API_TOKEN>` (compared in constant time): the bot's service
    identity (`SERVICE`), which may start threads, read and write free text, never decide;
  - `Authorization: Bearer dbt_...`: a personal API token (bot/adapters/redis/credentials.py), that
    token's person, via "token";
  - the session cookie a sign-in link set (`Sessions`): that person, via "session"; a
    request that changes anything (not GET/HEAD/OPTIONS) must also carry the session's
    `X-CSRF-Token` (GET /auth/session gives it), or it is a 403;
  and nothing else: 401, so an unauthenticated request is never parsed. Without API_TOKEN
  (local mode, bound to 127.0.0.1) a request without credentials is let in as before.
  The identity goes to the app in `scope["state"]["identity"]`: an Identity, or None for
  "open": nothing configured (open mode), where the names the API is given are trusted.
  /auth (signing in) takes credentials when given but asks for none.
  So does the web console (/console), whose pages show ANONYMOUS how to sign in, and whose
  HTML forms carry the session's CSRF token in a field the console checks (Limit.csrf).

Refusals say why in JSON (`{"detail": ...}`, like the app's own) and close the connection,
so a client still sending a huge body is not read to the end.

Before any of that, in every mode (local too): the `Host` header must name the bot itself
(loopback, PUBLIC_URL's host, ALLOWED_HOSTS), else 400, so a page on a name that resolves to
127.0.0.1 (DNS rebinding) is not answered; and a request that changes anything and carries an
`Origin` (or, without one, a `Referer`) of another origin is a 403 (cross-site request forgery),
but on the paths that authenticate themselves by a signature (Slack, GitHub, inbound email),
which servers call and no browser's cookies reach. Whether a request named its own origin goes
to the app in `scope["state"]["same_origin"]` (the sign-in form needs it said).

Also here: the filter that keeps query-string secrets (`/email/inbound?secret=...`,
`/auth/link?code=...`) out of uvicorn's access log.
"""

from __future__ import annotations

import base64
import copy
import hashlib
import hmac
import json
import logging
import re
import secrets
import time
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Literal, Protocol
from urllib.parse import unquote_plus, urlsplit

from starlette.datastructures import Headers
from starlette.exceptions import HTTPException
from starlette.requests import cookie_parser
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from bot.adapters.http.shared import MAX_ADDRESS, PERSONAL_TOKEN_PREFIX, SESSION_COOKIE
from bot.core.people import ANONYMOUS, SESSION, TOKEN, Directory, Identity, normalize_email
from bot.core.prompt import redact

log = logging.getLogger(__name__)

SLACK_MAX_BYTES = 3 * 1024 * 1024  # Slack's events and interactions are kilobytes
# GitHub caps a delivery at 25 MB; the events triggers read (release, a tag's push, a
# workflow run) are kilobytes, so a larger one is refused (GitHub shows it as failed).
GITHUB_MAX_BYTES = 5 * 1024 * 1024
# The API's JSON bodies. Generous on purpose: a message at the 20,000-character limit
# (bot.adapters.http.api.MAX_TEXT_CHARS) still fits when every character is JSON-escaped as a
# surrogate pair (12 bytes), so the clear "message too long" 413 comes from the app.
API_MAX_BYTES = 256 * 1024
UNAUTHORIZED = "missing or wrong bearer token (Authorization: Bearer <API_TOKEN>)"
PERSONAL_UNAUTHORIZED = "this personal token is unknown or revoked, or its person is no longer in deploybot.toml"
BAD_HOST = "this server does not answer to that host name (Host header): see ALLOWED_HOSTS"
CROSS_ORIGIN = "a request from another site's page (Origin or Referer) may not change anything here"
CSRF_REFUSED = (
    "a request made with a session cookie needs its X-CSRF-Token header (GET /auth/session gives it)"
)
UNAVAILABLE = "storage unavailable, retry shortly"

# The bot itself, as the shared API_TOKEN: may launch, read and write free text; never decide.
SERVICE = Identity(None, TOKEN, "api")
CSRF_HEADER = "x-csrf-token"
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
LINK_TTL = 600  # seconds a sign-in link is good for (once)
LINK_EVERY = 60  # seconds between two links mailed to one person (POST /auth/email-link)
# Exactly one bare address, as a person types their own: no display name, list, angle brackets,
# quoting, whitespace, control characters or percent-escapes. Anything else is answered like an
# unknown address, so no header or list can be smuggled in with it.
BARE_ADDRESS = re.compile(r"[A-Za-z0-9.!#$&'*+/=?^_`{|}~-]{1,64}@[A-Za-z0-9-]{1,63}(?:\.[A-Za-z0-9-]{1,63})*")
# The names the bot always answers to (Host header), whatever else it is told (own_hosts).
LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})
DEFAULT_PORTS = {"http": 80, "https": 443}

Access = Literal["required", "optional", "none"]
# Where a session's CSRF token is checked: "header" here, before the body (X-CSRF-Token);
# "page": by the app, from the form it posted (HTML forms cannot set headers: bot/adapters/http/console
# checks every POST's `csrf_token` field against the same token, Auth.csrf).
Csrf = Literal["header", "page"]


@dataclass(frozen=True)
class Limit:
    path: str  # the path itself and everything under it ("/threads" covers "/threads/x")
    max_bytes: int
    # required: credentials asked (unless local mode); optional: read when given (signing
    # in); none: not even read (the endpoint authenticates itself, or is health)
    auth: Access = "required"
    csrf: Csrf = "header"

    def covers(self, path: str) -> bool:
        return path == self.path or path.startswith(self.path + "/")


def deploybot_limits(email_max_bytes: int | None) -> tuple[Limit, ...]:
    """Every other path (the thread API, /deploys, /docs, /openapi.json, /redoc, and any
    route added later) takes credentials and API_MAX_BYTES."""
    return (
        Limit("/healthz", API_MAX_BYTES, auth="none"),
        Limit("/slack/events", SLACK_MAX_BYTES, auth="none"),  # signed by Slack: checked by the endpoint
        # Signed by GitHub (X-Hub-Signature-256, GITHUB_WEBHOOK_SECRET): checked by the endpoint,
        # which refuses a request without a well-formed signature before reading its body.
        Limit("/github/webhook", GITHUB_MAX_BYTES, auth="none"),
        # The inbound secret is checked by the endpoint before it reads the body.
        Limit("/email/inbound", API_MAX_BYTES if email_max_bytes is None else email_max_bytes, auth="none"),
        # Using a sign-in link asks no session's token (a browser signed in as someone else may
        # use one): the route takes its form only from the bot's own origin (state same_origin).
        Limit("/auth/link", API_MAX_BYTES, auth="optional", csrf="page"),
        Limit("/auth", API_MAX_BYTES, auth="optional"),
        # The web console: without credentials it shows how to sign in (the pages check who
        # is asking themselves: ANONYMOUS sees nothing else); its forms carry the CSRF token.
        Limit("/console", API_MAX_BYTES, auth="optional", csrf="page"),
        Limit("/", API_MAX_BYTES, auth="optional"),  # only "/" itself: a redirect to /console/
        Limit("/favicon.ico", API_MAX_BYTES, auth="none"),  # browsers ask on every page
    )


class BodyTooLarge(HTTPException):
    """Raised from `receive` once a streamed body passes the limit. An HTTPException, so
    FastAPI re-raises it from its body parsing (rather than calling it a 400) and the
    app's exception middleware answers 413."""

    def __init__(self, max_bytes: int) -> None:
        super().__init__(status_code=413, detail=f"request body larger than {max_bytes} bytes")


# --- sessions: signed cookies ------------------------------------------------------------


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


@dataclass(frozen=True)
class Session:
    id: str
    person: str
    expires: int  # Unix time

    def left(self, now: float) -> int:
        """Seconds until the cookie expires."""
        return max(0, int(self.expires - now))


class Sessions:
    """Sessions as signed cookies: `<payload>.<signature>`, the payload (session id, person,
    expiry) in base64url JSON, the signature an HMAC-SHA256 of it. Nothing is stored for a
    live session; signing out records the id (credentials.end_session).

    The secret is read on first use (`secret` may be a callable: the root's reads or
    creates the file under DATA_DIR only when a session is issued or read). Cookie and
    CSRF keys are derived from it separately, so neither value can stand for the other."""

    def __init__(self, secret: bytes | Callable[[], bytes], ttl: int, clock: Callable[[], float] = time.time) -> None:
        self._secret = secret
        self.ttl = ttl
        self.clock = clock

    @cached_property
    def _keys(self) -> tuple[bytes, bytes]:
        secret = self._secret() if callable(self._secret) else self._secret
        if len(secret) < 16:
            raise ValueError("SESSION_SECRET is too short: use at least 16 bytes (32 random bytes is good)")
        derive = lambda label: hmac.new(secret, label, hashlib.sha256).digest()  # noqa: E731
        return derive(b"deploybot session cookie v1"), derive(b"deploybot csrf token v1")

    def issue(self, person: str) -> tuple[Session, str]:
        """A new session for `person`, valid `ttl` seconds, and its cookie's value."""
        session = Session(secrets.token_hex(16), person, int(self.clock()) + self.ttl)
        payload = _b64(json.dumps([session.id, session.person, session.expires], separators=(",", ":")).encode())
        return session, f"{payload}.{self._sign(payload)}"

    def read(self, value: str) -> Session | None:
        """The session of a cookie we signed that has not expired; anything else: None."""
        payload, dot, signature = value.partition(".")
        if not dot or len(value) > 4096 or not hmac.compare_digest(self._sign(payload).encode(), signature.encode()):
            return None
        try:
            sid, person, expires = json.loads(_unb64(payload))
        except (ValueError, TypeError):
            return None
        if not (isinstance(sid, str) and isinstance(person, str) and isinstance(expires, int)):
            return None
        return Session(sid, person, expires) if expires > self.clock() else None

    def csrf(self, session: Session) -> str:
        """The session's CSRF token: derived from its id, so nothing is stored."""
        return _b64(hmac.new(self._keys[1], session.id.encode(), hashlib.sha256).digest())

    def csrf_matches(self, session: Session, offered: str) -> bool:
        return hmac.compare_digest(self.csrf(session).encode(), offered.encode())

    def _sign(self, payload: str) -> str:
        return _b64(hmac.new(self._keys[0], payload.encode(), hashlib.sha256).digest())


# --- who is asking ------------------------------------------------------------------------


class Token(Protocol):
    @property
    def token_id(self) -> str: ...

    @property
    def person(self) -> str: ...


class Credentials(Protocol):
    """What the front door needs of bot.adapters.redis.credentials.RedisCredentials."""

    async def verify(self, token: str) -> Token | None: ...

    async def session_ended(self, session_id: str) -> bool: ...

    async def consume_link(self, code: str) -> str | None: ...

    async def peek_link(self, code: str) -> str | None: ...

    async def end_session(self, session_id: str, ttl_seconds: int) -> None: ...

    async def first_link_in(self, person: str, seconds: int) -> bool: ...


SignInLink = Callable[[str], Awaitable[str]]  # person -> a one-time sign-in URL
Mail = Callable[[str, str], Awaitable[None]]  # (address, sign-in URL): mails the link


@dataclass(frozen=True)
class Seen:
    """Who a request comes from: `identity` None means open (trust the names given)."""

    identity: Identity | None
    session: Session | None = None


@dataclass(frozen=True)
class Refusal:
    status: int
    detail: str


class Auth:
    """Credentials in, an identity out (`identify`), and signing in and out for /auth.

    `open_mode`: nothing configured (no people, no approvers): whoever gets in (the shared
    token, or anyone in local mode) is trusted with the names they give, as before. Else
    they are the service identity, and deciding takes a personal token or a session.
    Without `credentials` and `sessions` only API_TOKEN is known (and /auth is not served)."""

    def __init__(
        self,
        api_token: str | None,
        *,
        open_mode: bool = True,
        credentials: Credentials | None = None,
        directory: Directory | None = None,
        sessions: Sessions | None = None,
        sign_in_link: SignInLink | None = None,
        mail: Mail | None = None,
        secure_cookies: bool = False,
    ) -> None:
        self.expected = f"Bearer {api_token}".encode() if api_token else None
        self.open_mode = open_mode
        self.credentials = credentials
        self.directory = directory or Directory()
        self.sessions = sessions
        self.sign_in_link = sign_in_link
        self.mail = mail
        self.secure_cookies = secure_cookies

    @property
    def signs_in(self) -> bool:
        return self.credentials is not None and self.sessions is not None

    async def identify(self, scope: Scope, required: bool, csrf_header: bool = True) -> Seen | Refusal:
        """`csrf_header` False: a session's CSRF token is the app's to check (Limit.csrf "page")."""
        headers = Headers(scope=scope)
        offered = headers.get("authorization")
        if offered is not None:
            if self.expected is not None and hmac.compare_digest(offered.encode("latin-1"), self.expected):
                return Seen(None if self.open_mode else SERVICE)
            scheme, _, value = offered.partition(" ")
            value = value.strip()
            if scheme.lower() == "bearer" and value.startswith(PERSONAL_TOKEN_PREFIX) and self.credentials:
                info = await self.credentials.verify(value)
                # A person's token, or an agent's (bot/people.py: agents ask, never decide).
                who = self.directory.by_token(info.person, info.token_id) if info is not None else None
                if who is None:
                    log.info("http: refused a personal token for %s %s", scope["method"], scope["path"])
                    return Refusal(401, PERSONAL_UNAUTHORIZED)
                return Seen(who)
            if self.expected is not None and required:
                return Refusal(401, UNAUTHORIZED)
            # local mode: any other Authorization header is ignored, as before
        cookie = cookie_parser(headers.get("cookie", "")).get(SESSION_COOKIE)
        if cookie and self.sessions is not None and self.credentials is not None:
            session = self.sessions.read(cookie)
            if (session is not None and session.person in self.directory.people
                    and not await self.credentials.session_ended(session.id)):
                if csrf_header and scope["method"] not in SAFE_METHODS and not self.sessions.csrf_matches(
                    session, headers.get(CSRF_HEADER, "")
                ):
                    return Refusal(403, CSRF_REFUSED)
                return Seen(self.directory.by_name(session.person, via=SESSION, evidence=session.id), session)
            # expired, ended, forged or orphaned: as if there were no cookie
        if self.expected is None:
            return Seen(None if self.open_mode else SERVICE)  # local mode
        return Refusal(401, UNAUTHORIZED) if required else Seen(ANONYMOUS)

    # --- signing in and out (the /auth routes of bot.adapters.http.api) ---------------------------------

    async def sign_in(self, code: str) -> tuple[Session, str] | None:
        """A sign-in link's code -> a new session and its cookie's value; None when the
        link was used, expired, never issued, or its person left deploybot.toml."""
        assert self.credentials is not None and self.sessions is not None
        person = await self.credentials.consume_link(code) if code else None
        if person is None or person not in self.directory.people:
            return None
        session, cookie = self.sessions.issue(person)
        log.info("http: %s signed in (session %s)", person, session.id[:8])
        return session, cookie

    async def sign_out(self, session: Session) -> None:
        assert self.credentials is not None and self.sessions is not None
        await self.credentials.end_session(session.id, session.left(self.sessions.clock()) + 1)
        log.info("http: %s signed out (session %s)", session.person, session.id[:8])

    def csrf(self, session: Session) -> str:
        assert self.sessions is not None
        return self.sessions.csrf(session)

    @property
    def session_ttl(self) -> int:
        return self.sessions.ttl if self.sessions else 0

    async def link_person(self, code: str) -> str | None:
        """Whose sign-in link this is, without using it up (the page a GET of the link shows);
        None when it was used, expired, never issued, or its person left deploybot.toml."""
        assert self.credentials is not None
        person = await self.credentials.peek_link(code) if code else None
        return person if person in self.directory.people else None

    async def email_link(self, given: str) -> None:
        """Mail a sign-in link to the address deploybot.toml holds for the person whose address
        `given` is, when it is exactly one bare address (at most one a minute per person);
        otherwise, or without an email channel, nothing. The mail never goes to `given`
        itself: the stored address is the only place a link may reach. Run after the answer
        is sent, so how long the request takes does not tell whose address it is."""
        address = normalize_email(bare_address(given) or "")
        person = self.directory.by_email(address).person if address else None
        if person is None or self.mail is None or self.sign_in_link is None or self.credentials is None:
            return
        stored = next(a for a in self.directory.people[person].emails if a == address)
        try:
            if not await self.credentials.first_link_in(person, LINK_EVERY):
                log.info("http: a sign-in link for %s was mailed less than %d s ago", person, LINK_EVERY)
                return
            await self.mail(stored, await self.sign_in_link(person))
        except Exception:
            log.exception("http: could not mail a sign-in link for %s", person)


def bare_address(given: str) -> str | None:
    """`given` when it is exactly one bare address (BARE_ADDRESS), else None."""
    if not isinstance(given, str) or len(given) > MAX_ADDRESS or not BARE_ADDRESS.fullmatch(given):
        return None
    return given


# --- the bot's own names and origins --------------------------------------------------------


def _host_and_port(netloc: str) -> tuple[str, int | None] | None:
    """`Example.com:8080` -> ("example.com", 8080), `[::1]` -> ("::1", None); None when it is
    not a host and optional port alone (a path, user info, a bad port)."""
    if not netloc or any(c in netloc for c in "/?#@\\ \t\r\n"):
        return None
    try:
        parts = urlsplit("//" + netloc)
        port = parts.port
    except ValueError:
        return None
    return (parts.hostname, port) if parts.hostname else None


def own_hosts(names: Iterable[str] = ()) -> frozenset[str]:
    """LOOPBACK_HOSTS and `names` (PUBLIC_URL's host, ALLOWED_HOSTS), as a Host header's name is
    compared: lower-cased, an IPv6 address without its brackets."""
    found = set(LOOPBACK_HOSTS)
    for name in names:
        parsed = _host_and_port(name.strip())
        if parsed:
            found.add(parsed[0])
    return frozenset(found)


def _origin(url: str) -> tuple[str, int] | None:
    """`https://Example.com/x` -> ("example.com", 443); None for "null" or anything not http(s)."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return None
    if parts.scheme not in DEFAULT_PORTS or not parts.hostname:
        return None
    return parts.hostname, port or DEFAULT_PORTS[parts.scheme]


def same_origin(headers: Headers) -> bool | None:
    """Whether the request's `Origin` (or, without one, its `Referer`) is the request's own
    origin: the same host and port as its `Host` (the scheme is not compared: behind a proxy
    that ends TLS the request arrives as http). None: it carries neither."""
    given = headers.get("origin") or headers.get("referer")
    if not given:
        return None
    origin, host = _origin(given), _host_and_port(headers.get("host", ""))
    if origin is None or host is None:
        return False
    scheme = urlsplit(given).scheme
    return origin == (host[0], host[1] or DEFAULT_PORTS[scheme])


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
        refusal = self.foreign(scope, headers, rule)
        if refusal is not None:
            await _refuse(scope, receive, send, refusal.status, refusal.detail)
            return
        if rule.auth != "none":
            try:
                seen = await self.auth.identify(
                    scope, required=rule.auth == "required", csrf_header=rule.csrf == "header"
                )
            except Exception as e:  # Redis unreachable while checking a token or a session
                log.warning("http: could not check credentials: %s", e)
                await _refuse(scope, receive, send, 503, UNAVAILABLE, {"Retry-After": "1"})
                return
            if isinstance(seen, Refusal):
                extra = {"WWW-Authenticate": "Bearer"} if seen.status == 401 else {}
                await _refuse(scope, receive, send, seen.status, seen.detail, extra)
                return
            state = scope.setdefault("state", {})
            state["identity"], state["session"] = seen.identity, seen.session
        declared = headers.get("content-length")
        if declared is not None:
            if not declared.isascii() or not declared.isdigit():
                await _refuse(scope, receive, send, 400, "invalid Content-Length")
                return
            if len(declared) > 15 or int(declared) > rule.max_bytes:  # int() refuses 4,300+ digits
                log.warning("http: refused %s %s: Content-Length %s is over the %d-byte limit",
                            scope["method"], scope["path"], declared, rule.max_bytes)
                await _refuse(scope, receive, send, 413, f"request body larger than {rule.max_bytes} bytes")
                return
        chunked = "chunked" in headers.get("transfer-encoding", "").lower()
        await _Counted(self.app, rule.max_bytes, chunked or declared not in (None, "0"))(scope, receive, send)


    def foreign(self, scope: Scope, headers: Headers, rule: Limit) -> Refusal | None:
        """A Host that is not one of ours (400), or a change asked for by another origin's
        page (403); else None, and whether the request named its own origin goes to the app."""
        host = _host_and_port(headers.get("host", ""))
        if host is None or host[0] not in self.hosts:
            log.warning("http: refused %s %s for host %r", scope["method"], scope["path"], headers.get("host"))
            return Refusal(400, BAD_HOST)
        same = same_origin(headers)
        if same is False and scope["method"] not in SAFE_METHODS and rule.auth != "none":
            log.warning("http: refused %s %s from another origin", scope["method"], scope["path"])
            return Refusal(403, CROSS_ORIGIN)
        scope.setdefault("state", {})["same_origin"] = same is True
        return None


class _Counted:
    """One request: counts the body as the app receives it and stops it past the limit.

    A response that starts before the body was read to its end (a refusal: too large, or
    an endpoint that said 401 without reading) closes the connection: otherwise the server
    would go on reading the rest of the body, only to throw it away."""

    def __init__(self, app: ASGIApp, max_bytes: int, body_expected: bool) -> None:
        self.app, self.max_bytes = app, max_bytes
        self.unread = body_expected
        self.received = 0
        self.over = False
        self.started = False

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        async def counted_receive() -> Message:
            if self.over:
                raise BodyTooLarge(self.max_bytes)
            message = await receive()
            if message["type"] == "http.request":
                self.received += len(message.get("body", b""))
                if self.received > self.max_bytes:
                    # The chunk that crossed the limit is dropped here: the app holds at
                    # most max_bytes of this body.
                    self.over = True
                    log.warning("http: refused %s %s: body over the %d-byte limit while streaming",
                                scope["method"], scope["path"], self.max_bytes)
                    raise BodyTooLarge(self.max_bytes)
                self.unread = message.get("more_body", False)
            return message

        async def closing_send(message: Message) -> None:
            if message["type"] == "http.response.start":
                self.started = True
                if self.over or self.unread:
                    message = {**message, "headers": [*message.get("headers", []), (b"connection", b"close")]}
            await send(message)

        try:
            await self.app(scope, counted_receive, closing_send)
        except BodyTooLarge as e:  # an app that did not turn it into a response itself
            if self.started:
                raise
            await _refuse(scope, receive, send, 413, str(e.detail))


async def _refuse(
    scope: Scope, receive: Receive, send: Send, status: int, detail: str, headers: dict[str, str] | None = None
) -> None:
    response = JSONResponse({"detail": detail}, status_code=status, headers={**(headers or {}), "Connection": "close"})
    await response(scope, receive, send)


# --- access log --------------------------------------------------------------------------

SECRET_PARAMETERS = frozenset({"secret", "token", "api_token", "access_token", "api_key", "password", "code"})
_QUERY = re.compile(r"\?[^\s\"']*")


def redact_query(text: str) -> str:
    """`/email/inbound?secret=abc&x=1` -> `/email/inbound?secret=[redacted]&x=1`. Parameter
    names are compared as the app reads them (percent-decoded), so `?%73ecret=` is caught too."""

    def pair(item: str) -> str:
        name, eq, _ = item.partition("=")
        return f"{name}=[redacted]" if eq and unquote_plus(name).strip().lower() in SECRET_PARAMETERS else item

    return _QUERY.sub(lambda m: "?" + "&".join(pair(p) for p in m.group(0)[1:].split("&")), text)


class RedactSecrets(logging.Filter):
    """The one redacting filter, on every handler that prints (the root's, uvicorn's): no
    logger, ours or a library's, prints a secret. httpx logs each request's full URL at INFO,
    and a webhook URL is a credential; uvicorn's access log names query strings. Each string
    argument and the message are redacted like the transcript (bot.core.prompt.redact: `secrets`,
    and whatever looks like one), and query secrets (`?secret=`). A secret only in the
    formatted message (an httpx.URL argument) makes the record its redacted message."""

    def __init__(self, secrets: Sequence[str] = ()) -> None:
        super().__init__()
        self.secrets = tuple(secrets)

    def clean(self, text: str) -> str:
        return redact_query(redact(text, self.secrets))  # whole values first: a URL with its query

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.args, tuple):  # uvicorn's access formatter reads them one by one
            record.args = tuple(self.clean(a) if isinstance(a, str) else a for a in record.args)
        elif isinstance(record.args, dict):
            record.args = {k: self.clean(v) if isinstance(v, str) else v for k, v in record.args.items()}
        if isinstance(record.msg, str):
            record.msg = self.clean(record.msg)
        try:
            message = record.getMessage()
        except (TypeError, ValueError):  # a malformed call: logging reports it, as it would
            return True
        if (clean := self.clean(message)) != message:
            record.msg, record.args = clean, None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = self.clean(record.exc_text)
        if record.stack_info:
            record.stack_info = self.clean(record.stack_info)
        return True


def redact_logs(secrets: Sequence[str]) -> RedactSecrets:
    """Put one RedactSecrets on every handler of the root logger (where every logger that
    propagates prints): what the bot does once logging is configured."""
    redacting = RedactSecrets(secrets)
    for handler in logging.getLogger().handlers:
        handler.addFilter(redacting)
    return redacting


def uvicorn_log_config(redacting: logging.Filter | None = None) -> dict[str, Any]:
    """uvicorn's own logging configuration, with `redacting` (else one that knows no
    configured secret: query secrets and what looks like one) on its handlers: its loggers
    do not propagate to the root's."""
    from uvicorn.config import LOGGING_CONFIG

    config = copy.deepcopy(LOGGING_CONFIG)
    the_filter = redacting or RedactSecrets()
    config.setdefault("filters", {})["redact_secrets"] = {"()": lambda: the_filter}
    for handler in config["handlers"].values():
        handler.setdefault("filters", []).append("redact_secrets")
    return config
