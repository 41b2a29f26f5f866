"""Locks and History, as RedisEnvironments: tests/runtime/ports holds the two to the same cases."""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Iterable
from dataclasses import replace
from datetime import datetime
from typing import Any

from bot.runtime.ports import DeployRecord, Lock
from bot.testing.memory.clock import Monotonic
from bot.testing.memory.server import Expiry, round_trip

HISTORY_SCAN = 5000  # as RedisEnvironments: a search by service looks through this many


class MemoryEnvironments:
    """Locks (one owner per environment, or per service there; optional TTL, owner-checked
    renew and release) and History (newest first, capped per environment), as
    RedisEnvironments."""

    def __init__(self, clock: Monotonic = time.monotonic) -> None:
        self.clock = clock
        self._locks: dict[tuple[str, str], Lock] = {}
        self._held = Expiry(clock)  # (environment, service) -> owner, with the lock's TTL
        self._history: dict[str, deque[DeployRecord]] = {}
        self._faulty: set[str] = set()
        self._verdicts: dict[str, dict[str, Any]] = {}  # deploy id -> its verification's fields

    def _holder(self, environment: str, service: str = "") -> Lock | None:
        key = (environment, service)
        if self._held.get(key) is None:
            self._locks.pop(key, None)
            return None
        return self._locks[key]

    async def acquire(self, lock: Lock, ttl_ms: int | None) -> Lock | None:
        await round_trip()
        env = self._holder(lock.environment) if lock.service else None
        if env is not None and env.owner != lock.owner:
            return env
        key = (lock.environment, lock.service)
        held = self._holder(*key)
        if held is None:
            self._locks[key] = lock
            self._held.set(key, lock.owner, None if ttl_ms is None else ttl_ms / 1000)
            return None
        if held.owner == lock.owner:
            if ttl_ms:
                self._held.expire(key, ttl_ms / 1000)
            return None
        return held

    async def renew(self, environment: str, owner: str, ttl_ms: int, service: str = "") -> bool:
        await round_trip()
        held = self._holder(environment, service)
        if held is None or held.owner != owner:
            return False
        return self._held.expire((environment, service), ttl_ms / 1000)

    async def release(self, environment: str, owner: str | None, service: str = "") -> bool:
        await round_trip()
        held = self._holder(environment, service)
        if held is None or (owner and held.owner != owner):
            return False
        self._held.delete((environment, service))
        self._locks.pop((environment, service), None)
        return True

    async def hand_over(self, lock: Lock, from_owner: str) -> bool:
        await round_trip()
        key = (lock.environment, lock.service)
        held = self._holder(*key)
        if held is None or held.owner != from_owner:
            return False
        self._locks[key] = lock
        self._held.set(key, lock.owner, None)
        return True

    async def holder(self, environment: str, service: str = "") -> Lock | None:
        await round_trip()
        return self._holder(environment) or (self._holder(environment, service) if service else None)

    async def held(self, environment: str, services: Iterable[str]) -> list[Lock]:
        await round_trip()
        found = (self._holder(environment, s) for s in ("", *services))
        return [lock for lock in found if lock is not None]

    async def record(self, entry: DeployRecord) -> None:
        await round_trip()
        self._history.setdefault(entry.environment, deque()).appendleft(entry)

    async def recent(self, environment: str, limit: int, service: str | None = None) -> list[DeployRecord]:
        await round_trip()
        scanned = list(self._history.get(environment, ()))[:HISTORY_SCAN if service else limit]
        found = [self._marked(r)
                 for r in scanned if service is None or r.service == service]
        return found[:limit]

    async def page(
        self, environment: str, limit: int, cursor: str | None = None, service: str | None = None
    ) -> tuple[list[DeployRecord], str | None]:
        await round_trip()
        records = list(self._history.get(environment, ()))
        start = 0
        if cursor is not None:
            if not cursor.startswith("h:"):
                raise ValueError("not a cursor from this listing")
            start = next((i + 1 for i, r in enumerate(records) if r.deploy_id == cursor[2:]), len(records))
        found = [self._marked(r)
                 for r in records[start:] if service is None or r.service == service][:limit + 1]
        shown = found[:limit]
        return shown, f"h:{shown[-1].deploy_id}" if len(found) > limit else None

    async def expire(self, environment: str, before: datetime, limit: int, dry_run: bool = False) -> int:
        await round_trip()
        records = self._history.get(environment, deque())
        old = 0
        for r in reversed(records):
            if r.at >= before or old == limit:
                break
            old += 1
        if not dry_run:
            for _ in range(old):
                records.pop()
        return old

    async def mark_faulty(self, environment: str, deploy_id: str) -> None:
        await round_trip()
        self._faulty.add(deploy_id)

    async def since(self, environment: str, after: datetime, limit: int) -> list[DeployRecord]:
        await round_trip()
        found = []
        for r in self._history.get(environment, ()):  # newest first, as RedisEnvironments
            if r.at < after or len(found) == limit:
                break
            found.append(self._marked(r))
        return found
    async def mark_verified(self, environment: str, deploy_id: str, at: datetime, by: str = "") -> None:
        await round_trip()
        self._verdicts[deploy_id] = {"verified_at": at, "verified_by": by}

    async def mark_skipped(self, environment: str, deploy_id: str, at: datetime, by: str, reason: str) -> None:
        await round_trip()
        self._verdicts[deploy_id] = {"verification_skipped_at": at, "verification_skipped_by": by,
                                     "verification_skip_reason": reason}

    def _marked(self, record: DeployRecord) -> DeployRecord:
        """The record with the marks kept apart from it (a record is never rewritten)."""
        return replace(record, faulty=record.deploy_id in self._faulty, **self._verdicts.get(record.deploy_id, {}))
