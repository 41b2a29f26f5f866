"""What the console's pages show, from threads, locks and the deploy history: plain values
the templates print (Jinja2 escapes every one of them). No HTTP here, and no rule of its own:
who may decide or lock is asked of the policy, and an event's words come from
bot.core.transcript, as in the markdown transcript.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any

from bot.core import authority, deploy_rules, deploys, outcomes, people, standing, transcript, verification, wording
from bot.core.audit import audit_trail
from bot.core.events import (
    DEPLOY_STEPS,
    STEP_TYPES,
    ApprovalEscalated,
    ApprovalExpired,
    ApprovalRequested,
    Change,
    CommandResult,
    DeployResult,
    DeployStarted,
    Error,
    Event,
    GitTagsResult,
    HumanResponse,
    UserMessage,
    principal_of,
)
from bot.core.freeze_windows import ALL, HORIZON, Freeze, FreezeHit, active, occurrences
from bot.core.people import Identity
from bot.core.policy import Policy, lock_owner
from bot.core.thread import ApprovalRules, Thread
from bot.runtime.ports import DeployRecord, Lock


def ago(then: datetime, now: datetime) -> str:
    """`then` as an age: "just now", "5 min ago", "3 h 4 min ago", "2 d ago"."""
    seconds = int((now - then).total_seconds())
    if seconds < 60:
        return "just now" if seconds >= -60 else "in the future"
    minutes = seconds // 60
    if minutes < 60:
        return f"{minutes} min ago"
    hours, minutes = divmod(minutes, 60)
    if hours < 48:
        return f"{hours} h {minutes} min ago" if minutes else f"{hours} h ago"
    return f"{hours // 24} d ago"


def left(until: datetime, now: datetime) -> str:
    """Time left until `until`: "59 min left", "expired"."""
    seconds = int((until - now).total_seconds())
    if seconds <= 0:
        return "expired"
    minutes, seconds = divmod(seconds, 60)
    return f"{minutes} min {seconds:02d} s left" if minutes < 60 else f"{minutes // 60} h {minutes % 60} min left"


# --- approvals -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Decision:
    approve: bool
    by: str  # the person, else the channel's id
    via: str  # slack, email, token, session, name
    channel: str
    evidence: str  # the Slack user id, the address and Message-ID, the token id, the session id
    at: datetime
    text: str


def decision(event: HumanResponse) -> Decision:
    return Decision(
        approve=bool(event.approve), by=event.person or event.user, via=event.via, channel=event.channel,
        evidence=event.evidence, at=event.at, text=event.text,
    )


@dataclass(frozen=True)
class Approval:
    """One approval request as the approvals page and the board show it."""

    thread_id: str
    request: ApprovalRequested
    asked: str  # what the requester wrote
    who_may_decide: str  # "the sre group or carol" (and whoever it was escalated to)
    why_not: str | None  # why the viewer may not decide; None: they may
    decided: Decision | None
    pending: bool  # still waiting (not decided, not expired, not superseded)
    expired: bool  # lapsed: past its expiry (recorded, or not yet), undecided
    given: tuple[str, ...] = ()  # who approved so far, one per person, oldest first
    escalation: ApprovalEscalated | None = None
    reminders: int = 0  # reminders sent so far
    expiry: ApprovalExpired | None = None  # the recorded expiry: closed, nothing deployed
    required: int = 1  # approvals it needs under the rules it follows now (Thread.approval_rules)
    rules_then: str = ""  # a closed one's rules as they were when decided ("2 of alice, erin"); "": open

    @property
    def may_decide(self) -> bool:
        return self.why_not is None and self.pending

    @property
    def progress(self) -> str:
        """"1 of 2: approved by bob", for a request that needs several approvals ("" else)."""
        return wording.approval_progress(self.given, self.required) if self.required > 1 else ""

    @property
    def closed_at(self) -> datetime | None:
        """When it was decided, or expired (as recorded): where the decided list sorts it."""
        if self.decided is not None:
            return self.decided.at
        return self.expiry.at if self.expiry is not None else None


def approvals(thread: Thread, viewer: Identity, policy: Policy, now: datetime) -> list[Approval]:
    """Every approval request of `thread`, newest first."""
    found = []
    for request in thread.of(ApprovalRequested):
        stands = standing.of(thread, request, policy, now)
        given = tuple(e.person or e.user for e in stands.given)
        why_not = authority.why_not(policy, viewer, authority.Decide(thread, request))
        if why_not is None and any(principal_of(e) == viewer.principal for e in stands.given):
            why_not = wording.already_approved_by_you(len(given), stands.required)
        found.append(Approval(
            thread_id=thread.id,
            request=request,
            asked=_asked_before(thread, request),
            who_may_decide=describe_deciders(policy, request.environment, list(stands.deciders or ())),
            why_not=why_not,
            decided=decision(stands.decision) if stands.decision is not None else None,
            pending=stands.state == "open",
            expired=stands.state == "expired",
            given=given,
            escalation=stands.escalation,
            reminders=stands.reminders,
            expiry=stands.expiry,
            required=stands.required,
            rules_then=_rules_then(stands.rules) if stands.closed else "",
        ))
    return found[::-1]


def _rules_then(rules: ApprovalRules) -> str:
    """The rules a closed approval was decided under: those it was asked under, or the
    newer ones recorded with its decision (ApprovalRulesChanged), not today's."""
    return wording.rules_then(rules.required, names(rules.approvers or ()))


def describe_deciders(policy: Policy, environment: str, deciders: list[str]) -> str:
    """Who may still decide, in words: the environment's approvers as written ("the sre group")
    when that is all of them, else each one by name."""
    rules = policy.rules_for(environment)
    if set(deciders) == set(rules.approvers) and rules.approvers_as_written:
        return people.describe(rules.approvers_as_written)
    return people.describe(deciders)


def names(principals: Iterable[str]) -> list[str]:
    """Each principal's one name (people.shown), once each, in order; `*` is anyone."""
    return list(dict.fromkeys("anyone" if p == people.ANYONE else people.shown(p).name for p in principals))


def _asked_before(thread: Thread, request: ApprovalRequested) -> str:
    position = thread.events.index(request)
    for e in reversed(thread.events[:position]):
        if isinstance(e, UserMessage) or (isinstance(e, HumanResponse) and e.approve is not True and e.text):
            return e.text
    return ""


# --- the timeline of a thread ----------------------------------------------------------------


@dataclass(frozen=True)
class Item:
    """One event of a thread's timeline: its words and, behind a toggle, the event itself."""

    position: int  # 1-based: "fork at this event" keeps events 1..position
    event: Event
    words: str
    raw: str  # the stored event, as JSON
    model_step: bool  # a step the model chose (its parsed form; what it said, where recorded)
    forkable: bool

    @property
    def kind(self) -> str:
        return self.event.type


class Words:
    """Each event's words and raw JSON, kept by event id (events never change): a page shown
    again, or a thread's live tail, renders only what is new. Bounded: the oldest go first."""

    def __init__(self, size: int = 20_000) -> None:
        self.size = size
        self._kept: OrderedDict[str, tuple[str, str]] = OrderedDict()

    def of(self, e: Event, secrets: tuple[str, ...]) -> tuple[str, str]:
        kept = self._kept.get(e.id)
        if kept is None:
            kept = transcript.text(e, secrets), transcript.clean(_redacted_json(e, secrets))
            self._kept[e.id] = kept
            if len(self._kept) > self.size:
                self._kept.popitem(last=False)
        return kept


def timeline(thread: Thread, secrets: tuple[str, ...], words: Words | None = None) -> list[Item]:
    words = words or Words()
    forkable = _forkable(thread)
    items = []
    for i, e in enumerate(thread.events):
        if transcript.says_again(thread, e):
            continue  # the command's result, just above, said it
        said, raw = words.of(e, secrets)
        items.append(Item(
            position=i + 1, event=e, words=said, raw=raw,
            model_step=getattr(e, "source", None) == "llm", forkable=forkable[i],
        ))
    return items


def _redacted_json(e: Event, secrets: tuple[str, ...]) -> str:
    from bot.core.prompt import redact  # the one redaction the transcript and the prompt use

    return redact(json.dumps(e.model_dump(mode="json"), indent=2, ensure_ascii=False), secrets)


def _forkable(thread: Thread) -> list[bool]:
    """For each position, whether ThreadService.fork accepts a cut there: not in the middle
    of a deploy (its step started, its outcome not yet recorded). One pass."""
    open_step: str | None = None  # the last step so far, if it is a deploy that started and is not closed
    last_deploy: str | None = None
    started: set[str] = set()
    out = []
    for e in thread.events:
        if isinstance(e, STEP_TYPES):
            last_deploy = e.id if isinstance(e, DEPLOY_STEPS) else None
            open_step = None
        elif isinstance(e, DeployStarted):
            started.add(e.step_id)
            if e.step_id == last_deploy:
                open_step = last_deploy
        elif open_step is not None and _closes(e, open_step, thread):
            open_step = None
        out.append(open_step is None)
    return out


def _closes(e: Event, step_id: str, thread: Thread) -> bool:
    """Whether `e` is the outcome of the step `step_id` (as Thread.outcome reads one)."""
    if isinstance(e, GitTagsResult | DeployResult | CommandResult | Error):
        return e.step_id == step_id
    if isinstance(e, HumanResponse) and e.approve is False and e.approval_id:
        request = thread.approval(e.approval_id)
        return request is not None and request.step_id == step_id
    return False


# --- threads ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Row:
    id: str
    status: str
    title: str
    people: tuple[str, ...]
    updated: datetime | None
    version: int
    forked_from: str | None
    outcome: outcomes.Outcome = outcomes.Outcome("running")


def row(thread: Thread, now: datetime) -> Row:
    first = thread.events[0] if thread.events else None
    return Row(
        id=thread.id, status=thread.status(now), title=" ".join(str(getattr(first, "text", "")).split())[:140],
        people=tuple(sorted(_people(thread))), updated=thread.events[-1].at if thread.events else None,
        version=thread.version, forked_from=thread.origin.forked_from, outcome=outcomes.outcome(thread, now),
    )


def _people(thread: Thread) -> set[str]:
    """Everyone who wrote, each by one name whichever channel they came by (people.shown)."""
    found = set()
    for e in thread.events:
        if isinstance(e, UserMessage | HumanResponse):
            found.add(people.shown(principal_of(e)).name)
    return found


def matches(thread: Thread, query: str) -> bool:
    """Search by text or person: every word of `query` is in something a person wrote or in
    the name of someone who wrote in the thread (case-insensitive)."""
    words = query.lower().split()
    if not words:
        return True
    haystack = [thread.id]
    for e in thread.events:
        if isinstance(e, UserMessage | HumanResponse):
            haystack += [e.text, e.user, e.person or ""]
        elif isinstance(e, ApprovalRequested):
            haystack += [e.service, e.tag, e.environment, e.requested_by]
    text = "\n".join(haystack).lower()
    return all(w in text for w in words)


# --- deploys: what runs now, and each deploy's audit trail --------------------------------------


@dataclass(frozen=True)
class Running:
    thread_id: str
    service: str
    tag: str
    environment: str
    deploy_id: str
    since: datetime


def running(thread: Thread) -> Running | None:
    """The deploy this thread has started and not finished, if any."""
    last = thread.last_step()
    if last is None or not isinstance(last[1], DEPLOY_STEPS) or thread.cancelled():
        return None
    step = last[1]
    started = thread.started(step.id)
    if started is None or thread.outcome(step) is not None:
        return None
    return Running(thread.id, step.service, step.tag, step.environment, started.deploy_id, started.at)


@dataclass(frozen=True)
class Queued:
    """An approved deploy waiting in line (status waiting_for_lock): for a lock, or a freeze."""

    thread_id: str
    service: str
    tag: str
    environment: str
    position: int
    behind: str  # what it waits for, as the bot said it
    since: datetime

    @property
    def words(self) -> str:
        return wording.queued(wording.what_to_deploy(self.service, self.tag, self.environment),
                              self.behind, self.position)


def queued(thread: Thread, now: datetime) -> Queued | None:
    """The deploy this thread has waiting in line, if it waits."""
    last = thread.last_step()
    if last is None or not isinstance(last[1], DEPLOY_STEPS) or thread.status(now) != "waiting_for_lock":
        return None
    step = last[1]
    said = thread.queued(step.id)
    if said is None:
        return None
    return Queued(thread.id, step.service, step.tag, step.environment, said.position, said.behind, said.at)


@dataclass(frozen=True)
class CheckState:
    name: str
    ok: bool | None  # None: no answer (or not asked yet)
    value: str
    at: datetime | None

    @property
    def state(self) -> str:
        return "holds" if self.ok else ("fails" if self.ok is False else "no answer")


@dataclass(frozen=True)
class Verifying:
    """A deploy under verification (status verifying): its bake, its checks' latest values,
    and whether the viewer may end it (verify now, skip verification)."""

    thread_id: str
    service: str
    tag: str
    environment: str
    since: datetime
    ends_at: datetime
    on_failure: str
    checks: list[CheckState]
    why_not: str | None  # why the viewer may not verify now or skip; None: they may

    @property
    def may_end(self) -> bool:
        return self.why_not is None


def verifying(thread: Thread, viewer: Identity, policy: Policy) -> Verifying | None:
    started = verification.open_verification(thread)
    if started is None:
        return None
    checks = [CheckState(name, seen.ok if seen else None, seen.value if seen else "not asked yet",
                         seen.at if seen else None)
              for name, seen in verification.latest(thread, started).items()]
    return Verifying(thread.id, started.service, started.tag, started.environment, started.at, started.ends_at,
                     started.on_failure, checks,
                     authority.why_not(policy, viewer, authority.SkipVerification(started.environment)))


BLOCKING = deploy_rules.ANYWAY_KINDS  # what "deploy anyway" goes past (bot.runtime.agent._blocked_deploy)


@dataclass(frozen=True)
class Blocked:
    """A deploy that failing CI checks or a freeze stopped: "deploy anyway" may force it."""

    service: str
    tag: str
    environment: str
    kind: str  # checks, frozen
    message: str  # what the bot said stopped it
    why_not: str | None  # why the viewer may not deploy it anyway; None: they may

    @property
    def may_force(self) -> bool:
        return self.why_not is None


def blocked(thread: Thread, viewer: Identity, policy: Policy) -> Blocked | None:
    """The deploy "deploy anyway" in this thread would force, as bot.runtime.agent finds it: the
    newest deploy step, unless a refused "deploy anyway" (passed over), when CI checks or a
    freeze stopped it; None when the thread is cancelled or waits on an approval."""
    if thread.cancelled() or thread.pending_approval() is not None:
        return None
    for e in reversed(thread.events):
        if not isinstance(e, DEPLOY_STEPS):
            continue
        outcome = thread.outcome(e)
        if getattr(e, "force", None) and isinstance(outcome, Error) and outcome.kind == "validation":
            continue
        if isinstance(outcome, Error) and outcome.kind in BLOCKING:
            return Blocked(e.service, e.tag, e.environment, outcome.kind, outcome.message,
                           authority.why_not(policy, viewer, authority.DeployAnyway(e.environment)))
        return None
    return None


@dataclass(frozen=True)
class Audit:
    """A deploy from request to outcome (what was asked and by whom, what was proposed, the
    approval and its evidence, the run, its result): its history record's audit fields, as
    bot.core.audit.audit_trail derives them from the thread (again from the live thread
    while it is there), and what only the live thread has."""

    record: DeployRecord
    change: Change | None = None  # what the approval showed it changes (the record keeps no commit list)
    approval_asked_by: str = ""  # who the approval was asked for, where the thread has no request

    @property
    def asked_by(self) -> str:
        return self.record.requested_by or self.approval_asked_by

    @property
    def output_tail(self) -> str:
        return transcript.clean(self.record.output_tail)


def audit(record: DeployRecord, thread: Thread | None, secrets: tuple[str, ...] = ()) -> Audit:
    """The trail of the deploy `record` is of: from its thread while the thread has the deploy's
    result, else (the thread removed after THREAD_RETENTION) what the record kept of it (empty
    for records older than those fields)."""
    result = next((e for e in thread.of(DeployResult) if e.deploy_id == record.deploy_id), None) if thread else None
    if thread is None or result is None:
        return Audit(record)
    approval = thread.approval_for(result.step_id)
    return Audit(
        replace(record, **audit_trail(thread, result, secrets)),
        change=approval.change if approval is not None else None,
        approval_asked_by=approval.asker if approval is not None else "",
    )


def record_fields(trail: Audit) -> dict[str, Any]:
    """One deploy as a flat row for the CSV and JSON Lines exports: every field of the
    record (whatever fields it has), its audit trail among them."""
    record = trail.record
    row: dict[str, Any] = {k: v.isoformat() if isinstance(v, datetime) else v for k, v in asdict(record).items()}
    for moment in ("requested_at", "decided_at", "started_at"):  # "" rather than null, as the other fields
        row[moment] = row[moment] or ""
    row.update(requested_by=trail.asked_by, finished_at=record.at.isoformat() if record.started_at else "")
    return row


# --- the board ---------------------------------------------------------------------------------


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
    promote_from: str | None = None  # the environment its Promote button takes the commit from (None: no button)


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


# --- freezes: what stops deploys now, the next scheduled window, and stop-the-line -------------


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
