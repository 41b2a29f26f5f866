"""What runs when: the handoff of threads to workers, their timers, the schedules' marks and
the line of deploys waiting for a lock."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol


@dataclass(frozen=True)
class Work:
    """One handoff: "run this thread". `entry` identifies it in the queue until it is done."""

    entry: str
    thread_id: str


class WorkQueue(Protocol):
    """At-least-once handoff from whoever records an event to whichever worker runs the
    thread. Work a worker took stays its own until `done`; work nobody `keep`s for
    `min_idle_ms` (its worker died) can be `reclaim`ed by another."""

    async def push(self, thread_id: str) -> None: ...

    async def take(self, worker: str, count: int, block_ms: int, done: Sequence[str] = ()) -> list[Work]:
        """New work for `worker`; `done`: entries finished meanwhile, acknowledged (as `done`
        does) in the same round trip, before anything is taken."""
        ...

    async def reclaim(self, worker: str, min_idle_ms: int, count: int) -> list[Work]: ...

    async def keep(self, worker: str, entries: Sequence[str]) -> None:
        """Say the worker is still on these: resets their idle time."""
        ...

    async def done(self, entries: Sequence[str]) -> None: ...

    async def backlog(self) -> int:
        """Work pushed and not yet done (taken or not)."""
        ...

    async def turn(self, chore: str, seconds: int) -> bool:
        """True for one caller per `seconds` across all workers: whose turn a chore is."""
        ...

    async def trim(self, older_than_ms: int, dry_run: bool = False) -> int:
        """Drop work pushed longer ago than this (done work is gone already: what is left
        that old was lost; the sweep finds its thread if it is still mid-run). How many."""
        ...

    async def drop_dead(self, idle_ms: int, dry_run: bool = False) -> list[str]:
        """Forget the workers not seen for `idle_ms` that hold no work (a worker that died
        with work still has it reclaimed first): their names."""
        ...


class ScheduleMarks(Protocol):
    """Per schedule, the last occurrence that started a thread, shared by every process."""

    async def first_seen(self, schedule_id: str, now: int) -> int:
        """The schedule's mark (Unix seconds). A schedule seen for the first time is marked
        `now`, atomically: it counts from when any process first saw it."""
        ...

    async def advance(self, schedule_id: str, to: int) -> None:
        """Move the mark forward to `to` (never back), atomically."""
        ...


class Timers(Protocol):
    """When each thread next needs a run without anyone writing to it (reminders, expiry,
    escalation, a deploy waiting in line): one due time per thread, derived from its events
    by whoever ran it last (control.next_due)."""

    async def set(self, thread_id: str, due: datetime | None) -> None:
        """The thread's next due time (None: nothing is due)."""
        ...

    async def due(self, now: datetime, lease_ms: int, limit: int) -> list[str]:
        """Threads due by `now`, each claimed for `lease_ms`: two workers never get the same
        one at once, and one a worker took but never ran is due again once the lease lapses.
        What a fired timer does is decided by the thread's run, and appended with
        compare-and-set, so firing twice never does it twice."""
        ...


class DeployQueue(Protocol):
    """The deploys waiting for a service's lock in an environment, first come first served."""

    async def join(self, environment: str, service: str, deploy_id: str, at: datetime) -> int:
        """Take a place in line (keeping one already taken): the 1-based position."""
        ...

    async def leave(self, environment: str, service: str, deploy_id: str) -> bool:
        """Give up a place in line; False when it had none."""
        ...

    async def first(self, environment: str, service: str) -> str | None: ...
