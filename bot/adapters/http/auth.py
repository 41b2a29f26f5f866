"""Who is asking, before the app reads a byte of the body (`Auth.identify`), and signing in
and out for /auth: credentials in, an identity out.

- `Authorization: Bearer <API_TOKEN>` (compared in constant time): the bot's service
  identity (SERVICE), which may start threads, read and write free text, never decide;
- `Authorization: Bearer dbt_...`: a personal API token (bot/adapters/redis/credentials.py),
  that token's person, via "token";
- the session cookie a sign-in link set (bot/adapters/http/sessions.py): that person, via
  "session"; a request that changes anything (not GET/HEAD/OPTIONS) must also carry the
  session's `X-CSRF-Token` (GET /auth/session gives it), or it is a 403 (where the app does
  not check a form's token itself: Limit.csrf "page");
and nothing else: 401. Without API_TOKEN (local mode, bound to 127.0.0.1) a request without
credentials is let in. The identity is an Identity, or None for "open": nothing configured
(open mode), where the names the API is given are trusted.
"""

from __future__ import annotations

import hmac
import logging
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Protocol

from starlette.datastructures import Headers
from starlette.requests import cookie_parser
from starlette.types import Scope

from bot.adapters.http.sessions import Session, Sessions
from bot.adapters.http.shared import MAX_ADDRESS, SAFE_METHODS, SESSION_COOKIE, Refusal
from bot.core.people import ANONYMOUS, SERVICE, SESSION, Directory, Identity
from bot.core.tokens import PERSONAL_TOKEN_PREFIX

log = logging.getLogger(__name__)

UNAUTHORIZED = "missing or wrong bearer token (Authorization: Bearer <API_TOKEN>)"
PERSONAL_UNAUTHORIZED = "this personal token is unknown or revoked, or its person is no longer in deploybot.toml"
CSRF_REFUSED = (
    "a request made with a session cookie needs its X-CSRF-Token header (GET /auth/session gives it)"
)
CSRF_HEADER = "x-csrf-token"
LINK_TTL = 600  # seconds a sign-in link is good for (once)
LINK_EVERY = 60  # seconds between two links mailed to one person (POST /auth/email-link)
# The email channel's kind of ids (its package's KIND): where a person's addresses are.
EMAIL = "email"
# Exactly one bare address, as a person types their own: no display name, list, angle brackets,
# quoting, whitespace, control characters or percent-escapes. Anything else is answered like an
# unknown address, so no header or list can be smuggled in with it.
BARE_ADDRESS = re.compile(r"[A-Za-z0-9.!#$&'*+/=?^_`{|}~-]{1,64}@[A-Za-z0-9-]{1,63}(?:\.[A-Za-z0-9-]{1,63})*")


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
        slack_login: bool = False,
    ) -> None:
        self.expected = f"Bearer {api_token}".encode() if api_token else None
        self.open_mode = open_mode
        self.credentials = credentials
        self.directory = directory or Directory()
        self.sessions = sessions
        self.sign_in_link = sign_in_link
        self.mail = mail
        self.secure_cookies = secure_cookies
        self.slack_login = slack_login  # the sign-in pages offer only the ways that work

    @property
    def mails_links(self) -> bool:
        return self.mail is not None and self.sign_in_link is not None and self.credentials is not None

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
                # A person's token, or an agent's (bot/core/people.py: agents ask, never decide).
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
        given_address = bare_address(given)
        seen = self.directory.by(EMAIL, given_address) if given_address else None
        person, address = (seen.person, seen.evidence) if seen else (None, "")
        if person is None or self.mail is None or self.sign_in_link is None or self.credentials is None:
            return
        stored = next(a for a in self.directory.people[person].ids.get(EMAIL, ()) if a == address)
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

