"""Signed sessions: the cookie a sign-in link sets stands for its person until it expires or
is ended, with nothing stored for a live one; and each session's CSRF token."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property


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

