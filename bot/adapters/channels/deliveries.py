"""What the channels that deliver in the background share (outgoing webhooks, GitHub
Deployments, email): the sending tasks a slow receiver never holds up a run with, `drain` to
wait for them, and the tail of a delivery that keeps failing: logged, and recorded on its
thread as a delivery_failed event (the thread keeps its events; the deploy is never affected).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from typing import Any

from bot.adapters import outbound
from bot.core.events import DeliveryFailed, Event

log = logging.getLogger(__name__)
REASON_MAX = 300  # a delivery_failed event's reason, at most

Record = Callable[[str, Sequence[Event]], Awaitable[object]]  # ThreadService.record


class Deliveries:
    """The background sends of one channel (`channel`: a delivery_failed event's channel)."""

    def __init__(self, channel: str, record: Record) -> None:
        self.channel, self.record = channel, record
        self.sending: set[asyncio.Task[None]] = set()

    def spawn(self, work: Coroutine[Any, Any, None]) -> asyncio.Task[None]:
        """Run `work` in the background, kept until it is done (for `drain`)."""
        task = asyncio.create_task(work)
        self.sending.add(task)
        task.add_done_callback(self.sending.discard)
        return task

    async def drain(self) -> None:
        """Wait until every send, and every send started meanwhile, is over."""
        while self.sending:
            await asyncio.gather(*list(self.sending), return_exceptions=True)

    async def retried(
        self,
        thread_id: str,
        to: str,
        what: str,
        work: Callable[[], Awaitable[None]],
        waits: Sequence[float],
        reason: Callable[[int, str], str],
    ) -> None:
        """`work()` with outbound's retries; when it fails for good, logged and recorded as
        failed for `to`, `reason(attempts, why)` saying why."""
        attempts = 0

        async def attempt() -> None:
            nonlocal attempts
            attempts += 1
            await work()

        try:
            await outbound.retried(attempt, waits, what, log)
        except outbound.FAILURES as e:
            why = outbound.describe(e)
            log.error("thread %s: %s failed: %s", thread_id, what, why)
            await self.failed(thread_id, to, reason(attempts, why), what)

    async def failed(self, thread_id: str, to: str, reason: str, what: str) -> None:
        """Record on the thread that `what` to `to` was not delivered; a failure to record
        is logged, never raised (it runs in a background task)."""
        event = DeliveryFailed(channel=self.channel, to=to, reason=reason[:REASON_MAX])
        try:
            await self.record(thread_id, [event])
        except Exception:
            log.exception("thread %s: recording that %s failed also failed", thread_id, what)
