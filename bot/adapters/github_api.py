"""GitHub's REST API, as everything in deploybot that talks to GitHub talks to it: one base
URL, one set of headers (the token, the media type, the pinned API version), no redirects
followed, answers checked and retried as bot/adapters/outbound.py says (rate limits
included), pages followed by their `next` links.

A shared base, not an edge: the GitHub deployer and the GitHub Deployments channel both use
it (tests/test_architecture.py allows it to every adapter).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Sequence
from functools import partial
from typing import Any

import httpx

from bot.adapters import outbound

API_URL = "https://api.github.com"
API_VERSION = "2022-11-28"
PER_PAGE = 100


def headers(token: str) -> dict[str, str]:
    return {
        "Authorization": f"Bearer {token}",
        "Accept": "application/vnd.github+json",
        "X-GitHub-Api-Version": API_VERSION,
        "User-Agent": "deploybot",
    }


def message(response: httpx.Response) -> str:
    """The `message` GitHub's error bodies carry (at most 200 characters)."""
    try:
        body = response.json()
    except ValueError:
        return response.text[:200]
    return str(body.get("message", ""))[:200] if isinstance(body, dict) else ""


class GitHub:
    def __init__(self, token: str, api_url: str = API_URL, timeout: float = 10.0) -> None:
        self.http = httpx.AsyncClient(
            base_url=api_url.rstrip("/"), timeout=timeout, follow_redirects=False, headers=headers(token),
        )
        # URL -> (ETag, the answer it came with): a conditional GET answered 304 reuses the
        # answer, costing GitHub nothing from the rate limit and us no parsing of a list (issue 29).
        self._seen: dict[str, tuple[str, httpx.Response]] = {}

    @property
    def base_url(self) -> httpx.URL:
        return self.http.base_url

    async def request(self, method: str, path: str, *, once: bool = False, **kwargs: Any) -> httpx.Response:
        """One call, its answer checked: outbound.Retryable or outbound.Refused (saying
        GitHub's message) unless it is a success. `once`: see outbound.request."""
        return await outbound.request(self.http, method, path, once=once, detail=message, **kwargs)

    async def call(
        self, method: str, path: str, waits: Sequence[float], log: logging.Logger, *, once: bool = False,
        **kwargs: Any,
    ) -> httpx.Response:
        """request(), retried after each of `waits` (and as long as a rate limit says)."""
        return await outbound.retried(
            lambda: self.request(method, path, once=once, **kwargs), waits, f"GitHub {method} {path}", log,
        )

    async def pages(
        self, path: str, waits: Sequence[float], log: logging.Logger, *, conditional: bool = False, **params: Any
    ) -> AsyncIterator[httpx.Response]:
        """Every page of a list, `PER_PAGE` at a time, following the `next` links.
        `conditional`: each page asked with the ETag it last came with (see `unchanged`)."""
        url: str | None = path
        query: dict[str, Any] | None = {"per_page": PER_PAGE, **params}
        while url:
            if conditional:
                response = await outbound.retried(partial(self.unchanged, url, query), waits, f"GitHub GET {url}", log)
            else:
                response = await self.call("GET", url, waits, log, params=query)
            yield response
            url, query = response.links.get("next", {}).get("url"), None  # the link carries the query

    async def unchanged(self, url: str, params: dict[str, Any] | None = None) -> httpx.Response:
        """GET `url` with If-None-Match: the answer kept from last time when GitHub says 304
        (not modified), else the new answer (checked as `request` checks), kept with its ETag."""
        key = str(self.http.build_request("GET", url, params=params).url)
        known = self._seen.get(key)
        response = await self.http.get(url, params=params, headers={"If-None-Match": known[0]} if known else None)
        if response.status_code == 304 and known is not None:
            return known[1]
        response = outbound.check(response, message)
        if etag := response.headers.get("ETag"):
            self._seen[key] = (etag, response)
        return response

    async def aclose(self) -> None:
        await self.http.aclose()
