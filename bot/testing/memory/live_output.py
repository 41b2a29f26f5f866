"""A running deploy's output in memory (bot.runtime.ports.LiveOutput), as the Redis adapter
keeps it: the newest LIVE_LINES lines a deploy, each cut to LINE_CHARS."""

from __future__ import annotations

from collections.abc import Sequence

from bot.runtime.ports.output import LINE_CHARS, LIVE_LINES
from bot.testing.memory.server import round_trip


class MemoryLiveOutput:
    def __init__(self) -> None:
        self.lines: dict[str, list[str]] = {}

    async def append(self, deploy_id: str, lines: Sequence[str]) -> None:
        await round_trip()
        if lines:
            kept = self.lines.setdefault(deploy_id, [])
            kept.extend(line[:LINE_CHARS] for line in lines)
            del kept[:-LIVE_LINES]

    async def tail(self, deploy_id: str) -> list[str]:
        await round_trip()
        return list(self.lines.get(deploy_id, []))
