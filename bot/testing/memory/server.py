"""What every fake does as a server would: an operation yields to the event loop once first,
like a round trip (so concurrent callers interleave between operations as they do against
a server), and keys may expire, as SET ... PX makes them (`Expiry`)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from bot.testing.memory.clock import Monotonic


async def round_trip() -> None:
    await asyncio.sleep(0)


@dataclass
class _Expiring:
    value: str
    expires: float | None  # None: never


class Expiry:
    """Keys with optional TTLs, read against a monotonic clock (what SET ... PX does)."""

    def __init__(self, clock: Monotonic) -> None:
        self.clock = clock
        self.items: dict[object, _Expiring] = {}

    def get(self, key: object) -> str | None:
        item = self.items.get(key)
        if item is None:
            return None
        if item.expires is not None and self.clock() >= item.expires:
            del self.items[key]
            return None
        return item.value

    def set(self, key: object, value: str, ttl_seconds: float | None) -> None:
        expires = None if ttl_seconds is None else self.clock() + ttl_seconds
        self.items[key] = _Expiring(value, expires)

    def expire(self, key: object, ttl_seconds: float) -> bool:
        if self.get(key) is None:
            return False
        self.items[key].expires = self.clock() + ttl_seconds
        return True

    def delete(self, key: object) -> None:
        self.items.pop(key, None)
