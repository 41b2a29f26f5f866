"""This process's clock against the store's. Every expiry, reminder, schedule and timer is
read off the local clock (bot/runtime/clock.py) and compared with times other processes
recorded: a worker minutes behind expired each approval as it asked for it, one minutes
ahead expired the others'. Redis's TIME is the one clock every process shares, so each
process measures its offset from it at start and periodically, and runs no timed work while
the offset is beyond MAX_SKEW."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable

from bot.core import wording

log = logging.getLogger(__name__)

MAX_SKEW = 2.0  # seconds: well above a round trip to Redis, well below any expiry or reminder
SKEW_EVERY = 30.0  # seconds between measurements


class ClockCheck:
    """The offset of `local` (seconds since the epoch) from `server` (the store's, the same),
    measured by `check`. Until the first measurement the clock counts as unchecked: not ok."""

    def __init__(
        self, server: Callable[[], Awaitable[float]], local: Callable[[], float] = time.time,
        bound: float = MAX_SKEW,
    ) -> None:
        self.server, self.local, self.bound = server, local, bound
        self.skew: float | None = None  # the last offset measured: local minus the store's
        self.agrees = asyncio.Event()  # set while the clocks agree, for whoever waits for that

    @property
    def ok(self) -> bool:
        return self.skew is not None and abs(self.skew) <= self.bound

    def problem(self) -> str | None:
        """The sentence naming the offset, while it is beyond the bound."""
        if self.skew is None or self.ok:
            return None
        return wording.clock_skewed(self.skew, self.bound)

    async def check(self) -> float:
        """Measure the offset (against the middle of the round trip) and log when it crosses the bound."""
        before = self.local()
        server = await self.server()
        after = self.local()
        was = self.skew is None or self.ok
        self.skew = (before + after) / 2 - server
        if self.ok:
            self.agrees.set()
        else:
            self.agrees.clear()
        if was and not self.ok:
            log.error("%s", self.problem())
        elif not was and self.ok:
            log.warning("%s", wording.clock_back(self.skew))
        return self.skew

    async def watch(self, every: float = SKEW_EVERY) -> None:
        """Measure now and every `every` seconds; a store that does not answer keeps the last verdict."""
        while True:
            try:
                await self.check()
            except Exception as e:
                log.warning("measuring the clock against Redis's failed: %s", e)
                await asyncio.sleep(1)
                continue
            await asyncio.sleep(every)
