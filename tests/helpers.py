"""Small helpers shared by scenario tests."""

from __future__ import annotations

import asyncio
import inspect
import json
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import httpx

from bot.testing.cluster import ledger_lines  # noqa: F401 (shared by the tests)

SETTLED = {"waiting_for_sender", "waiting_for_approval", "waiting_for_human", "done", "failed", "cancelled"}

T = TypeVar("T")


async def eventually(
    predicate: Callable[[], T | Awaitable[T]], within: float = 5.0, every: float = 0.02,
    message: str | Callable[[], str] | None = None,
) -> T:
    """Call `predicate` (plain or async) every `every` seconds until it returns something
    truthy, and return that. After `within` seconds fail with AssertionError, saying what
    was waited for (`message`, or else the predicate's source): no wait in a test hangs."""
    deadline = time.monotonic() + within
    while True:
        answer = predicate()
        result = await answer if inspect.isawaitable(answer) else answer
        if result:
            return result
        if time.monotonic() >= deadline:
            said = message() if callable(message) else message
            raise AssertionError(f"still not true after {within}s: {said or _source(predicate)}")
        await asyncio.sleep(every)


def _source(predicate: Callable[..., object]) -> str:
    try:
        return inspect.getsource(predicate).strip()
    except (OSError, TypeError):
        return repr(predicate)


async def settle(client: httpx.AsyncClient, thread_id: str, within: float = 20) -> dict[str, Any]:
    """Poll the API until the thread stops running; return its JSON."""
    deadline = time.monotonic() + within
    while True:
        body = (await client.get(f"/threads/{thread_id}")).json()
        if body["status"] in SETTLED:
            return body
        if time.monotonic() > deadline:
            raise AssertionError(f"thread still {body['status']} after {within}s: {body['events']}")
        await asyncio.sleep(0.05)


def types(thread: dict[str, Any]) -> list[str]:
    return [e["type"] for e in thread["events"]]


def reply(**step: Any) -> str:
    """A model reply the way chatty models write one: prose, then fenced JSON."""
    return f"Sure, here is the next step.\n```json\n{json.dumps(step)}\n```"
