"""Where the web serves: the host it binds to, and the names it answers to."""

from __future__ import annotations

from urllib.parse import urlsplit

from bot.config.fields import Fields
from bot.config.reading import words


def bind_host(s: Fields) -> str:
    """Without API_TOKEN the approval endpoints must not be reachable from other hosts."""
    return s.host if s.api_token else "127.0.0.1"


def host_names(s: Fields) -> frozenset[str]:
    """The names, besides loopback, the bot answers to (bot.adapters.http.front_door checks Host):
    ALLOWED_HOSTS, PUBLIC_URL's host, and the address HOST binds to unless it is all of them."""
    names = set(words(s.allowed_hosts))
    if s.public_url:
        names.add(urlsplit(s.public_url.strip()).netloc)
    bound = bind_host(s)
    if bound not in ("0.0.0.0", "::", ""):
        names.add(f"[{bound}]" if ":" in bound else bound)
    return frozenset(names)
