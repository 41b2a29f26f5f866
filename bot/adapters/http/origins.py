"""The bot's own names and origins: a request's `Host` must name the bot itself (loopback,
PUBLIC_URL's host, ALLOWED_HOSTS), so a page on a name that resolves to 127.0.0.1 (DNS
rebinding) is not answered; and a request that changes anything may not come from another
origin's page (its `Origin`, or without one its `Referer`): cross-site request forgery."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from urllib.parse import urlsplit

from starlette.datastructures import Headers
from starlette.types import Scope

from bot.adapters.http.shared import SAFE_METHODS, Refusal

log = logging.getLogger(__name__)

BAD_HOST = "this server does not answer to that host name (Host header): see ALLOWED_HOSTS"
CROSS_ORIGIN = "a request from another site's page (Origin or Referer) may not change anything here"
# The names the bot always answers to (Host header), whatever else it is told (own_hosts).
LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})
DEFAULT_PORTS = {"http": 80, "https": 443}


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



def foreign(scope: Scope, headers: Headers, hosts: frozenset[str], checks_origin: bool) -> Refusal | None:
    """A Host that is not one of `hosts` (400), or a change asked for by another origin's page
    where `checks_origin` (403); else None, and whether the request named its own origin goes
    to the app (`scope["state"]["same_origin"]`)."""
    host = _host_and_port(headers.get("host", ""))
    if host is None or host[0] not in hosts:
        log.warning("http: refused %s %s for host %r", scope["method"], scope["path"], headers.get("host"))
        return Refusal(400, BAD_HOST)
    same = same_origin(headers)
    if same is False and scope["method"] not in SAFE_METHODS and checks_origin:
        log.warning("http: refused %s %s from another origin", scope["method"], scope["path"])
        return Refusal(403, CROSS_ORIGIN)
    scope.setdefault("state", {})["same_origin"] = same is True
    return None
