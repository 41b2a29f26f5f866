"""Outgoing HTTP: how every edge calls someone else's HTTP API (a webhook receiver, GitHub).

One answer to the same questions everywhere: which answers are worth another try (a failed
or timed-out connection, 408, 429, 5xx, and a 403 that is a rate limit), how long a rate
limit says to wait (`Retry-After`, or GitHub's `x-ratelimit-reset` once
`x-ratelimit-remaining` is 0; at most a minute), how the retries are paced (the listed waits
of bot/runtime/retry.py), what a request that must not run twice may retry (only what surely
did not reach the server), and how a URL is named in errors and logs (scheme and host: its
path or query is often a credential).

A shared base, not an edge: every adapter may import it (tests/architecture/test_architecture.py), and
it imports nothing of deploybot but bot.runtime.retry.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar
from urllib.parse import urlsplit

import httpx

from bot.runtime.retry import retrying

T = TypeVar("T")
RATE_LIMIT_CAP = 60.0  # seconds: the longest wait a rate limit is believed for


class Failed(Exception):
    """An answer that is not a success. `str()`: `HTTP <status>`, and the detail if one was
    read from the body; never the URL."""

    def __init__(self, response: httpx.Response, detail: str = "") -> None:
        super().__init__(f"HTTP {response.status_code}" + (f": {detail}" if detail else ""))
        self.response = response


class Retryable(Failed):
    """An answer worth trying again (408, 429, 5xx, a rate limit); after `wait` seconds when
    the answer said how long."""

    def __init__(self, response: httpx.Response, detail: str = "", wait: float | None = None) -> None:
        super().__init__(response, detail)
        self.wait = wait


class Refused(Failed):
    """An answer that will not change (any other 4xx, a redirect, an unexpected 2xx)."""


class Unsure(Exception):
    """A request that must not run twice failed in a way that leaves open whether the
    server acted on it (the connection broke after it was sent, a 5xx)."""


# What a delivery that gave up can have raised.
FAILURES: tuple[type[BaseException], ...] = (httpx.HTTPError, Failed, Unsure)


def where(url: str | httpx.URL) -> str:
    """A URL as events and logs name it: scheme and host only (its path is often a credential)."""
    parts = urlsplit(str(url))
    return f"{parts.scheme}://{parts.hostname or ''}{f':{parts.port}' if parts.port else ''}"


def describe(error: BaseException) -> str:
    """An outgoing request's failure in words, for logs and delivery_failed events: ours say
    the status; httpx's say their type (a ConnectError's text alone is often empty)."""
    return str(error) if isinstance(error, Failed | Unsure) else f"{type(error).__name__}: {error}"


def rate_limit_wait(response: httpx.Response, now: Callable[[], float] = time.time) -> float | None:
    """How long a 403 or 429 answer says to wait before trying again; None: it does not say
    (or it is no rate limit). `Retry-After` in seconds, else, when `x-ratelimit-remaining` is
    0, until `x-ratelimit-reset` (Unix seconds; at least a second). At most RATE_LIMIT_CAP."""
    if response.status_code not in (403, 429):
        return None
    if retry_after := response.headers.get("retry-after"):
        try:
            return min(max(float(retry_after), 0.0), RATE_LIMIT_CAP)
        except ValueError:
            return None  # an HTTP date: the listed wait applies
    if response.headers.get("x-ratelimit-remaining") == "0":
        try:
            reset = float(response.headers.get("x-ratelimit-reset", ""))
        except ValueError:
            reset = now() + 1
        return min(max(reset - now(), 1.0), RATE_LIMIT_CAP)
    return None


def rate_limited(response: httpx.Response) -> bool:
    """A 403 that is a rate limit (GitHub's primary and secondary limits), not a refusal."""
    return response.headers.get("x-ratelimit-remaining") == "0" or "retry-after" in response.headers


def check(response: httpx.Response, detail: Callable[[httpx.Response], str] | None = None) -> httpx.Response:
    """`response` if it is a success (2xx); else Retryable or Refused, saying `detail(response)`."""
    status = response.status_code
    if 200 <= status < 300:
        return response
    said = detail(response) if detail else ""
    if status in (408, 429) or status >= 500 or (status == 403 and rate_limited(response)):
        raise Retryable(response, said, rate_limit_wait(response))
    raise Refused(response, said)


async def retried(work: Callable[[], Awaitable[T]], waits: Sequence[float], what: str, log: logging.Logger) -> T:
    """`work()`, tried again after each of `waits` while it fails with a broken connection or
    a Retryable answer (after the wait a rate limit names, if it names one). When the tries
    run out the last failure is raised; any other failure at once."""
    async for attempt in retrying(
        waits, (httpx.TransportError, Retryable), what, log,
        wait_for=lambda e: e.wait if isinstance(e, Retryable) else None,
    ):
        with attempt:
            return await work()
    raise AssertionError("unreachable: retrying returns or raises")


async def request(
    client: httpx.AsyncClient,
    method: str,
    url: str,
    *,
    once: bool = False,
    detail: Callable[[httpx.Response], str] | None = None,
    **kwargs: Any,
) -> httpx.Response:
    """One request, its answer checked (Retryable, Refused). `once`: a request that must not
    run twice raises Unsure instead of Retryable or a transport error where the server may
    have acted on it; a refused connection or a rate limit it may still retry."""
    try:
        response = await client.request(method, url, **kwargs)
    except (httpx.ConnectError, httpx.ConnectTimeout):
        raise  # never reached the server
    except httpx.TransportError as e:
        if once:
            raise Unsure(repr(e)) from e
        raise
    if once and response.status_code >= 500 and rate_limit_wait(response) is None:
        raise Unsure(f"{response.status_code} from {where(response.request.url)}")
    return check(response, detail)
