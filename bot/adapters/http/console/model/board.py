"""The board: each environment, its services and what is on them, its locks, and what a rollback
would put back."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime

from bot.adapters.http.console.model.approvals import Approval, names
from bot.adapters.http.console.model.deploys import Queued, Running, Verifying
from bot.adapters.http.console.model.freezes import Freezing, Stop, Window
from bot.core import authority, deploy_rules, deploys, people, wording
from bot.core.events import DeployService
from bot.core.freeze_windows import Freeze
from bot.core.people import Identity
from bot.core.policy import Policy, lock_owner
from bot.runtime.ports import DeployRecord, Lock


@dataclass(frozen=True)
class Deployed:
    """A deploy record as the board and the history show it (the partial _record.html).
    `may_roll_back`: show its Roll back button (see `rollbackable`)."""

    record: DeployRecord
    asked_by: str = ""
    may_roll_back: bool = False
    rollback_to: DeployRecord | None = None  # what Roll back would put back (its confirmation says so)


@dataclass(frozen=True)
class Held:
    lock: Lock
    by: str  # a person, or "deploy <deploy id>"
    manual: bool
    thread_id: str | None  # the deploying thread, for a deploy's own lock
    may_unlock: bool
    take: bool = False  # someone else's lock set by hand: lifted only with a reason (they are told)


@dataclass(frozen=True)
class ServiceRow:
    """One service in one environment on the board: what is on, its own lock."""

    name: str
    in_catalog: bool  # False: deployed there once, no longer in the catalog (no buttons)
    current: Deployed | None = None  # its newest successful deploy
    failed: Deployed | None = None  # its newest deploy, when that failed
    lock: Held | None = None  # its own lock (the environment's is the card's)
    promote: Promotable | None = None  # its Promote button (None: none, outside a promotion order)


@dataclass(frozen=True)
class Promotable:
    """What a service's Promote button sends: the commit (and its tag) the environment before
    (`source`) passed, as `promote` would pick it; or why it is not offered now."""

    source: str
    tag: str = ""
    commit: str = ""
    why_not: str | None = None  # why Promote would do nothing now (shown by the button, disabled); None: offered


def promotable(service: str, environment: str, source: str, candidate: DeployRecord | None,
               current: DeployRecord | None, locks: Iterable[Lock], freezes: Sequence[Freeze], policy: Policy,
               now: datetime) -> Promotable:
    """The Promote button of `service` in `environment`: `candidate`, what `promote` would deploy
    (bot.runtime.promoting.candidates), unless `source` holds nothing that passed, `current`
    (what is on there) is that commit already, or the lock or a freeze (the deploy rule) stops it."""
    if candidate is None:
        return Promotable(source, why_not=wording.nothing_to_promote(service, environment, source))
    offered = Promotable(source, candidate.tag, candidate.commit)
    if current is not None and current.commit == candidate.commit:
        return replace(offered, why_not=wording.runs_already(environment, current.tag, current.commit))
    holder = next((lock for lock in locks if lock.service in ("", service)), None)
    if holder is not None:
        return replace(offered, why_not=holder.describe())
    step = DeployService(service=service, tag=candidate.tag, environment=environment, source="command")
    facts = deploy_rules.Facts(policy=policy, step=step, commit=candidate.commit, now=now, freezes=tuple(freezes))
    frozen = deploy_rules.freeze(facts)
    return replace(offered, why_not=frozen.message) if frozen is not None else offered


@dataclass
class Environment:
    name: str
    protected: bool
    approvers: str  # "2 of alice, bob, carol": the people, and how many must approve
    lockers: str
    services: list[ServiceRow] = field(default_factory=list)
    lock: Held | None = None  # on the whole environment
    may_lock: bool = False
    why_not_lock: str | None = None
    running: list[Running] = field(default_factory=list)
    waiting: list[Approval] = field(default_factory=list)
    in_line: list[Queued] = field(default_factory=list)
    verifying: list[Verifying] = field(default_factory=list)
    freeze: Freezing | None = None  # what stops its deploys now
    next_freeze: Window | None = None  # its next scheduled freeze window
    stop: Stop | None = None  # the viewer's Stop / Resume buttons for it


def environment(name: str, policy: Policy, viewer: Identity) -> Environment:
    rules = policy.rules_for(name)
    why = authority.why_not(policy, viewer, authority.Lock(name))
    members = names(sorted(rules.approvers))
    return Environment(
        name=name, protected=rules.protected,
        approvers=wording.approvers_needed(policy.timing_for(name).required, members) if rules.protected
        else wording.no_approval_needed(),
        lockers=people.describe(rules.lockers_as_written or sorted(rules.lockers)),
        may_lock=why is None, why_not_lock=why,
    )


def held(lock: Lock, policy: Policy, viewer: Identity) -> Held:
    manual = lock.owner.startswith("manual:")
    deploy = deploys.deploying(lock.owner)
    return Held(
        lock=lock, by=lock.owner.removeprefix("manual:") if manual else f"deploy {lock.owner}", manual=manual,
        thread_id=None if manual else deploy or lock.owner,
        may_unlock=authority.why_not(policy, viewer, authority.Unlock(lock.environment, lock.owner)) is None,
        take=manual and lock.owner != lock_owner(viewer),
    )


def services_in(environment: str, policy: Policy) -> list[str]:
    """The catalog's services that deploy to `environment`, in the catalog's order."""
    return [s for s in policy.catalog.names if policy.catalog.invalid(s, environment) is None]


def service_rows(
    environment: str,
    services: Sequence[str],
    records: Sequence[DeployRecord],
    locks: Iterable[Lock],
    policy: Policy,
    viewer: Identity,
    asked: dict[str, str],
    may_start: bool,
) -> list[ServiceRow]:
    """A row per service of `services` (the catalog's there), then one per other service
    the history of `environment` (newest first) still shows deployed there."""
    current = latest_per_service(records)
    newest = newest_per_service(records)
    own = {lock.service: lock for lock in locks if lock.service}
    rollbackable_ids = rollbackable(records)
    extra = sorted(r.service for r in current if r.service not in services)
    rows = []
    for name in [*services, *extra]:
        in_catalog = name in services
        on = next((r for r in current if r.service == name), None)
        last = newest.get(name)
        back_to = rollback_target(records, on) if on is not None else None
        may = may_start and in_catalog and on is not None and on.deploy_id in rollbackable_ids and back_to is not None
        rows.append(ServiceRow(
            name=name, in_catalog=in_catalog,
            current=deployed(on, asked, may, back_to) if on else None,
            failed=deployed(last, asked) if last is not None and not last.ok else None,
            lock=held(own[name], policy, viewer) if name in own else None,
        ))
    return rows


def deployed(record: DeployRecord, asked: dict[str, str], may_roll_back: bool = False,
             rollback_to: DeployRecord | None = None) -> Deployed:
    return Deployed(record, asked.get(record.deploy_id, ""), may_roll_back, rollback_to)


def rollback_target(records: Iterable[DeployRecord], current: DeployRecord) -> DeployRecord | None:
    """What rolling `current` back would put back, as bot.runtime.steps.plan_rollback picks it:
    the newest earlier successful deploy of its service there, not faulty, of another commit
    (None: nothing earlier, so no Roll back button). The thread checks again that its tag still
    points to that commit."""
    for r in newest_first(list(records)):
        if (r.service == current.service and r.environment == current.environment and r.ok and not r.faulty
                and r.at < current.at and r.commit != current.commit):
            return r
    return None


def rollbackable(records: Iterable[DeployRecord]) -> set[str]:
    """The deploy ids, among `records` (a whole history, of one environment or several),
    that a rollback would roll back: each service's current deploy in each environment (its
    newest successful one), unless it is faulty or itself a rollback (those the thread would
    refuse: a rollback is not rolled back, it is rolled forward)."""
    found: set[str] = set()
    seen: set[tuple[str, str]] = set()
    for r in newest_first(list(records)):
        if not r.ok or (r.environment, r.service) in seen:
            continue
        seen.add((r.environment, r.service))
        if not r.faulty and not r.rollback_of:
            found.add(r.deploy_id)
    return found


def current_of(records: Iterable[DeployRecord], service: str) -> DeployRecord | None:
    """`service`'s newest successful deploy among `records` (one environment's)."""
    return next((r for r in newest_first(list(records)) if r.ok and r.service == service), None)


def newest_per_service(records: Iterable[DeployRecord]) -> dict[str, DeployRecord]:
    """Each service's newest record, whatever its outcome (records newest first)."""
    newest: dict[str, DeployRecord] = {}
    for r in records:
        newest.setdefault(r.service, r)
    return newest


def latest_per_service(records: Iterable[DeployRecord]) -> list[DeployRecord]:
    latest: dict[str, DeployRecord] = {}
    for r in records:
        if r.ok:
            latest.setdefault(r.service, r)
    return sorted(latest.values(), key=lambda r: r.service)


def ordered(environments: Iterable[str], policy: Policy) -> list[str]:
    """Protected environments last (production at the bottom of the board reads like a pipeline)."""
    return sorted(environments, key=lambda e: (policy.rules_for(e).protected, e))


def newest_first(records: Sequence[DeployRecord]) -> list[DeployRecord]:
    return sorted(records, key=lambda r: r.at, reverse=True)
