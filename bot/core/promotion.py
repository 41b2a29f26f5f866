"""Promotion in order: a commit reaches a later environment only after it has proven itself
in the one before (deploybot.toml's `promotion = ["staging", "production"]`, for every
service or per service, with an optional `soak`). Pure: the deploy path (bot/runtime/
deploying.py) reads the previous environment's history and asks `refusal`; `promote SERVICE
to ENV` asks `candidates`.

A commit passed the previous environment when a deploy of it there succeeded, at least the
soak ago, and (where verification is configured for the service there) was verified; a
commit any of whose deploys there was marked faulty never passed. Rollbacks are exempt: they
put back what was already on.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Literal, Protocol, TypeVar

from bot.core import wording


class Deployed(Protocol):
    """What the rule reads of a deploy record (bot.runtime.ports.DeployRecord)."""

    @property
    def commit(self) -> str: ...
    @property
    def tag(self) -> str: ...
    @property
    def ok(self) -> bool: ...
    @property
    def at(self) -> datetime: ...
    @property
    def faulty(self) -> bool: ...
    @property
    def verified_at(self) -> datetime | None: ...


@dataclass(frozen=True)
class Order:
    """Environments in the order a commit must go through them, and how long it must have
    been in one before the next."""

    environments: tuple[str, ...]
    soak: timedelta = timedelta(0)

    def previous(self, environment: str) -> str | None:
        """The environment a commit must have passed before `environment`; None for the first
        one, and for environments outside the order (free)."""
        if environment not in self.environments:
            return None
        index = self.environments.index(environment)
        return self.environments[index - 1] if index else None


@dataclass(frozen=True)
class Promotion:
    """The orders of deploybot.toml: a service's own, else everyone's (`default`). `verified`:
    the (service, environment) pairs where verification is configured, where a commit must
    also have been verified to pass."""

    default: Order | None = None
    services: Mapping[str, Order] = field(default_factory=dict)
    verified: frozenset[tuple[str, str]] = frozenset()

    def order_for(self, service: str) -> Order | None:
        return self.services.get(service, self.default)

    def previous(self, service: str, environment: str) -> str | None:
        order = self.order_for(service)
        return order.previous(environment) if order else None

    def soak(self, service: str) -> timedelta:
        order = self.order_for(service)
        return order.soak if order else timedelta(0)

    def needs_verification(self, service: str, environment: str) -> bool:
        return (service, environment) in self.verified


Missing = Literal["not_deployed", "faulty", "soaking", "unverified"]


@dataclass(frozen=True)
class Refusal:
    """Why a commit may not go on yet: what is `missing` in `previous`, since when it has been
    there (`deployed_at`, for soaking), and the newest commit that did pass (None: none)."""

    previous: str
    missing: Missing
    soak: timedelta
    deployed_at: datetime | None
    newest: Deployed | None


def exempt(step: object) -> bool:
    """Rollbacks (automatic ones too) are exempt from the order: they put back what was on."""
    return bool(getattr(step, "rollback_of", None))


def passed(record: Deployed, now: datetime, soak: timedelta, verify: bool) -> bool:
    """Whether one deploy shows its commit passed: it succeeded, is not faulty, has soaked,
    and is verified where that is asked."""
    verified = not verify or record.verified_at is not None
    return record.ok and not record.faulty and now - record.at >= soak and verified


def newest_passed(records: Sequence[Deployed], now: datetime, soak: timedelta, verify: bool) -> Deployed | None:
    """The newest deploy (records newest first) whose commit passed: the one to promote."""
    found = candidates(records, now, soak, verify)
    return found[0] if found else None


D = TypeVar("D", bound=Deployed)


def candidates(records: Sequence[D], now: datetime, soak: timedelta, verify: bool) -> list[D]:
    """What `promote` may deploy, best first: the newest deploy of each commit that passed
    (records newest first), none of a commit ever marked faulty there."""
    faulty = {r.commit for r in records if r.faulty}
    found: dict[str, D] = {}
    for r in records:
        if r.commit not in faulty and r.commit not in found and passed(r, now, soak, verify):
            found[r.commit] = r
    return list(found.values())


def refusal(
    commit: str, previous: str, records: Sequence[Deployed], now: datetime, soak: timedelta, verify: bool
) -> Refusal | None:
    """Why `commit` may not be deployed after `previous`, given the deploys there (newest
    first); None: it may."""
    mine = [r for r in records if r.commit == commit]
    if any(r.faulty for r in mine):
        missing: Missing = "faulty"
    elif any(passed(r, now, soak, verify) for r in mine):
        return None
    elif not any(r.ok for r in mine):
        missing = "not_deployed"
    elif any(r.ok and now - r.at >= soak for r in mine):
        missing = "unverified"
    else:
        missing = "soaking"
    since = min((r.at for r in mine if r.ok), default=None)
    return Refusal(previous, missing, soak, since, newest_passed(records, now, soak, verify))


_DURATION = re.compile(r"^\s*(\d+)\s*(s|m|h|d)\s*$")
_UNIT = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_soak(text: str) -> timedelta:
    """`30m`, `2h`, `1d`, `90s` (`0s`: no soak); ValueError otherwise."""
    m = _DURATION.match(text)
    if m is None:
        raise ValueError(wording.not_a_duration(text))
    return timedelta(seconds=int(m[1]) * _UNIT[m[2]])


def order_problems(order: Iterable[str], environments: Iterable[str]) -> list[str]:
    """What is wrong with an order: environments nobody declared, and repeats."""
    names, known = list(order), set(environments)
    unknown = [n for n in names if n not in known]
    problems = [wording.order_unknown(unknown, known)] if unknown else []
    if len(set(names)) != len(names):
        problems.append(wording.order_repeats())
    return problems
