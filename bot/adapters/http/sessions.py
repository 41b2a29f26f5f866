"""Signed sessions: the cookie a sign-in link sets stands for its person until it expires or
is ended, with nothing stored for a live one; and each session's CSRF token."""

from __future__ import annotations

import hashlib
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from itsdangerous import BadData, Signer, URLSafeSerializer

COOKIE_SALT = b"deploybot.session-cookie"
CSRF_SALT = b"deploybot.csrf-token"
# HMAC-SHA256 under a key derived from the secret and the salt (HMAC again): each salt gives
# its own key, so a cookie's signature never stands for a CSRF token, nor the other way.
_SIGNING: dict[str, Any] = {"key_derivation": "hmac", "digest_method": hashlib.sha256}

# Compatibility, read only: how cookies and CSRF tokens were signed before itsdangerous (the
# same HMACs, written by hand, under these labels). A session signed so still reads until it
# expires (its expiry is in the cookie, checked as always); nothing new is signed so. Remove
# once SESSION_TTL has passed since the release that signs the new way.
_OLD_COOKIE_SALT = b"deploybot session cookie v1"
_OLD_CSRF_SALT = b"deploybot csrf token v1"


@dataclass(frozen=True)
class Session:
    id: str
    person: str
    expires: int  # Unix time

    def left(self, now: float) -> int:
        """Seconds until the cookie expires."""
        return max(0, int(self.expires - now))


class Sessions:
    """Sessions as signed cookies (itsdangerous): `<payload>.<signature>`, the payload
    (session id, person, expiry) as base64url JSON. Nothing is stored for a live session;
    signing out records the id (credentials.end_session).

    The secret is read on first use (`secret` may be a callable: the root's reads or
    creates the file under DATA_DIR only when a session is issued or read). Cookie and
    CSRF tokens are signed with a salt each, so neither value can stand for the other."""

    def __init__(self, secret: bytes | Callable[[], bytes], ttl: int, clock: Callable[[], float] = time.time) -> None:
        self._secret = secret
        self.ttl = ttl
        self.clock = clock

    @cached_property
    def _key(self) -> bytes:
        secret = self._secret() if callable(self._secret) else self._secret
        if len(secret) < 16:
            raise ValueError("SESSION_SECRET is too short: use at least 16 bytes (32 random bytes is good)")
        return secret

    @cached_property
    def _cookies(self) -> tuple[URLSafeSerializer, URLSafeSerializer]:
        """What signs new cookies, then what still reads old ones."""
        new = URLSafeSerializer(self._key, salt=COOKIE_SALT, signer_kwargs=_SIGNING)
        return new, URLSafeSerializer(self._key, salt=_OLD_COOKIE_SALT, signer_kwargs=_SIGNING)

    @cached_property
    def _csrf_signers(self) -> tuple[Signer, Signer]:
        """What signs new CSRF tokens, then what still checks old ones."""
        return Signer(self._key, salt=CSRF_SALT, **_SIGNING), Signer(self._key, salt=_OLD_CSRF_SALT, **_SIGNING)

    def issue(self, person: str) -> tuple[Session, str]:
        """A new session for `person`, valid `ttl` seconds, and its cookie's value."""
        session = Session(secrets.token_hex(16), person, int(self.clock()) + self.ttl)
        return session, self._cookies[0].dumps([session.id, session.person, session.expires])

    def read(self, value: str) -> Session | None:
        """The session of a cookie we signed that has not expired; anything else: None."""
        payload = self._payload(value) if len(value) <= 4096 else None
        if not (isinstance(payload, list) and len(payload) == 3):
            return None
        sid, person, expires = payload
        if not (isinstance(sid, str) and isinstance(person, str) and isinstance(expires, int)):
            return None
        return Session(sid, person, expires) if expires > self.clock() else None

    def _payload(self, value: str) -> Any:
        """What a cookie signed the new way, or the old, holds; None when neither signed it."""
        for reader in self._cookies:
            try:
                return reader.loads(value)
            except BadData:
                continue
        return None

    def csrf(self, session: Session) -> str:
        """The session's CSRF token: derived from its id, so nothing is stored."""
        return self._csrf_signers[0].get_signature(session.id).decode()

    def csrf_matches(self, session: Session, offered: str) -> bool:
        # compared as text, as offered: base64's decoder would also take a token with stray
        # characters in it, or with other spare bits at its end
        expected = (signer.get_signature(session.id) for signer in self._csrf_signers)
        return any(secrets.compare_digest(token, offered.encode("utf-8", "replace")) for token in expected)
