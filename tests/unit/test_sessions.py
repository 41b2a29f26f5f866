"""Signed session cookies: another secret, a changed byte or an expired one reads as no session."""

from __future__ import annotations

from bot.adapters.http.front_door import (
    Sessions,
)


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
