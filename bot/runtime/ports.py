"""What the core needs from the outside world. Adapters implement these; the core sees
nothing else."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal, Protocol

from bot.core import wording
from bot.core.events import CommitSummary, Event, GitTag, Step, VerifyCheck
from bot.core.freeze_windows import Freeze
from bot.core.thread import Origin, Thread


class ThreadNotFound(LookupError):
    pass


class ThreadExists(Exception):
    pass


class Conflict(Exception):
    """Someone appended to the thread first. Re-read it and decide again; never overwrite."""

    def __init__(self, thread_id: str, expected: int, actual: int) -> None:
        super().__init__(f"thread {thread_id}: expected version {expected}, found {actual}")
        self.expected, self.actual = expected, actual


class LeaseLost(Exception):
    """Another run holds the thread now (ours lapsed): this run must stop deciding."""


class ThreadStore(Protocol):
    """Threads: their events, and the lease that lets one run decide at a time."""

    async def create(
        self, origin: Origin, events: Sequence[Event], thread_id: str | None = None,
        handoff: WorkQueue | None = None,
    ) -> Thread:
        """A new thread; with `thread_id`, raises ThreadExists if that id is taken.
        `handoff`: the thread is also pushed on that queue, once it is stored (a worker that
        takes it finds it), in the same round trip where the store can. A create
        of an id that was taken may push it anyway: a worker then finds nothing new to do."""
        ...

    async def load(self, thread_id: str) -> Thread: ...

    async def refresh(self, thread: Thread) -> Thread:
        """The same thread with whatever was appended after `thread.version`."""
        ...

    async def append(self, thread: Thread, events: Sequence[Event], holder: str | None = None) -> Thread:
        """Append iff the stored version is still `thread.version`; else raise Conflict.
        With `holder` (a run's lease owner), raise LeaseLost if another run holds the lease."""
        ...

    async def append_fact(self, thread: Thread, events: Sequence[Event]) -> Thread:
        """Append what already happened, whatever was appended meanwhile (re-reading on
        conflict): a result or a failed delivery is a fact, not a decision to re-take."""
        ...

    async def lease(self, thread_id: str, owner: str, ttl_ms: int) -> bool:
        """Take (or, for its owner, extend) the right to run a thread; False if another has it."""
        ...

    async def claim(self, thread_id: str, owner: str, ttl_ms: int) -> Thread | None:
        """lease() and load() at once; None if another runner holds the thread."""
        ...

    async def release(self, thread: Thread, owner: str) -> Thread:
        """Give up the lease, mark the thread recently active (for listing and recovery),
        and return `thread` with whatever was appended after it (by writers that could not
        run the thread while it was held)."""
        ...

    async def finish(self, thread: Thread, events: Sequence[Event], owner: str) -> Thread:
        """append(thread, events, holder=owner), then release() of the result, in one round
        trip where the store can (the last events of a run that leaves nothing else behind).
        Raises as append() does, and then keeps the lease (the run decides again
        from what is stored); else returns what release() returns."""
        ...

    async def recent(self, limit: int) -> list[str]:
        """Ids of the threads most recently created or released, newest first."""
        ...

    async def index(self, thread: Thread) -> None:
        """Record `thread.status()` in the status index, unless the index already holds a
        newer version of the thread. create() and release() do it themselves; the service
        does it after a person's append, and the sweep when it finds the index behind."""
        ...

    async def listed(
        self, statuses: Sequence[str] | None, limit: int, cursor: str | None = None
    ) -> tuple[list[str], str | None]:
        """One page of thread ids, newest first, and the cursor of the next page (None on
        the last one). `statuses` None: every thread, by when it was last created or
        released; else the threads the index has in any of those statuses, by when they
        entered it. The cursor is opaque; a malformed one raises ValueError. A thread that
        moves while someone pages goes to the top: no page lists it twice."""
        ...


Removal = Literal["removed", "gone", "kept"]


class Retention(Protocol):
    """What bot/runtime/gc.py asks of the thread store: finished threads by age, removing them, and
    compacting them (the same thread, stored smaller)."""

    async def finished(self, older_than: float, limit: int) -> list[tuple[str, int]]:
        """(id, version) of threads the index has had as finished (done, failed, cancelled)
        for longer than `older_than` seconds, longest first."""
        ...

    async def remove(self, thread_id: str, version: int) -> Removal:
        """Delete the thread's events, meta and lease if it is still at `version` and no run
        holds it ("removed"; "gone": nothing was there; "kept": it moved on or is held, and
        is indexed again). Its Inbox names are the Inbox's (Inbox.drop); its index entries
        stay until `unindex`, so a crash in between leaves it for the next pass."""
        ...

    async def unindex(self, thread_id: str) -> None:
        """Forget the thread in every index (status, recency)."""
        ...

    async def compactable(self, older_than: float, limit: int) -> list[str]:
        """Threads finished for longer than `older_than` seconds and not compacted yet,
        longest first."""
        ...

    async def compact(self, thread_id: str) -> bool:
        """Store the thread in one compressed value, if it is finished and idle; True if it
        was. load, refresh and append see no difference (an append expands it first)."""
        ...


class Inbox(Protocol):
    """What channels keep about their conversations: which inbound messages were already
    taken in (deliveries are retried and replayed), which bot thread a conversation belongs
    to, and their own pointers (an approval to the message asking for it). Each channel names its own (its
    package's names.py); the Inbox puts them inside its keys."""

    async def receive(
        self, scope: str, message_id: str, ttl_seconds: int, new_thread_id: str | None
    ) -> tuple[bool, str | None, bool]:
        """Take in one inbound message of a conversation (a Slack thread, an email chain),
        atomically: (fresh, thread id, started). `fresh` is False for a repeat delivery (which
        still gets the conversation's thread id).
        A conversation with no thread yet is bound to `new_thread_id` (started=True);
        with None it stays unbound (a reply to something the bot never saw)."""
        ...

    async def forget(self, scope: str, message_id: str) -> None:
        """Undo receive()'s delivery mark, so a retry of a message we failed to store counts."""
        ...

    async def link(self, name: str, value: str, thread_id: str | None = None) -> str:
        """Bind `name` to `value` unless already bound; return the value that won. With
        `thread_id`, the binding belongs to that thread: it goes when the thread does."""
        ...

    async def lookup(self, name: str) -> str | None: ...

    async def keep(self, name: str, value: str, ttl_seconds: int) -> None:
        """Bind `name` to `value` for `ttl_seconds`, replacing what it held (`lookup` reads
        it): what a channel needs for a while and then never again, such as what it sent."""
        ...

    async def drop(self, thread_id: str) -> int:
        """Delete every conversation binding and pointer recorded for `thread_id` (by
        `receive` binding a conversation to it, or `link(..., thread_id=)`), each only while
        it still holds what was recorded. The number deleted."""
        ...


class Health(Protocol):
    async def ping(self) -> None:
        """Raise if the storage is unreachable."""
        ...


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


@dataclass(frozen=True)
class DeployRequest:
    deploy_id: str  # idempotency key: thread id + step id
    service: str
    tag: str
    environment: str
    commit: str


@dataclass(frozen=True)
class DeployOutcome:
    ok: bool
    exit_code: int | None
    output: str
    url: str = ""


@dataclass(frozen=True)
class Comparison:
    """`head` against `base`: commits `head` has that `base` lacks (`ahead`, `added`) and the
    other way round (`behind`, `removed`); the lists newest first, at most the limit asked."""

    ahead: int
    behind: int
    added: tuple[CommitSummary, ...] = ()
    removed: tuple[CommitSummary, ...] = ()


CheckState = Literal["success", "pending", "failure"]


@dataclass(frozen=True)
class Check:
    """One CI signal on a commit: a commit status context or a check run."""

    name: str
    state: CheckState


class DeployerError(Exception):
    """The deployer could not do its job at all (not a failed deploy: that is an outcome)."""


class Versions(Protocol):
    """Where a service's versions come from: its tags, the commit each names, what changed
    between two commits and what CI says of one (a local git repository, GitHub). Any way of
    running a deploy can reuse one (bot/adapters/deployers/pair.py)."""

    async def list_tags(self) -> list[GitTag]:
        """Newest first."""
        ...

    async def resolve(self, tag: str) -> str | None:
        """The commit a tag points to now, or None if there is no such tag."""
        ...

    async def compare(self, base: str, head: str, limit: int) -> Comparison:
        """`head` against `base` (commits), for a change preview. DeployerError if either is
        unknown to the repository."""
        ...

    async def checks(self, commit: str) -> list[Check] | None:
        """The CI checks on `commit` (every status context and check run), or None where the
        repository has no CI to ask (a local repository)."""
        ...


class DeployRunner(Protocol):
    """How a deploy of an approved commit runs (a command, a GitHub Actions workflow). Named
    apart from bot.runtime.loop.Runner, which runs threads."""

    resumable: bool
    """True when deploy() with a known deploy_id finds and follows a deploy already running
    for it instead of starting another, so an interrupted deploy can be resumed safely."""

    async def deploy(self, request: DeployRequest) -> DeployOutcome: ...


class Deployer(Versions, DeployRunner, Protocol):
    """A service's deploys: where its versions come from and how a deploy runs, together
    (bot/wiring/deployers.py builds one per service, by kind)."""


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


@dataclass(frozen=True)
class DeployRecord:
    environment: str
    service: str
    tag: str
    commit: str
    ok: bool
    at: datetime
    approved_by: str | None
    thread_id: str
    deploy_id: str
    url: str = ""
    rollback_of: str | None = None  # the deploy this one rolled back
    force: str | None = None  # deployed past failing checks: why, and who said so
    forced_by: str | None = None
    faulty: bool = False  # rolled back since: never a rollback target again
    verified_at: datetime | None = None
    # The audit trail, kept here because the record outlives its thread (THREAD_RETENTION;
    # the history has DEPLOY_HISTORY_RETENTION). Empty in records older than these fields.
    requested_by: str = ""  # who asked: the person, else the channel's id for them
    request: str = ""  # what they wrote (or the feedback that led to the proposal)
    requested_via: str = ""  # slack, email, token, session, name
    requested_channel: str = ""
    request_evidence: str = ""  # the Slack user id, the address and Message-ID, the token id
    requested_at: datetime | None = None
    proposed_by: str = ""  # llm (the model), command (an exact command), bot
    proposal_reason: str = ""
    proposed_at: datetime | None = None
    approval_id: str = ""  # "": no approval was needed
    approval_asked_at: datetime | None = None
    approval_expires_at: datetime | None = None
    decided_by: str = ""
    decided_via: str = ""
    decided_channel: str = ""
    decision_evidence: str = ""
    decided_at: datetime | None = None
    started_at: datetime | None = None
    exit_code: int | None = None
    output_tail: str = ""  # the last lines of the deploy's output, secrets redacted


class History(Protocol):
    async def record(self, entry: DeployRecord) -> None: ...

    async def recent(self, environment: str, limit: int, service: str | None = None) -> list[DeployRecord]:
        """Newest first; with `service`, only its deploys (among the newest few thousand)."""
        ...

    async def page(
        self, environment: str, limit: int, cursor: str | None = None, service: str | None = None
    ) -> tuple[list[DeployRecord], str | None]:
        """Up to `limit` records after `cursor`, newest first, and the cursor of the next
        page (None: the last). A malformed cursor raises ValueError."""
        ...

    async def expire(self, environment: str, before: datetime, limit: int, dry_run: bool = False) -> int:
        """Drop up to `limit` of the oldest records older than `before`: how many went (would go)."""
        ...

    async def mark_faulty(self, environment: str, deploy_id: str) -> None:
        """The deploy was rolled back: `recent` shows it `faulty` from now on."""
        ...

    async def mark_verified(self, environment: str, deploy_id: str, at: datetime) -> None:
        """The deploy's checks held for its whole bake (bot/core/verification.py): `recent`
        shows it with `verified_at` from now on."""
        ...

    async def since(self, environment: str, after: datetime, limit: int) -> list[DeployRecord]:
        """The records that finished at `after` or later, newest first, at most `limit`: read
        from the newest back, stopping at the first older one, so what it costs follows the
        window asked for, not the length of the history (delivery metrics)."""
        ...


class CommitTimes(Protocol):
    """When commits were made (a deployer's versions that know: git, GitHub). Optional: a
    deployer without it gives no lead times."""

    async def commit_times(self, commits: Sequence[str]) -> dict[str, datetime]:
        """The committer time of each commit found; those not found are left out."""
        ...


@dataclass(frozen=True)
class Tally:
    """One labelled series of the deploy counters every process shares (GET /metrics):
    `kind` "deploy" (outcome "success" or "failure"; the histogram is its duration) or
    "approval_wait" (outcome ""; the histogram is the wait from the ask to the decision)."""

    kind: str
    service: str
    environment: str
    outcome: str
    count: int
    total: float  # the sum of the observed seconds
    buckets: tuple[tuple[float, int], ...]  # (upper bound in seconds, observations at or below), ascending


class DeployCounters(Protocol):
    async def tallies(self) -> list[Tally]:
        """Every series counted since the counters began, for all processes."""
        ...


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


class LlmError(Exception):
    """The model could not give a usable step: unreachable, refused, or unparseable."""


class NextStepModel(Protocol):
    async def next_step(self, context: str) -> Step: ...


class Notifier(Protocol):
    async def publish(self, thread: Thread, new: Sequence[Event]) -> None:
        """Tell the thread's channel about new events. Must not raise."""
        ...


Endpoint = Callable[[Any], Awaitable[Any]]  # an ASGI framework's endpoint: takes the request


@dataclass(frozen=True)
class Route:
    """An HTTP endpoint a channel answers on (POST). The front door reads no credentials for
    it: the channel proves who is speaking itself (a signature, a shared secret)."""

    path: str
    endpoint: Endpoint


class Channel(Protocol):
    """A way people reach the bot or hear from it (Slack, email, a webhook), switched on. The
    composition root (bot/wiring/channels.py) builds one per configured kind, serves its
    routes, adds its notifier to the fan-out and starts and stops it with the process."""

    def routes(self) -> Sequence[Route]:
        """What it answers over HTTP (none for a channel that only notifies, or that keeps a
        connection of its own, like Slack's Socket Mode)."""
        ...

    def notifier(self) -> Notifier | None:
        """What tells its people about new events; None for a channel that only listens."""
        ...

    async def start(self, receive: bool) -> None:
        """Start; take inbound messages only if `receive` (a worker process does not)."""
        ...

    async def stop(self) -> None:
        """Finish what it was sending and let go of its connections."""
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
