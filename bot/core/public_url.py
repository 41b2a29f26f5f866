"""PUBLIC_URL as people and other services may be shown it: never with a user:password@."""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit


def without_userinfo(url: str) -> str:
    """`url` without the user and password a PUBLIC_URL may carry (for a proxy in front of the
    bot); unchanged when it has none. An IPv6 host keeps its brackets."""
    parts = urlsplit(url)
    if not parts.hostname or "@" not in parts.netloc:
        return url
    host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    return urlunsplit(parts._replace(netloc=host + (f":{parts.port}" if parts.port else "")))
