"""DeployQueue, as RedisDeployQueue (bot/adapters/redis/timers.py): tests/runtime/ports holds the two to the
same cases."""

from __future__ import annotations

import asyncio
from datetime import datetime


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
