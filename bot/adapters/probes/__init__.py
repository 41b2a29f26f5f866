"""The checks of a deploy's verification (bot/core/verification.py), evaluated: a PromQL
query against a Prometheus server's HTTP API (`/api/v1/query`), and an HTTP endpoint that must
answer a status (and hold a text). Whatever cannot be evaluated (the server is down, answers
an error, the query has no result) is an Observation with `ok` None: never a pass."""

from __future__ import annotations

import math

import httpx

from bot.adapters.outbound import where as _site
from bot.core.events import VerifyCheck
from bot.core.verification import holds
from bot.runtime.ports import Observation

PROMETHEUS_TIMEOUT = 5.0  # seconds
BODY_LIMIT = 1_000_000  # bytes of an HTTP check's body read to look for `contains`


class HttpProbe:
    """Evaluates checks over HTTP; one client, kept open (`close` at shutdown)."""

    def __init__(self, client: httpx.AsyncClient | None = None) -> None:
        self.client = client or httpx.AsyncClient(follow_redirects=False)

    async def aclose(self) -> None:
        await self.client.aclose()

    async def observe(self, check: VerifyCheck) -> Observation:
        try:
            if check.kind == "prometheus":
                return await self._prometheus(check)
            return await self._http(check)
        except (httpx.HTTPError, ValueError, KeyError, TypeError, IndexError) as e:
            return Observation(None, f"no answer from {_site(check.url)}: {type(e).__name__}")

    async def _prometheus(self, check: VerifyCheck) -> Observation:
        url = check.url.rstrip("/") + "/api/v1/query"
        response = await self.client.get(url, params={"query": check.query}, timeout=PROMETHEUS_TIMEOUT)
        if response.status_code != 200:
            return Observation(None, f"no answer: {_site(check.url)} said HTTP {response.status_code}")
        body = response.json()
        if body.get("status") != "success":
            return Observation(None, f"no answer: the query failed ({str(body.get('error', ''))[:200]})")
        data = body["data"]
        if data["resultType"] == "scalar":
            values = [float(data["result"][1])]
        elif data["resultType"] == "vector":
            values = [float(series["value"][1]) for series in data["result"]]
        else:
            return Observation(None, f"no answer: a {data['resultType']} is not a number")
        values = [v for v in values if not math.isnan(v)]
        if not values:
            return Observation(None, "no answer: the query has no result")
        # Every series must meet the condition; the one shown is the first that does not.
        bad = next((v for v in values if not holds(check.condition, v)), None)
        shown = bad if bad is not None else values[0]
        return Observation(bad is None, f"{shown:g}")

    async def _http(self, check: VerifyCheck) -> Observation:
        async with self.client.stream("GET", check.url, timeout=check.timeout) as response:
            body = b""
            async for chunk in response.aiter_bytes():
                body += chunk
                if len(body) >= BODY_LIMIT:
                    break
        if response.status_code != check.status:
            return Observation(False, f"HTTP {response.status_code}, not {check.status}")
        if check.contains and check.contains not in body.decode("utf-8", "replace"):
            return Observation(False, f"HTTP {response.status_code} without {check.contains!r}")
        return Observation(True, f"HTTP {response.status_code}")
