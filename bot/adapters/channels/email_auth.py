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
    """The authserv-id whose verdict proves `sender`'s domain sent the mail, else None: an
    Authentication-Results header of a trusted server (the MTA or inbound route in front of the
    bot, which removes forged ones) saying `dmarc=pass`, or `dkim=pass` signed by the From
    domain or a parent of it. Any other server's header was written by whoever sent the mail,
    and proves nothing (RFC 8601 section 5); so does a header that does not parse."""
    domain = sender.rpartition("@")[2].lower()
    if not domain or not trusted:
        return None
    for value in headers:
        # Only a trusted server's header is parsed at all, and only one of a sane length.
        named = value.partition(";")[0].split()[:1]  # the authserv-id (a version may follow)
        if len(value) > MAX_AUTH_RESULT or not named or named[0].lower() not in trusted:
            continue
        try:
            parsed = authres.AuthenticationResultsHeader.parse(f"Authentication-Results: {value}")
        except Exception:  # authres raises its own kinds, and others on hostile input
            continue
        server = str(parsed.authserv_id or "").lower()
        if server in trusted and any(_passes(result, domain) for result in parsed.results):
            return server
    return None


def _passes(result: Any, domain: str) -> bool:
    method, verdict = str(getattr(result, "method", "")).lower(), str(getattr(result, "result", "")).lower()
    if verdict != "pass":
        return False
    if method == "dmarc":
        # DMARC passes for the header.from domain it checked: it must be the From's.
        checked = _property(result, "header", "from")
        return checked in ("", domain)
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
