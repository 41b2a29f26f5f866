"""A deploy command's output as it comes: read in chunks (never whole, so a command printing
gigabytes costs a few kilobytes), its newest lines kept for the deploy's result, and every line
passed on to the live output the console shows (a batch at most every FLUSH_SECONDS, so a
chatty command costs Redis a round trip per half second, not per line)."""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque

from bot.runtime.ports import LiveOutput

log = logging.getLogger(__name__)

FLUSH_SECONDS = 0.5
LONGEST_LINE = 4096  # bytes: a longer line is cut here, the rest of it dropped (binary noise)
CHUNK = 65536


class Lines:
    """What one deploy printed so far: the newest `kept` lines, and the batch not yet passed on."""

    def __init__(self, kept: int) -> None:
        self.newest: deque[str] = deque(maxlen=kept + 50)  # room for trailing blank lines
        self.batch: list[str] = []
        self.pending = b""  # a line begun, not yet ended
        self.cut = False  # the line going on was cut at LONGEST_LINE: the rest of it is dropped

    def add(self, chunk: bytes) -> None:
        if self.cut:
            end = chunk.find(b"\n")
            if end < 0:
                return
            self.cut, chunk = False, chunk[end + 1:]
        self.pending += chunk
        *ended, self.pending = self.pending.split(b"\n")
        for raw in ended:
            self._line(raw[:LONGEST_LINE])
        if len(self.pending) > LONGEST_LINE:
            self._line(self.pending[:LONGEST_LINE])
            self.pending, self.cut = b"", True

    def end(self) -> None:
        if self.pending:
            self._line(self.pending)
            self.pending = b""

    def _line(self, raw: bytes) -> None:
        for line in raw.decode(errors="replace").splitlines() or [""]:
            self.newest.append(line)
            self.batch.append(line)

    def tail(self, kept: int) -> str:
        return "\n".join("\n".join(self.newest).rstrip().splitlines()[-kept:])


async def read_all(stream: asyncio.StreamReader, lines: Lines, deploy_id: str, live: LiveOutput | None) -> None:
    """Read `stream` to its end into `lines`, passing batches to `live` as they come."""
    passed_at = time.monotonic()
    while True:
        waiting = FLUSH_SECONDS if lines.batch else None
        try:
            chunk = await asyncio.wait_for(stream.read(CHUNK), waiting)
        except TimeoutError:
            chunk = None  # quiet for a while: what came before is passed on now
        if chunk == b"":
            break
        if chunk:
            lines.add(chunk)
        if lines.batch and (chunk is None or time.monotonic() - passed_at >= FLUSH_SECONDS):
            await _pass_on(lines, deploy_id, live)
            passed_at = time.monotonic()
    lines.end()
    await _pass_on(lines, deploy_id, live)


async def _pass_on(lines: Lines, deploy_id: str, live: LiveOutput | None) -> None:
    batch, lines.batch = lines.batch, []
    if live is None or not batch:
        return
    try:
        await live.append(deploy_id, batch)
    except Exception:  # the console shows less; the deploy goes on
        log.warning("deploy %s: could not pass its output on to the console", deploy_id, exc_info=True)
