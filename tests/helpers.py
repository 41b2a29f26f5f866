"""Small helpers shared by scenario tests."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import httpx

from bot.testing.cluster import ledger_lines  # noqa: F401 (shared by the tests)

SETTLED = {"waiting_for_approval", "waiting_for_human", "done", "failed", "cancelled"}


async def settle(client: httpx.AsyncClient, thread_id: str, timeout: float = 20) -> dict[str, Any]:
    """Poll the API until the thread stops running; return its JSON."""
    deadline = time.monotonic() + timeout
    while True:
        body = (await client.get(f"/threads/{thread_id}")).json()
        if body["status"] in SETTLED:
            return body
        if time.monotonic() > deadline:
            raise AssertionError(f"thread still {body['status']} after {timeout}s: {body['events']}")
        await asyncio.sleep(0.05)


def types(thread: dict[str, Any]) -> list[str]:
    return [e["type"] for e in thread["events"]]


def reply(**step: Any) -> str:
    """A model reply the way chatty models write one: prose, then fenced JSON."""
    return f"Sure, here is the next step.\n```json\n{json.dumps(step)}\n```"
