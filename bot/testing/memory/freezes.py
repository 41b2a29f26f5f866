"""Stop-the-line freezes in memory: RedisFreezes' behaviour (tests/runtime/ports/test_freezes.py
holds the two to the same cases), for unit tests."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from bot.core.freeze_windows import Freeze
from bot.runtime.clock import utcnow


class MemoryFreezes:
    def __init__(self, clock: Callable[[], datetime] = utcnow) -> None:
        self.clock = clock
        self.freezes: dict[str, Freeze] = {}

    async def set(self, freeze: Freeze) -> None:
        if freeze.kind != "stop-the-line":  # as RedisFreezes
            raise ValueError(
                f"only stop-the-line freezes are stored: a {freeze.kind} freeze is written in deploybot.toml"
            )
        self.freezes[freeze.scope] = freeze

    async def lift(self, scope: str) -> bool:
        freeze = self.freezes.pop(scope, None)
        return freeze is not None and not freeze.over(self.clock())

    async def current(self) -> list[Freeze]:
        now = self.clock()
        for scope in [s for s, f in self.freezes.items() if f.over(now)]:
            del self.freezes[scope]
        return [self.freezes[scope] for scope in sorted(self.freezes)]
