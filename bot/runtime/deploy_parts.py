"""What every part of the deploy path works with (bot/runtime/deploying.py puts them
together): the ports, the policy, how a run records (`Journal`), and the small helpers."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from bot.core import deploy_rules
from bot.core.events import Deploy, Error, Event
from bot.core.policy import Policy
from bot.core.thread import Thread
from bot.runtime.ports import Deployer, DeployQueue, FreezeStore, History, Locks

LOCK_TTL_MS = 60_000  # a deploy's lock outlives a dead holder by at most this
# A running deploy's run lease (DEPLOY_LEASE): a worker cut off from Redis for less than two
# thirds of it keeps its deploy; only a worker silent for longer has it "outcome unknown".
DEPLOY_LEASE_MS = 60_000


class Journal(Protocol):
    """How a run records what it does."""

    async def decide(self, thread: Thread, events: Sequence[Event]) -> Thread:
        """Append a decision: raises Conflict if the thread moved since it was read, and
        LeaseLost if the run no longer holds the thread."""
        ...

    async def fact(self, thread: Thread, events: Sequence[Event]) -> Thread:
        """Append what already happened: it lands whatever else was appended meanwhile."""
        ...

    async def lease_for(self, ttl_ms: int | None) -> None:
        """The run's lease renewed now and from now on to last `ttl_ms` past each renewal
        (None: a run's usual lease), for as long as the run goes on."""
        ...


@dataclass
class Parts:
    """What the deploy path is given (bot/wiring/app.py builds it once)."""

    # Each service's: its versions (tags, commits, checks) and how its deploys run (backend and
    # frontend may share one).
    deployers: Mapping[str, Deployer]
    locks: Locks
    history: History
    policy: Policy
    secrets: tuple[str, ...] = ()  # redacted from deploy output, which people and the model read
    queue: DeployQueue | None = None  # approved deploys wait here for a lock (None: they fail)
    freezes: FreezeStore | None = None  # stop-the-line freezes people set
    wake: Callable[[str], Awaitable[None]] | None = None  # hands a thread to a worker
    rules: tuple[deploy_rules.Rule, ...] = deploy_rules.RULES  # asked before asking and before deploying
    lock_ttl_ms: int = LOCK_TTL_MS  # tests shorten it to see a lapse without waiting a minute
    deploy_lease_ms: int = DEPLOY_LEASE_MS  # the run's lease while its deploy runs (DEPLOY_LEASE)


def _refused(step: Deploy, refused: deploy_rules.Refusal) -> Error:
    """A deploy rule's refusal, as the deploy path records it."""
    return Error(kind=refused.kind, step_id=step.id, message=refused.message)


def _field(step: Deploy, name: str) -> str | None:
    """A field only deploys of the catalog have (a thread's older steps lack it)."""
    value = getattr(step, name, None)
    return value if isinstance(value, str) and value else None
