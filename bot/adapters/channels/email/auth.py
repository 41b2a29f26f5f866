"""Authentication-Results (RFC 8601): what the receiving mail server proved of an email's
From. Pure (no I/O)."""

from __future__ import annotations

from typing import Any

import authres

MAX_AUTH_RESULTS = 5  # Authentication-Results headers read: the topmost, where the receiving server adds its own
# Characters of one Authentication-Results header; a longer one proves nothing. A receiving
# server's own is well under it, and the authres parser is superlinear (10,000 characters of
# "x=y;" took a second, 2,000 a tenth of one).
MAX_AUTH_RESULT = 1_000


def proven_by(headers: tuple[str, ...], sender: str, trusted: frozenset[str]) -> str | None:
    """The authserv-id whose verdict proves `sender`'s domain sent the mail, else None: the
    topmost Authentication-Results header of a trusted server (the MTA or inbound route in
    front of the bot) saying `dmarc=pass` for the From domain, or `dkim=pass` signed by the
    From domain or a parent of it. The receiving server adds its own on top; every header below
    it arrived with the mail, whoever it names, so it proves nothing (RFC 8601 section 5), nor
    does any other server's. Ours that does not pass, or does not parse, proves nothing either:
    nothing below it is read."""
    domain = sender.rpartition("@")[2].lower()
    if not domain or not trusted:
        return None
    value = next((v for v in headers if _named(v) in trusted), None)
    if value is None or len(value) > MAX_AUTH_RESULT:  # longer than a server writes: never parsed, it is slow
        return None
    try:
        parsed = authres.AuthenticationResultsHeader.parse(f"Authentication-Results: {value}")
    except Exception:  # authres raises its own kinds, and others on hostile input
        return None
    server = str(parsed.authserv_id or "").lower()
    if server in trusted and any(_passes(result, domain) for result in parsed.results):
        return server
    return None


def _named(value: str) -> str:
    """The authserv-id a header starts with (a version may follow it), lower-cased."""
    named = value.partition(";")[0].split()[:1]
    return named[0].lower() if named else ""


def _passes(result: Any, domain: str) -> bool:
    method, verdict = str(getattr(result, "method", "")).lower(), str(getattr(result, "result", "")).lower()
    if verdict != "pass":
        return False
    if method == "dmarc":
        # DMARC passes for the header.from domain it checked: it must say so, and be the From's.
        return _property(result, "header", "from") == domain
    if method == "dkim":
        signer = _property(result, "header", "d").rstrip(".")
        return bool(signer) and (domain == signer or domain.endswith(f".{signer}"))
    return False


def _property(result: Any, kind: str, name: str) -> str:
    """A result's `kind.name` property (`header.d`), lower-cased; "" when it has none."""
    for prop in getattr(result, "properties", None) or ():
        if str(getattr(prop, "type", "")).lower() == kind and str(getattr(prop, "name", "")).lower() == name:
            return str(getattr(prop, "value", "") or "").lower()
    return ""
