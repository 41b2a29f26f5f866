"""The checks of a deploy's verification (bot/core/verification.py), evaluated: a PromQL
query against a Prometheus server's HTTP API (`/api/v1/query`), and an HTTP endpoint that must
answer a status (and hold a text). Whatever cannot be evaluated (the server is down, answers
an error, the query has no result, or a value that is no number: NaN, ±Inf; an answer too big
to read) is an Observation with `ok` None: never a pass. How long a round may take is the
runner's to bound (bot/runtime/verifying.py): httpx's timeouts are per read, and a server that
drips a byte at a time never trips them."""

from __future__ import annotations

import asyncio
import json
import math
from typing import Any

import httpx

from bot.adapters.outbound import where as _site
from bot.core import wording
from bot.core.events import VerifyCheck
from bot.core.verification import holds
from bot.runtime.ports import Observation

__all__ = ["ANSWER_LIMIT", "BODY_LIMIT", "PROMETHEUS_TIMEOUT", "HttpProbe"]

PROMETHEUS_TIMEOUT = 5.0  # seconds
ANSWER_LIMIT = 1_000_000  # bytes of a Prometheus answer: past it, the answer is refused unread
BODY_LIMIT = 1_000_000  # bytes of an HTTP check's body read to look for `contains`


class HttpProbe:
    """Evaluates checks over HTTP; one client, kept open (`close` at shutdown)."""

    def __init__(self, client: httpx.AsyncClient | None = None, answer_limit: int = ANSWER_LIMIT) -> None:
        self.client = client or httpx.AsyncClient(follow_redirects=False)
        self.answer_limit = answer_limit

    async def aclose(self) -> None:
        await self.client.aclose()

    async def observe(self, check: VerifyCheck) -> Observation:
        try:
            if check.kind == "prometheus":
                return await self._prometheus(check)
            return await self._http(check)
        except (httpx.HTTPError, ValueError, KeyError, TypeError, IndexError, RecursionError) as e:
            # RecursionError: JSON nested deeper than the parser goes.
            return Observation(None, wording.check_unreachable(_site(check.url), type(e).__name__))

    async def _prometheus(self, check: VerifyCheck) -> Observation:
        url = check.url.rstrip("/") + "/api/v1/query"
        async with self.client.stream("GET", url, params={"query": check.query}, timeout=PROMETHEUS_TIMEOUT) as answer:
            if answer.status_code != 200:
                return Observation(None, wording.query_refused(_site(check.url), answer.status_code))
            raw = await _read(answer, self.answer_limit)
        if raw is None:
            return Observation(None, wording.check_too_big(_site(check.url), self.answer_limit))
        # Off the event loop: even a megabyte of JSON stalls every other run while it parses.
        values = await asyncio.to_thread(_values, raw)
        if isinstance(values, str):
            return Observation(None, values)
        # Every series must meet the condition; the one shown is the first that does not.
        bad = next((v for v in values if not holds(check.condition, v)), None)
        shown = bad if bad is not None else values[0]
        return Observation(bad is None, f"{shown:g}")

    async def _http(self, check: VerifyCheck) -> Observation:
        async with self.client.stream("GET", check.url, timeout=check.timeout) as response:
            body = bytearray()
            async for chunk in response.aiter_bytes():
                body += chunk
                if len(body) >= BODY_LIMIT:
                    break
        if response.status_code != check.status:
            return Observation(False, wording.http_check_status(response.status_code, check.status))
        if check.contains and check.contains not in body.decode("utf-8", "replace"):
            return Observation(False, wording.http_check_without(response.status_code, check.contains))
        return Observation(True, wording.http_check_answered(response.status_code))


async def _read(response: httpx.Response, limit: int) -> bytes | None:
    """The whole body, or None as soon as it is past `limit` bytes (said by its length, or
    seen while streaming it): a huge answer is never held in memory."""
    declared = response.headers.get("Content-Length", "")
    if declared.isdigit() and int(declared) > limit:
        return None
    body = bytearray()
    async for chunk in response.aiter_bytes():
        body += chunk
        if len(body) > limit:
            return None
    return bytes(body)


def _values(raw: bytes) -> list[float] | str:
    """A Prometheus answer's numbers, one per series; or why it has none to judge by (a
    sentence for people). A NaN or an infinity in any series leaves the whole check
    unanswered: it meets no condition, and dropping it would judge by the other series alone."""
    body: Any = json.loads(raw)
    if not isinstance(body, dict):
        raise TypeError("the answer is not a JSON object")
    if body.get("status") != "success":
        return wording.query_failed(str(body.get("error", "")))
    data = body["data"]
    if data["resultType"] == "scalar":
        values = [float(data["result"][1])]
    elif data["resultType"] == "vector":
        values = [float(series["value"][1]) for series in data["result"]]
    else:
        return wording.query_not_a_number(str(data["resultType"]))
    if not values:
        return wording.query_without_result()
    odd = next((v for v in values if not math.isfinite(v)), None)
    if odd is not None:
        return wording.query_not_finite(_prometheus_spelling(odd))
    return values


def _prometheus_spelling(value: float) -> str:
    if math.isnan(value):
        return "NaN"
    return "+Inf" if value > 0 else "-Inf"
