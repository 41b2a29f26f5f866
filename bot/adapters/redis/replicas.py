"""WAIT for a replica after a write that must survive a failover.

Redis replication is asynchronous: a master acknowledges a write before any replica has it,
so a failover can lose the last writes. For the facts a thread cannot lose (a person's
decision, `deploy_started`, a deploy's result, and every other event appended to a thread),
the thread store asks for `WAIT 1 <timeout>` after the write when the master has a replica
connected, so the write is acknowledged once a replica holds it too.

WAIT counts the replicas that have everything *this connection* wrote, so it is sent on the
write's own connection: the write and the WAIT go out as one pipeline (one round trip).
Whether replicas exist is read from ROLE at most once a `every` seconds; without one, no WAIT
is sent (it would only block for its timeout). A WAIT that times out is logged, never an
error: the write happened, and refusing it would not undo it.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from redis.asyncio import Redis
from redis.exceptions import NoScriptError, ResponseError

from bot.adapters.redis import scripts
from bot.adapters.redis.replies import text

log = logging.getLogger(__name__)


class Replicas:
    def __init__(
        self, redis: Redis, wait_ms: int = 500, every: float = 1.0, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.redis, self.wait_ms, self.every, self.clock = redis, wait_ms, every, clock
        self._present = False
        self._checked: float | None = None

    async def timeout_ms(self) -> int:
        """The WAIT timeout to use now: `wait_ms` while the master has a replica, else 0."""
        now = self.clock()
        if self._checked is None or now - self._checked >= self.every:
            self._checked = now  # one look per period, however many writes ask at once
            try:
                role = await self.redis.role()
            except ResponseError as e:  # ROLE refused (an ACL): no WAIT, as without replicas
                log.warning("cannot tell whether Redis has replicas (%s); writes do not WAIT", e)
                self._present = False
            else:
                self._present = bool(role) and text(role[0]) == "master" and bool(role[2])
        return self.wait_ms if self._present else 0

    async def script(self, source: str, keys: list[str], *args: Any, what: str) -> Any:
        """Run the script (see bot/adapters/redis/scripts.py), then WAIT on the same connection when
        there is a replica to wait for; the script's reply."""
        timeout = await self.timeout_ms()
        if not timeout:
            return await scripts.run(self.redis, source, keys, *args)
        for _ in range(2):
            async with self.redis.pipeline(transaction=False) as pipe:
                pipe.evalsha(scripts.sha(source), len(keys), *keys, *args)
                pipe.wait(1, timeout)
                reply, acked = await pipe.execute(raise_on_error=False)
            if not isinstance(reply, NoScriptError):
                break
            await self.redis.script_load(source)  # a promoted replica may not have it cached
        if isinstance(reply, Exception):
            raise reply
        self.acked(acked, what)
        return reply

    def acked(self, reply: object, what: str) -> None:
        """Log when no replica acknowledged the write (WAIT's reply: how many did)."""
        if isinstance(reply, Exception):
            log.warning("%s: WAIT failed (%s); a failover now could lose the write", what, reply)
        elif isinstance(reply, int) and reply < 1:
            log.warning(
                "%s: no replica acknowledged the write within %d ms; a failover before it replicates would lose it",
                what, self.wait_ms,
            )
