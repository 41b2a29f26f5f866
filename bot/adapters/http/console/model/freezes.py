"""Freezes: what stops deploys now, an environment's next scheduled window, and the viewer's stop-
the-line buttons."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from bot.core import authority, wording
from bot.core.freeze_windows import ALL, HORIZON, Freeze, FreezeHit, active, occurrences
from bot.core.people import Identity
from bot.core.policy import Policy


@dataclass(frozen=True)
class Freezing:
    """A freeze that holds now (for one environment, or for every one: scope "*")."""

    scope: str
    hit: FreezeHit

    @property
    def words(self) -> str:
        """The bot's own sentence (a deploy it stops says the same)."""
        return wording.frozen(wording.freeze_scope(self.scope), self.hit.reason, self.hit.until, self.hit.source)

    @property
    def kind(self) -> str:
        return self.hit.kind


def freezing(freezes: Sequence[Freeze], scope: str, now: datetime) -> Freezing | None:
    """What stops deploys to `scope` now: an environment's name (every freeze that covers it),
    or "*" (only the freezes set for every environment)."""
    relevant = [f for f in freezes if f.environments == ALL] if scope == ALL else list(freezes)
    hit = active(relevant, scope, now)
    return Freezing(scope, hit) if hit is not None else None


@dataclass(frozen=True)
class Window:
    """A scheduled freeze's next window: from `start` to `end` (UTC)."""

    start: datetime
    end: datetime | None
    freeze: Freeze


def next_window(freezes: Iterable[Freeze], environment: str, now: datetime,
                ahead: timedelta = HORIZON) -> Window | None:
    """The scheduled freeze window (deploybot.toml's, weekly or one-off) on `environment`
    that starts next after `now`, within `ahead`."""
    soonest: Window | None = None
    for freeze in freezes:
        if freeze.kind == "stop-the-line" or not freeze.applies_to(environment):
            continue
        for start, end in occurrences(freeze, now, now + ahead):
            if start > now and (soonest is None or start < soonest.start):
                soonest = Window(start, end, freeze)
                break
    return soonest


@dataclass(frozen=True)
class Stop:
    """The viewer's stop-the-line buttons for a scope (an environment, or "*")."""

    scope: str
    stopped: Freeze | None  # the stop-the-line freeze set for exactly this scope
    why_not: str | None  # why the viewer may not stop or resume here; None: they may

    @property
    def may_stop(self) -> bool:
        return self.why_not is None and self.stopped is None

    @property
    def may_resume(self) -> bool:
        return self.why_not is None and self.stopped is not None

    @property
    def where(self) -> str:
        return wording.freeze_scope(self.scope)


def stop(scope: str, stopped: Iterable[Freeze], policy: Policy, viewer: Identity, store: bool) -> Stop:
    """`stopped`: the stop-the-line freezes set now. `store`: whether stopping is possible here."""
    mine = next((f for f in stopped if f.kind == "stop-the-line" and f.scope == scope), None)
    why = authority.why_not(policy, viewer, authority.Stop(scope))
    if not store:
        why = wording.cannot_stop_here()
    return Stop(scope, mine, why)
