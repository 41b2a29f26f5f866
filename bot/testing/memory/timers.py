"""In-memory Timers and DeployQueue, as bot/adapters/redis/timers.py (contract: tests/contract)."""

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


class MemoryDeployQueue:
    def __init__(self) -> None:
        self.lines: dict[tuple[str, str], dict[str, datetime]] = {}

    async def join(self, environment: str, service: str, deploy_id: str, at: datetime) -> int:
        await asyncio.sleep(0)
        line = self.lines.setdefault((environment, service), {})
        line.setdefault(deploy_id, at)
        return sorted(line, key=lambda d: (line[d], d)).index(deploy_id) + 1

    async def leave(self, environment: str, service: str, deploy_id: str) -> bool:
        await asyncio.sleep(0)
        return self.lines.get((environment, service), {}).pop(deploy_id, None) is not None

    async def first(self, environment: str, service: str) -> str | None:
        await asyncio.sleep(0)
        line = self.lines.get((environment, service), {})
        return min(line, key=lambda d: (line[d], d)) if line else None
