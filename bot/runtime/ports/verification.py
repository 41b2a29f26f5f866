"""What a deploy's verification checks answer."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from bot.core.events import VerifyCheck


@dataclass(frozen=True)
class Observation:
    """What a verification check answered: `ok` None when it could not be evaluated (the
    server is down, the query has no result): never a pass. `value` is for people."""

    ok: bool | None
    value: str


class Probe(Protocol):
    """Evaluates a deploy verification's checks (Prometheus queries, HTTP endpoints)."""

    async def observe(self, check: VerifyCheck) -> Observation:
        """Never raises for the check's own failures: those are an Observation with ok None."""
        ...
