"""Signed session cookies: another secret, a changed byte or an expired one reads as no session."""

from __future__ import annotations

import base64
import hashlib
import hmac

from bot.adapters.http.sessions import Session, Sessions


def test_session_cookies_are_signed_and_expire():
    now = [1_000_000.0]
    sessions = Sessions(b"k" * 32, ttl=60, clock=lambda: now[0])
    session, cookie = sessions.issue("alice")
    assert sessions.read(cookie) == session and session.expires == 1_000_060
    assert Sessions(b"o" * 32, ttl=60, clock=lambda: now[0]).read(cookie) is None  # another secret
    payload, _, signature = cookie.partition(".")
    assert sessions.read(payload.replace(payload[3], "A" if payload[3] != "A" else "B", 1) + "." + signature) is None
    assert sessions.read("junk") is None and sessions.read("é.é") is None
    other, _ = sessions.issue("alice")
    assert sessions.csrf(session) != sessions.csrf(other) and sessions.csrf_matches(session, sessions.csrf(session))
    now[0] += 60
    assert sessions.read(cookie) is None  # expired


# A cookie and a CSRF token as deploybot signed them before itsdangerous (hand-written HMAC):
# session 0123…cdef of alice, expiring at 1_000_060, under the secret b"k" * 32.
OLD_COOKIE = ("WyIwMTIzNDU2Nzg5YWJjZGVmMDEyMzQ1Njc4OWFiY2RlZiIsImFsaWNlIiwxMDAwMDYwXQ"
              ".hbSZI_Ql3qzKmejQMzgW8Rad1DUmOZkoWeqYCXwmhGI")
OLD_CSRF = "Y50FmaY1ROWw_Dj3pk-aI9shtc1w0pacISRdoSZfg5w"


def old_signature(secret: bytes, payload: str) -> str:
    """How a cookie was signed before: HMAC-SHA256 under a key derived from the secret."""
    key = hmac.new(secret, b"deploybot session cookie v1", hashlib.sha256).digest()
    return base64.urlsafe_b64encode(hmac.new(key, payload.encode(), hashlib.sha256).digest()).rstrip(b"=").decode()


def test_the_old_way_is_written_down_right():
    payload, _, signature = OLD_COOKIE.partition(".")
    assert old_signature(b"k" * 32, payload) == signature


def test_a_cookie_signed_the_old_way_still_reads_until_it_expires():
    now = [1_000_000.0]
    sessions = Sessions(b"k" * 32, ttl=60, clock=lambda: now[0])
    session = sessions.read(OLD_COOKIE)
    assert session == Session("0123456789abcdef0123456789abcdef", "alice", 1_000_060)
    assert sessions.csrf_matches(session, OLD_CSRF)  # the page it loaded before still posts
    payload, _, signature = OLD_COOKIE.partition(".")
    for tampered in (payload[:10] + "B" + payload[11:] + "." + signature,
                     payload + "." + signature[:10] + "A" + signature[11:]):
        assert sessions.read(tampered) is None
    assert not sessions.csrf_matches(session, OLD_CSRF[:10] + "A" + OLD_CSRF[11:])
    assert Sessions(b"o" * 32, ttl=60, clock=lambda: now[0]).read(OLD_COOKIE) is None  # another secret
    now[0] = 1_000_060
    assert sessions.read(OLD_COOKIE) is None  # expired, as it always would have


def test_new_cookies_and_csrf_tokens_are_signed_the_new_way():
    sessions = Sessions(b"k" * 32, ttl=60, clock=lambda: 1_000_000.0)
    session = Session("0123456789abcdef0123456789abcdef", "alice", 1_000_060)
    assert sessions.csrf(session) != OLD_CSRF and sessions.csrf_matches(session, sessions.csrf(session))
    issued, cookie = sessions.issue("alice")
    assert sessions.read(cookie) == issued
    payload, _, signature = cookie.rpartition(".")
    assert signature != old_signature(b"k" * 32, payload)
    # the cookie's signature and the CSRF token are each bound to their own purpose
    assert not sessions.csrf_matches(issued, cookie.rpartition(".")[2])
