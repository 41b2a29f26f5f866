"""GitHub's REST API, as everything in deploybot that talks to GitHub talks to it: one base
URL, one set of headers (the token, the media type, the pinned API version), no redirects
followed, answers checked and retried as bot/adapters/outbound.py says (rate limits
included), pages followed by their `next` links.

A shared base, not an edge: the GitHub deployer and the GitHub Deployments channel both use
it (tests/architecture/test_architecture.py allows it to every adapter).
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator, Callable, Sequence
from datetime import datetime
from functools import partial
from typing import Any

import httpx
import jwt

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
        # answer, costing GitHub nothing from the rate limit and us no parsing of a list.
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


# --- deploybot as a GitHub App ------------------------------------------------------------

JWT_BACKDATE = 60  # seconds: GitHub's advice against clock drift (iat 60 s in the past)
JWT_LIFETIME = 540  # seconds after iat: GitHub refuses an app JWT living over 10 minutes
TOKEN_MARGIN = 300  # seconds: an installation token is renewed this long before it expires


class AppAuth:
    """Who deploybot is to GitHub as an App: a short-lived RS256 JWT signed with the App's
    private key (PyJWT), exchanged for an installation access token per installation
    (`POST /app/installations/{id}/access_tokens`), cached until TOKEN_MARGIN before its
    `expires_at`. The key never leaves this object; the tokens only go to `api_url`."""

    def __init__(self, app_id: int, private_key: str, api_url: str = API_URL, timeout: float = 10.0,
                 clock: Callable[[], float] = time.time) -> None:
        self.app_id, self._key = app_id, private_key
        self.api_url = api_url.rstrip("/")
        self._clock = clock
        self.http = httpx.AsyncClient(base_url=self.api_url, timeout=timeout, follow_redirects=False)
        self._tokens: dict[int, tuple[str, float]] = {}  # installation -> (token, expires at, Unix seconds)

    def jwt(self) -> str:
        now = int(self._clock())
        claims = {"iat": now - JWT_BACKDATE, "exp": now - JWT_BACKDATE + JWT_LIFETIME, "iss": str(self.app_id)}
        return jwt.encode(claims, self._key, algorithm="RS256")

    async def token(self, installation: int) -> str:
        """The installation's access token, from the cache while it has TOKEN_MARGIN left."""
        cached = self._tokens.get(installation)
        if cached is not None and cached[1] - TOKEN_MARGIN > self._clock():
            return cached[0]
        app_headers = headers(self.jwt())
        response = await outbound.request(self.http, "POST", f"/app/installations/{installation}/access_tokens",
                                          detail=message, headers=app_headers)
        body = response.json()
        expires = datetime.fromisoformat(str(body["expires_at"]).replace("Z", "+00:00")).timestamp()
        self._tokens[installation] = (str(body["token"]), expires)
        return str(body["token"])

    def forget(self, installation: int) -> None:
        """Drop a token GitHub refused (revoked, the App reinstalled): the next call gets a new one."""
        self._tokens.pop(installation, None)

    async def post(self, installation: int, path: str, body: dict[str, Any]) -> httpx.Response:
        """POST `body` to `path` on the API as the installation; answers checked as `request`."""
        token = await self.token(installation)
        try:
            return await outbound.request(self.http, "POST", path, detail=message, headers=headers(token), json=body)
        except outbound.Refused as e:
            if e.response.status_code == 401:
                self.forget(installation)
            raise

    async def get(self, installation: int, path: str, **params: Any) -> httpx.Response:
        token = await self.token(installation)
        return await outbound.request(self.http, "GET", path, detail=message, headers=headers(token), params=params)

    async def aclose(self) -> None:
        await self.http.aclose()
