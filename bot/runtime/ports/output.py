"""A running deploy's output, as it comes: the worker running the deploy command appends its
lines; the console shows the newest of them while the deploy runs. Bounded (the newest
LIVE_LINES lines a deploy, each cut to LINE_CHARS) and short-lived: the deploy's result keeps
its own tail for good."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

LIVE_LINES = 200
LINE_CHARS = 500
LIVE_SECONDS = 24 * 3600  # kept this long after the last line came


class LiveOutput(Protocol):
    async def append(self, deploy_id: str, lines: Sequence[str]) -> None:
        """Add `lines` (each cut to LINE_CHARS) after what `deploy_id` printed so far, keeping
        the newest LIVE_LINES."""
        ...

    async def tail(self, deploy_id: str) -> list[str]:
        """The newest lines `deploy_id` printed, oldest first; [] for one that printed nothing
        (or long ago)."""
        ...
