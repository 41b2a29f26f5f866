"""The fast layer: the core, the service and the loop over the in-memory fakes of
bot/testing/memory/ (held to the Redis adapters' behaviour by tests/runtime/ports). No Redis,
no BAML, no HTTP, no git, no subprocess; time is a fixed clock moved by hand.

`make_runner` is the one place a Runner is put together: adapt it when the loop's
constructor changes, and drive runners only through `await runner.run(thread_id)`.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

import pytest

from bot.core.people import Identity, Written
from bot.core.policy import Policy
from bot.runtime.service import ThreadService
from bot.testing.memory import (
    ManualClock,
    MemoryDeployer,
    MemoryEnvironments,
    MemoryThreadStore,
    RecordingNotifier,
    ScriptedModel,
)
from bot.wiring.channels import raw_users
from tests.people_kinds import a_person, directory_of

NOW = datetime(2026, 11, 5, 12, 0, tzinfo=UTC)
TAGS = {"v1.2.3": "c" * 40, "v1.2.2": "b" * 40, "v1.2.1": "a" * 40}  # newest first
APPROVERS = ("bob", "carol")
# The people the fast layer's tests name: each known by Slack and by email (carol by email
# only); anyone else ("mallory") is someone unknown.
PEOPLE = directory_of([
    a_person("alice", ("UALICE",), ("alice@example.com",)),
    a_person("bob", ("UBOB",), ("bob@example.com",)),
    a_person("carol", (), ("carol@example.com",)),
])


def who(name: str) -> Identity:
    """Someone named by something trusted (as the CLI's --user): a person of PEOPLE, else
    someone unknown."""
    return PEOPLE.by_name(name)


def team_policy(**changes: object) -> Policy:
    """bob and carol approve (and lock) production; anyone staging and development."""
    written = {
        "production": Written(approvers=APPROVERS),
        "staging": Written(approvers=("*",)),
        "development": Written(approvers=("*",)),
    }
    return Policy.configured(directory=PEOPLE, written=written, **changes)  # type: ignore[arg-type]


class WallClock:
    """The wall clock the service and the runner stamp events with; moves only when told."""

    def __init__(self, now: datetime = NOW) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **delta: float) -> None:
        self.now += timedelta(**delta)


@dataclass
class Parts:
    """Everything a runner and the service are built from, shared by both."""

    clock: WallClock = field(default_factory=WallClock)
    monotonic: ManualClock = field(default_factory=ManualClock)  # lease and lock TTLs
    policy: Policy = field(default_factory=team_policy)
    model: ScriptedModel = field(default_factory=ScriptedModel)
    deployer: MemoryDeployer = field(default_factory=lambda: MemoryDeployer(TAGS))
    notifier: RecordingNotifier = field(default_factory=RecordingNotifier)
    store: MemoryThreadStore = field(init=False)
    environments: MemoryEnvironments = field(init=False)

    def __post_init__(self) -> None:
        self.store = MemoryThreadStore(self.monotonic)
        self.environments = MemoryEnvironments(self.monotonic)


def make_runner(
    parts: Parts, name: str = "runner-under-test", llm: object = "model", context_budget: int | None = None,
    *, timers: object = None, queue: object = None, freezes: object = None, wake: object = None,
    probe: object = None,
):  # -> bot.runtime.loop.Runner
    """The one place a Runner is built. `llm=None` runs without a model. `timers` (due
    times), `queue` (deploys waiting for a lock), `freezes` (stop-the-line) and `wake` (how
    the next deploy in line is handed to a worker): bot/testing/memory/timers.py and
    freezes.py's, for approvals over time; None: without them. `probe`: what evaluates
    a deploy verification's checks (None: no runner verifies)."""
    from bot.runtime.deploying import Deploying
    from bot.runtime.loop import Runner

    deployers = {name: parts.deployer for name in parts.policy.catalog.names}
    deploying = Deploying(
        deployers, parts.environments, parts.environments, parts.policy,
        queue=queue, freezes=freezes, wake=wake,  # type: ignore[arg-type]
    )
    from bot.core.prompt import CONTEXT_BUDGET
    from bot.runtime.verifying import Verifying

    verifying = None if probe is None else Verifying(
        probe, parts.environments, parts.environments, parts.policy, deploying.wake_next,  # type: ignore[arg-type]
    )

    return Runner(
        context_budget=context_budget or CONTEXT_BUDGET,
        store=parts.store,
        deploying=deploying,
        llm=parts.model if llm == "model" else llm,  # type: ignore[arg-type]
        notifier=parts.notifier,
        policy=parts.policy,
        clock=parts.clock,
        name=name,
        timers=timers,  # type: ignore[arg-type]
        verifying=verifying,
    )


@pytest.fixture
def parts() -> Parts:
    return Parts()


@pytest.fixture
def runner(parts: Parts):
    return make_runner(parts)


@pytest.fixture
def service(parts: Parts) -> ThreadService:
    return ThreadService(parts.store, parts.policy, parts.notifier, parts.clock, raw_users=raw_users())


async def die() -> None:
    """What a process crash does to its tasks (the lock renewal of a deploy in flight):
    they are gone, not finished."""
    others = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
    for task in others:
        task.cancel()
    await asyncio.gather(*others, return_exceptions=True)
