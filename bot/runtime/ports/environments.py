"""Who may deploy in an environment now: its locks, and the freezes people set."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from bot.core import wording
from bot.core.freeze_windows import Freeze


@dataclass(frozen=True)
class Lock:
    environment: str
    owner: str  # the thread deploying, or "manual:<user>" for a lock set by hand
    reason: str
    since: datetime
    service: str = ""  # "": the whole environment (every service); else that service there
    thread: str = ""  # the thread that set it by hand (told if someone takes it)

    def by(self) -> str:
        who = self.owner.removeprefix("manual:") if self.owner.startswith("manual:") else f"deploy {self.owner}"
        return wording.locked_by(who, self.since, self.reason)

    def describe(self) -> str:
        return wording.is_locked(self.target, self.by())

    @property
    def target(self) -> str:
        """What is locked, for people: `production`, or `api in production`."""
        return wording.lock_target(self.environment, self.service)


class Locks(Protocol):
    """One deploy at a time per service and environment, and locks people set by hand, on
    a whole environment or on one service there. A lock on the environment stops every
    service's deploy there; a service's lock stops only that service's."""

    async def acquire(self, lock: Lock, ttl_ms: int | None) -> Lock | None:
        """None when `lock` is now held (or was already held by its owner); else the holder
        in the way: for a service's lock, the environment's lock too."""
        ...

    async def renew(self, environment: str, owner: str, ttl_ms: int, service: str = "") -> bool: ...

    async def release(self, environment: str, owner: str | None, service: str = "") -> bool:
        """Release if `owner` holds it (None: whoever holds it)."""
        ...

    async def hand_over(self, lock: Lock, from_owner: str) -> bool:
        """Replace the lock `from_owner` holds on `lock`'s target with `lock` (no TTL), in one
        step, so nobody can take it in between; False (nothing changed) if `from_owner` does
        not hold it."""
        ...

    async def holder(self, environment: str, service: str = "") -> Lock | None:
        """Who holds the lock on the environment; with `service`, the lock in the way of a
        deploy of it: the environment's, else the service's."""
        ...

    async def held(self, environment: str, services: Iterable[str]) -> list[Lock]:
        """The locks in `environment`: its own, then those of `services` there."""
        ...


class FreezeStore(Protocol):
    """Stop-the-line freezes, set and lifted by people at run time (deploybot.toml's
    scheduled freezes live in the policy)."""

    async def set(self, freeze: Freeze) -> None:
        """Replace any freeze set for the same scope (an environment, or every one: "*")."""
        ...

    async def lift(self, scope: str) -> bool: ...

    async def current(self) -> list[Freeze]:
        """The freezes that hold (lapsed ones are gone)."""
        ...
