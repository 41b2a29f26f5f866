"""Keeping a lock (a deploy's, a run's lease) while it is used: renewed at a third of its TTL."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

log = logging.getLogger("bot.runtime.deploying")  # logged as the deploy path, where it began


async def keep_renewing(renew: Callable[[], Awaitable[bool]], ttl_ms: int, what: str, wait_first: bool = True) -> None:
    """Renew at a third of the TTL until cancelled; a failed renewal is logged, not fatal,
    so a Redis blip does not end the renewals for good."""
    if wait_first:
        await asyncio.sleep(ttl_ms / 3000)
    while True:
        try:
            if not await renew():
                log.error("lost %s to someone else", what)
        except Exception:
            log.exception("renewing %s failed", what)
        await asyncio.sleep(ttl_ms / 3000)


class Renewal:
    """keep_renewing(), started only when the first renewal is due: a run that ends sooner
    (nearly every run) never makes a task for it: less CPU per run. `cancel()` as a task's."""

    def __init__(self, renew: Callable[[], Awaitable[bool]], ttl_ms: int, what: str) -> None:
        self._task: asyncio.Task[None] | None = None
        self._handle = asyncio.get_running_loop().call_later(ttl_ms / 3000, self._start, renew, ttl_ms, what)

    def _start(self, renew: Callable[[], Awaitable[bool]], ttl_ms: int, what: str) -> None:
        self._task = asyncio.ensure_future(keep_renewing(renew, ttl_ms, what, wait_first=False))

    def cancel(self) -> None:
        self._handle.cancel()
        if self._task is not None:
            self._task.cancel()
