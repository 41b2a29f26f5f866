"""The time the fakes read: a monotonic clock in seconds, injectable, and one a test moves on
by hand (`ManualClock`) instead of sleeping."""

from __future__ import annotations

from collections.abc import Callable

Monotonic = Callable[[], float]  # seconds, like time.monotonic


class ManualClock:
    """A monotonic clock that moves only when told to."""

    def __init__(self, start: float = 1000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds
