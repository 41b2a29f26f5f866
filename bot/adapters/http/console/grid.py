"""The matrix (console/matrix.py) as plain values: a row per service, a cell per environment,
each with what is deployed there now, since when, and what holds it (running, waiting for
approval, locked, frozen), and whether it differs from the environment before it. No I/O:
tested alone (tests/adapters/http/console/test_console_deploying.py)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from bot.core.policy import Policy
from bot.runtime.ports import DeployRecord, Lock

# A cell's states, in the order they are shown (the first is the cell's headline). "verifying"
# is the hook for a deploy watched after it ran: give `cells` a `verifying` map (the
# board passes none yet).
STATES = ("running", "verifying", "waiting for approval", "locked", "frozen", "failed", "deployed")


@dataclass(frozen=True)
class Cell:
    service: str
    environment: str
    deploys_here: bool  # False: the catalog does not deploy the service there (no button)
    current: DeployRecord | None = None  # its newest successful deploy there
    states: tuple[str, ...] = ()  # of STATES, in that order
    thread_id: str = ""  # the thread running or waiting there, if any (else the current deploy's)
    differs_from: str = ""  # the environment before it, when what is here is not what is there

    @property
    def tag(self) -> str:
        return self.current.tag if self.current else ""

    @property
    def state(self) -> str:
        """The headline: its first state, else "nothing deployed"."""
        return self.states[0] if self.states else "nothing deployed"


@dataclass(frozen=True)
class Row:
    service: str
    cells: list[Cell] = field(default_factory=list)


@dataclass(frozen=True)
class Busy:
    """What the active threads do with one service in one environment."""

    running: str = ""  # the thread deploying it now
    waiting: str = ""  # a thread waiting for its approval


def cells(
    policy: Policy,
    environments: Sequence[str],
    histories: Mapping[str, Sequence[DeployRecord]],
    locks: Mapping[str, Iterable[Lock]],
    frozen: Iterable[str],
    busy: Mapping[tuple[str, str], Busy],
    verifying: Mapping[tuple[str, str], str] | None = None,
) -> list[Row]:
    """Every service of the catalog against `environments` (in the order shown): `histories`,
    each environment's newest deploys, newest first; `locks` held there (whole or per service);
    `frozen`, the environments a freeze holds now; `busy`, by (service, environment);
    `verifying`, the thread verifying a deploy, by (service, environment)."""
    stopped = set(frozen)
    rows = []
    for service in policy.catalog.names:
        row = Row(service)
        before: Cell | None = None
        for env in environments:
            if policy.catalog.invalid(service, env) is not None:
                row.cells.append(Cell(service, env, deploys_here=False))
                continue
            cell = _cell(service, env, histories.get(env, ()), locks.get(env, ()), env in stopped,
                         busy.get((service, env), Busy()), (verifying or {}).get((service, env), ""))
            if before is not None and (before.tag or cell.tag) and before.tag != cell.tag:
                cell = replace(cell, differs_from=before.environment)
            row.cells.append(cell)
            before = cell
        rows.append(row)
    return rows


def _cell(service: str, env: str, history: Sequence[DeployRecord], locks: Iterable[Lock], frozen: bool,
          busy: Busy, verifying: str) -> Cell:
    mine = [r for r in history if r.service == service]
    current = next((r for r in mine if r.ok), None)
    found = {
        "running": bool(busy.running),
        "verifying": bool(verifying),
        "waiting for approval": bool(busy.waiting),
        "locked": any(lock.service in ("", service) for lock in locks),
        "frozen": frozen,
        "failed": bool(mine) and not mine[0].ok,
        "deployed": current is not None,
    }
    thread = busy.running or verifying or busy.waiting or (current.thread_id if current else "")
    return Cell(service, env, True, current, tuple(s for s in STATES if found[s]), thread)


def anything_deployed(rows: Iterable[Row]) -> bool:
    return any(c.current is not None for r in rows for c in r.cells)
