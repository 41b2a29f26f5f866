"""Timers, as RedisTimers (bot/adapters/redis/timers.py): tests/runtime/ports holds the two to the same cases."""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta


class MemoryTimers:
    def __init__(self) -> None:
        self.due_at: dict[str, datetime] = {}

    async def set(self, thread_id: str, due: datetime | None) -> None:
        await asyncio.sleep(0)
        if due is None:
            self.due_at.pop(thread_id, None)
        else:
            self.due_at[thread_id] = due

    async def due(self, now: datetime, lease_ms: int, limit: int) -> list[str]:
        await asyncio.sleep(0)
        taken = sorted((at, tid) for tid, at in self.due_at.items() if at <= now)[:limit]
        for _, tid in taken:
            self.due_at[tid] = now + timedelta(milliseconds=lease_ms)
        return [tid for _, tid in taken]
