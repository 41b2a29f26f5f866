"""In-memory stand-ins for the ports, for fast tests of the core, the service and the loop.

Each one keeps the documented semantics of its port (tests/contract runs the same cases
against these and the Redis adapters). Every operation is atomic, like one Redis script,
and yields to the event loop once first, like a round trip, so concurrent callers
interleave between operations as they do against a server. Time that matters to the
semantics (lease and lock TTLs, delivery marks) is read from an injectable monotonic clock
in seconds: a `ManualClock` lets a test move it on instead of sleeping.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections import deque
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime

from bot.core import events as ev
from bot.core.events import Event, GitTag, Step, new_id
from bot.core.thread import FINISHED, Origin, Thread
from bot.runtime.ports import (
    Check,
    Comparison,
    Conflict,
    DeployerError,
    DeployOutcome,
    DeployRecord,
    DeployRequest,
    LeaseLost,
    LlmError,
    Lock,
    Removal,
    ThreadExists,
    ThreadNotFound,
    WorkQueue,
)

Monotonic = Callable[[], float]  # seconds, like time.monotonic

FACT_ATTEMPTS = 50  # as RedisThreadStore: append_fact gives up after this many lost races
HISTORY_SCAN = 5000  # as RedisEnvironments: a search by service looks through this many


class ManualClock:
    """A monotonic clock that moves only when told to."""

    def __init__(self, start: float = 1000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


async def _round_trip() -> None:
    await asyncio.sleep(0)


@dataclass
class _Expiring:
    value: str
    expires: float | None  # None: never


class _Expiry:
    """Keys with optional TTLs, read against a monotonic clock (what SET ... PX does)."""

    def __init__(self, clock: Monotonic) -> None:
        self.clock = clock
        self.items: dict[object, _Expiring] = {}

    def get(self, key: object) -> str | None:
        item = self.items.get(key)
        if item is None:
            return None
        if item.expires is not None and self.clock() >= item.expires:
            del self.items[key]
            return None
        return item.value

    def set(self, key: object, value: str, ttl_seconds: float | None) -> None:
        expires = None if ttl_seconds is None else self.clock() + ttl_seconds
        self.items[key] = _Expiring(value, expires)

    def expire(self, key: object, ttl_seconds: float) -> bool:
        if self.get(key) is None:
            return False
        self.items[key].expires = self.clock() + ttl_seconds
        return True

    def delete(self, key: object) -> None:
        self.items.pop(key, None)


# --- ThreadStore ---------------------------------------------------------------------


@dataclass
class _Stored:
    origin: str  # JSON, as stored: what a thread is read back as goes through the same
    events: list[str]  # serialization as in Redis, so an event that does not round-trip fails here too
    packed: bool = False  # compacted: stored otherwise in Redis, the same thread to every reader


def _cursor(position: tuple[int, str]) -> str:
    return f"m{position[0]}:{position[1]}"


def _position(cursor: str) -> tuple[int, str]:
    tick, sep, member = cursor[1:].partition(":")
    if not cursor.startswith("m") or not sep or not tick.isdigit():
        raise ValueError("not a cursor from this listing")
    return int(tick), member


class MemoryThreadStore:
    """ThreadStore: compare-and-set appends, leases that fence a run's decisions, and the
    recency index, in a dict."""

    def __init__(self, clock: Monotonic = time.monotonic) -> None:
        self.clock = clock
        self._threads: dict[str, _Stored] = {}
        self._leases = _Expiry(clock)
        self._recent: dict[str, int] = {}  # thread id -> when last created or released
        self._ticks = 0
        # The status index, as RedisThreadStore's: id -> (version, status); per status, id ->
        # (when it entered it by `clock`, a tick for the order); finished and not compacted.
        self._indexed: dict[str, tuple[int, str]] = {}
        self._by_status: dict[str, dict[str, tuple[float, int]]] = {}
        self._to_compact: dict[str, float] = {}

    def _touch(self, thread_id: str) -> None:
        self._ticks += 1
        self._recent[thread_id] = self._ticks

    def _index(self, thread: Thread) -> None:
        status = thread.status()
        old = self._indexed.get(thread.id)
        if old is not None and old[0] > thread.version:
            return
        if old is not None and old[1] != status:
            self._by_status.get(old[1], {}).pop(thread.id, None)
        self._indexed[thread.id] = (thread.version, status)
        members = self._by_status.setdefault(status, {})
        if thread.id not in members:
            self._ticks += 1
            members[thread.id] = (self.clock(), self._ticks)
        if status in FINISHED:
            if old is None or old[1] not in FINISHED:
                self._to_compact.setdefault(thread.id, self.clock())
        else:
            self._to_compact.pop(thread.id, None)

    def _thread(self, thread_id: str, stored: _Stored) -> Thread:
        return Thread(
            thread_id, tuple(ev.load(raw) for raw in stored.events), Origin.model_validate_json(stored.origin)
        )

    def _landed(self, thread_id: str, version: int, events: Sequence[Event]) -> bool:
        """As RedisThreadStore: the same events at the same place are a resent write, not
        someone else's."""
        stored = self._threads.get(thread_id)
        return (
            stored is not None
            and len(stored.events) > version
            and ev.load(stored.events[version]).id == events[0].id
        )

    async def create(
        self, origin: Origin, events: Sequence[Event], thread_id: str | None = None,
        handoff: WorkQueue | None = None,
    ) -> Thread:
        if not events:
            raise ValueError("a thread starts with at least one event")
        await _round_trip()
        thread_id = thread_id or new_id()
        if thread_id in self._threads:
            if not self._landed(thread_id, 0, events):
                raise ThreadExists(thread_id)
            thread = self._thread(thread_id, self._threads[thread_id])  # a resent create: still handed off
        else:
            self._threads[thread_id] = _Stored(origin.dump(), [ev.dump(e) for e in events])
            self._touch(thread_id)
            thread = Thread(thread_id, tuple(events), origin)
            self._index(thread)
        if handoff is not None:
            await handoff.push(thread_id)
        return thread

    async def load(self, thread_id: str) -> Thread:
        await _round_trip()
        stored = self._threads.get(thread_id)
        if stored is None:
            raise ThreadNotFound(thread_id)
        return self._thread(thread_id, stored)

    async def refresh(self, thread: Thread) -> Thread:
        await _round_trip()
        stored = self._threads.get(thread.id)
        if stored is None:
            return thread
        return thread.extended([ev.load(raw) for raw in stored.events[thread.version:]])

    async def append(self, thread: Thread, events: Sequence[Event], holder: str | None = None) -> Thread:
        if not events:
            return thread
        await _round_trip()
        stored = self._threads.get(thread.id)
        if stored is None:
            raise ThreadNotFound(thread.id)
        if len(stored.events) != thread.version:
            if self._landed(thread.id, thread.version, events):
                return thread.extended([ev.load(raw) for raw in stored.events[thread.version:]])
            raise Conflict(thread.id, thread.version, len(stored.events))
        if holder:
            held = self._leases.get(thread.id)
            if held is not None and held != holder:
                raise LeaseLost(thread.id)
        stored.events.extend(ev.dump(e) for e in events)
        stored.packed = False  # expanded first, in Redis
        return thread.extended(events)

    async def append_fact(self, thread: Thread, events: Sequence[Event]) -> Thread:
        for _ in range(FACT_ATTEMPTS):
            try:
                return await self.append(thread, events)
            except Conflict:
                thread = await self.refresh(thread)
        raise RuntimeError(f"thread {thread.id}: could not append after {FACT_ATTEMPTS} conflicts")

    async def lease(self, thread_id: str, owner: str, ttl_ms: int) -> bool:
        await _round_trip()
        held = self._leases.get(thread_id)
        if held is not None and held != owner:
            return False
        self._leases.set(thread_id, owner, ttl_ms / 1000)
        return True

    async def claim(self, thread_id: str, owner: str, ttl_ms: int) -> Thread | None:
        await _round_trip()
        held = self._leases.get(thread_id)
        if held is not None and held != owner:
            return None
        stored = self._threads.get(thread_id)
        if stored is None:
            raise ThreadNotFound(thread_id)
        self._leases.set(thread_id, owner, ttl_ms / 1000)
        return self._thread(thread_id, stored)

    async def release(self, thread: Thread, owner: str) -> Thread:
        await _round_trip()
        if self._leases.get(thread.id) == owner:
            self._leases.delete(thread.id)
        if thread.id in self._recent:
            self._touch(thread.id)
        self._index(thread)
        stored = self._threads.get(thread.id)
        if stored is None:
            return thread
        return thread.extended([ev.load(raw) for raw in stored.events[thread.version:]])

    async def finish(self, thread: Thread, events: Sequence[Event], owner: str) -> Thread:
        return await self.release(await self.append(thread, events, owner), owner)

    async def recent(self, limit: int) -> list[str]:
        await _round_trip()
        newest = sorted(self._recent, key=lambda i: self._recent[i], reverse=True)
        return newest[:limit]

    async def index(self, thread: Thread) -> None:
        await _round_trip()
        self._index(thread)

    async def listed(
        self, statuses: Sequence[str] | None, limit: int, cursor: str | None = None
    ) -> tuple[list[str], str | None]:
        after = _position(cursor) if cursor else None
        await _round_trip()
        if statuses is None:
            entries = [(tick, i) for i, tick in self._recent.items()]
        else:
            entries = [(tick, i) for s in set(statuses) for i, (_, tick) in self._by_status.get(s, {}).items()]
        entries = sorted((e for e in entries if after is None or e < after), reverse=True)[:limit + 1]
        shown = entries[:limit]
        more = len(entries) > limit and shown
        return [i for _, i in shown], _cursor(shown[-1]) if more else None

    # --- Retention --------------------------------------------------------------------

    async def finished(self, older_than: float, limit: int) -> list[tuple[str, int]]:
        await _round_trip()
        before = self.clock() - older_than
        found = sorted((at, i) for s in FINISHED for i, (at, _) in self._by_status.get(s, {}).items() if at <= before)
        return [(i, self._indexed[i][0]) for _, i in found[:limit]]

    async def remove(self, thread_id: str, version: int) -> Removal:
        await _round_trip()
        stored = self._threads.get(thread_id)
        if stored is None:
            return "gone"
        if self._leases.get(thread_id) is not None or (not stored.packed and len(stored.events) != version):
            self._index(self._thread(thread_id, stored))
            return "kept"
        del self._threads[thread_id]
        return "removed"

    async def unindex(self, thread_id: str) -> None:
        await _round_trip()
        old = self._indexed.pop(thread_id, None)
        for members in self._by_status.values():
            members.pop(thread_id, None)
        self._to_compact.pop(thread_id, None)
        self._recent.pop(thread_id, None)
        del old

    async def compactable(self, older_than: float, limit: int) -> list[str]:
        await _round_trip()
        before = self.clock() - older_than
        return [i for at, i in sorted((at, i) for i, at in self._to_compact.items() if at <= before)][:limit]

    async def compact(self, thread_id: str) -> bool:
        await _round_trip()
        stored = self._threads.get(thread_id)
        if stored is None or stored.packed:
            self._to_compact.pop(thread_id, None)
            return False
        thread = self._thread(thread_id, stored)
        if thread.status() not in FINISHED:
            self._index(thread)
            return False
        if self._leases.get(thread_id) is not None:
            return False
        stored.packed = True
        self._to_compact.pop(thread_id, None)
        return True

    def packed(self, thread_id: str) -> bool:
        """For tests: whether the thread is compacted."""
        stored = self._threads.get(thread_id)
        return stored is not None and stored.packed

    async def ping(self) -> None:
        await _round_trip()


# --- Inbox ---------------------------------------------------------------------------


class MemoryInbox:
    """Inbox: delivery marks that expire, conversations bound once, first-writer-wins links.
    A delivery mark holds the token of the call that set it, as RedisInbox's does."""

    def __init__(self, clock: Monotonic = time.monotonic) -> None:
        self.clock = clock
        self._marks = _Expiry(clock)
        self._conversations: dict[str, str] = {}
        self._refs: dict[str, str] = {}
        self._kept = _Expiry(clock)  # what `keep` bound, until it expires
        self._names: dict[str, dict[tuple[str, str], str]] = {}  # thread -> (kind, name) -> value

    async def receive(
        self, scope: str, message_id: str, ttl_seconds: int, new_thread_id: str | None
    ) -> tuple[bool, str | None, bool]:
        token = new_id()
        await _round_trip()
        bound = self._conversations.get(scope)
        mark = self._marks.get((scope, message_id))
        if mark is not None:
            if mark == token:  # our own call, sent again: still fresh
                return True, bound, bound is not None and bound == new_thread_id
            return False, bound, False
        self._marks.set((scope, message_id), token, ttl_seconds)
        if bound is not None:
            return True, bound, False
        if not new_thread_id:
            return True, None, False
        self._conversations[scope] = new_thread_id
        self._names.setdefault(new_thread_id, {})[("conversation", scope)] = new_thread_id
        return True, new_thread_id, True

    async def forget(self, scope: str, message_id: str) -> None:
        await _round_trip()
        self._marks.delete((scope, message_id))

    async def link(self, name: str, value: str, thread_id: str | None = None) -> str:
        await _round_trip()
        if thread_id is not None:
            self._names.setdefault(thread_id, {})[("ref", name)] = value
        if name not in self._refs and (kept := self._kept.get(name)) is not None:
            return kept  # Redis's SET NX sees a kept value as bound too
        return self._refs.setdefault(name, value)

    async def keep(self, name: str, value: str, ttl_seconds: int) -> None:
        await _round_trip()
        self._refs.pop(name, None)
        self._kept.set(name, value, ttl_seconds)

    async def drop(self, thread_id: str) -> int:
        await _round_trip()
        dropped = 0
        for (kind, name), value in self._names.pop(thread_id, {}).items():
            held = self._conversations if kind == "conversation" else self._refs
            if held.get(name) == value:
                del held[name]
                dropped += 1
        return dropped

    async def lookup(self, name: str) -> str | None:
        await _round_trip()
        return self._refs.get(name, self._kept.get(name))

    async def ping(self) -> None:
        await _round_trip()


# --- Locks and History ---------------------------------------------------------------


class MemoryEnvironments:
    """Locks (one owner per environment, or per service there; optional TTL, owner-checked
    renew and release) and History (newest first, capped per environment), as
    RedisEnvironments."""

    def __init__(self, clock: Monotonic = time.monotonic) -> None:
        self.clock = clock
        self._locks: dict[tuple[str, str], Lock] = {}
        self._held = _Expiry(clock)  # (environment, service) -> owner, with the lock's TTL
        self._history: dict[str, deque[DeployRecord]] = {}
        self._faulty: set[str] = set()
        self._verified: dict[str, datetime] = {}

    def _holder(self, environment: str, service: str = "") -> Lock | None:
        key = (environment, service)
        if self._held.get(key) is None:
            self._locks.pop(key, None)
            return None
        return self._locks[key]

    async def acquire(self, lock: Lock, ttl_ms: int | None) -> Lock | None:
        await _round_trip()
        env = self._holder(lock.environment) if lock.service else None
        if env is not None and env.owner != lock.owner:
            return env
        key = (lock.environment, lock.service)
        held = self._holder(*key)
        if held is None:
            self._locks[key] = lock
            self._held.set(key, lock.owner, None if ttl_ms is None else ttl_ms / 1000)
            return None
        if held.owner == lock.owner:
            if ttl_ms:
                self._held.expire(key, ttl_ms / 1000)
            return None
        return held

    async def renew(self, environment: str, owner: str, ttl_ms: int, service: str = "") -> bool:
        await _round_trip()
        held = self._holder(environment, service)
        if held is None or held.owner != owner:
            return False
        return self._held.expire((environment, service), ttl_ms / 1000)

    async def release(self, environment: str, owner: str | None, service: str = "") -> bool:
        await _round_trip()
        held = self._holder(environment, service)
        if held is None or (owner and held.owner != owner):
            return False
        self._held.delete((environment, service))
        self._locks.pop((environment, service), None)
        return True

    async def hand_over(self, lock: Lock, from_owner: str) -> bool:
        await _round_trip()
        key = (lock.environment, lock.service)
        held = self._holder(*key)
        if held is None or held.owner != from_owner:
            return False
        self._locks[key] = lock
        self._held.set(key, lock.owner, None)
        return True

    async def holder(self, environment: str, service: str = "") -> Lock | None:
        await _round_trip()
        return self._holder(environment) or (self._holder(environment, service) if service else None)

    async def held(self, environment: str, services: Iterable[str]) -> list[Lock]:
        await _round_trip()
        found = (self._holder(environment, s) for s in ("", *services))
        return [lock for lock in found if lock is not None]

    async def record(self, entry: DeployRecord) -> None:
        await _round_trip()
        self._history.setdefault(entry.environment, deque()).appendleft(entry)

    async def recent(self, environment: str, limit: int, service: str | None = None) -> list[DeployRecord]:
        await _round_trip()
        scanned = list(self._history.get(environment, ()))[:HISTORY_SCAN if service else limit]
        found = [replace(r, faulty=r.deploy_id in self._faulty, verified_at=self._verified.get(r.deploy_id))
                 for r in scanned if service is None or r.service == service]
        return found[:limit]

    async def page(
        self, environment: str, limit: int, cursor: str | None = None, service: str | None = None
    ) -> tuple[list[DeployRecord], str | None]:
        await _round_trip()
        records = list(self._history.get(environment, ()))
        start = 0
        if cursor is not None:
            if not cursor.startswith("h:"):
                raise ValueError("not a cursor from this listing")
            start = next((i + 1 for i, r in enumerate(records) if r.deploy_id == cursor[2:]), len(records))
        found = [replace(r, faulty=r.deploy_id in self._faulty, verified_at=self._verified.get(r.deploy_id))
                 for r in records[start:] if service is None or r.service == service][:limit + 1]
        shown = found[:limit]
        return shown, f"h:{shown[-1].deploy_id}" if len(found) > limit else None

    async def expire(self, environment: str, before: datetime, limit: int, dry_run: bool = False) -> int:
        await _round_trip()
        records = self._history.get(environment, deque())
        old = 0
        for r in reversed(records):
            if r.at >= before or old == limit:
                break
            old += 1
        if not dry_run:
            for _ in range(old):
                records.pop()
        return old

    async def mark_faulty(self, environment: str, deploy_id: str) -> None:
        await _round_trip()
        self._faulty.add(deploy_id)

    async def since(self, environment: str, after: datetime, limit: int) -> list[DeployRecord]:
        await _round_trip()
        found = []
        for r in self._history.get(environment, ()):  # newest first, as RedisEnvironments
            if r.at < after or len(found) == limit:
                break
            found.append(replace(r, faulty=r.deploy_id in self._faulty, verified_at=self._verified.get(r.deploy_id)))
        return found
    async def mark_verified(self, environment: str, deploy_id: str, at: datetime) -> None:
        await _round_trip()
        self._verified[deploy_id] = at


# --- NextStepModel -------------------------------------------------------------------

Reply = Step | LlmError | Callable[[str], Step | Awaitable[Step]]


class ScriptedModel:
    """NextStepModel answering from a queue: a step, an LlmError (raised), or a function of
    the context, plain or async (to act at the moment the model is asked, e.g. while a run
    holds a thread; it may raise LlmError too).
    Every context it was asked with is kept in `contexts`; an empty queue is an LlmError."""

    def __init__(self, *replies: Reply) -> None:
        self.replies: deque[Reply] = deque(replies)
        self.contexts: list[str] = []

    def script(self, *replies: Reply) -> None:
        self.replies.extend(replies)

    async def next_step(self, context: str) -> Step:
        self.contexts.append(context)
        await _round_trip()
        if not self.replies:
            raise LlmError("ScriptedModel: no reply scripted for this call")
        reply = self.replies.popleft()
        if isinstance(reply, LlmError):
            raise reply
        if callable(reply):
            answer = reply(context)
            return await answer if inspect.isawaitable(answer) else answer
        return reply


# --- Deployer ------------------------------------------------------------------------

Outcome = DeployOutcome | BaseException
OK = DeployOutcome(ok=True, exit_code=0, output="deployed")


class MemoryDeployer:
    """Deployer over a dict of tags (newest first). Every deploy() call is kept in
    `requests`; `deploys` holds the deploys actually started (with `resumable`, a call for a
    deploy id already started follows that deploy instead of starting another). Outcomes are
    taken from `outcomes` in order (an exception there is raised: a DeployerError, or any
    BaseException to stand for the process dying mid-deploy), then OK.

    The repository is one linear history, `history` (oldest first): unless given, one commit
    per tag, in the order the tags were given (newest first, so the last tag's commit is the
    oldest), each with the subject "release <tag>". add_commit() puts a commit on top, and
    move_tag() to a commit not in the history puts that commit on top (a tag moved to a new
    commit). compare() counts along it: a commit later in the history is ahead of an earlier
    one, and nothing ever diverges. `ci` holds each commit's checks: checks() gives a copy, or
    None for a commit not in it (no CI to ask). `lookup_error`, when set, is raised by every
    read (list_tags, resolve, compare, checks): the repository cannot be reached."""

    def __init__(
        self,
        tags: Mapping[str, str] | Iterable[tuple[str, str]] = (),
        resumable: bool = False,
        outcomes: Sequence[Outcome] = (),
        history: Iterable[ev.CommitSummary] | None = None,
    ) -> None:
        self.tags: dict[str, str] = dict(tags)
        self.resumable = resumable
        self.outcomes: deque[Outcome] = deque(outcomes)
        self.requests: list[DeployRequest] = []
        self.deploys: list[DeployRequest] = []
        self.lookup_error: DeployerError | None = None  # raised by every read when set
        self.history: list[ev.CommitSummary] = list(history) if history is not None else []
        if history is None:
            for name, commit in reversed(list(self.tags.items())):
                self._on_top(commit, f"release {name}")
        self.ci: dict[str, list[Check]] = {}  # commit -> its checks (none here: no CI to ask)
        self._results: dict[str, DeployOutcome] = {}  # deploy id -> outcome, once it finished

    def move_tag(self, tag: str, commit: str) -> None:
        self.tags[tag] = commit
        self._on_top(commit, f"release {tag}")

    def add_commit(self, sha: str, subject: str = "", author: str = "dev", tag: str | None = None) -> None:
        """A commit on top of the history; with `tag`, tagged so as the newest tag."""
        self.history.append(ev.CommitSummary(sha=sha, subject=subject or f"commit {sha[:7]}", author=author))
        if tag:
            self.tags = {tag: sha, **{n: c for n, c in self.tags.items() if n != tag}}

    def _on_top(self, commit: str, subject: str) -> None:
        if all(c.sha != commit for c in self.history):
            self.history.append(ev.CommitSummary(sha=commit, subject=subject, author="dev"))

    def script(self, *outcomes: Outcome) -> None:
        self.outcomes.extend(outcomes)

    async def list_tags(self) -> list[GitTag]:
        await _round_trip()
        if self.lookup_error:
            raise self.lookup_error
        return [GitTag(name=name, commit=commit) for name, commit in self.tags.items()]

    async def resolve(self, tag: str) -> str | None:
        await _round_trip()
        if self.lookup_error:
            raise self.lookup_error
        return self.tags.get(tag)

    async def compare(self, base: str, head: str, limit: int) -> Comparison:
        await _round_trip()
        if self.lookup_error:
            raise self.lookup_error
        index = {c.sha: i for i, c in enumerate(self.history)}
        for ref in (base, head):
            if ref not in index:
                raise DeployerError(f"no commit {ref!r} in the repository")
        b, h = index[base], index[head]
        added = tuple(reversed(self.history[b + 1 : h + 1]))[: max(limit, 0)]  # empty unless ahead
        removed = tuple(reversed(self.history[h + 1 : b + 1]))[: max(limit, 0)]  # empty unless behind
        return Comparison(ahead=max(h - b, 0), behind=max(b - h, 0), added=added, removed=removed)

    async def checks(self, commit: str) -> list[Check] | None:
        await _round_trip()
        if self.lookup_error:
            raise self.lookup_error
        found = self.ci.get(commit)
        return None if found is None else list(found)

    async def deploy(self, request: DeployRequest) -> DeployOutcome:
        self.requests.append(request)
        await _round_trip()
        following = self.resumable and any(d.deploy_id == request.deploy_id for d in self.deploys)
        if following and request.deploy_id in self._results:
            return self._results[request.deploy_id]
        if not following:
            self.deploys.append(request)
        outcome = self.outcomes.popleft() if self.outcomes else OK
        if isinstance(outcome, BaseException):
            raise outcome
        self._results[request.deploy_id] = outcome
        return outcome


class Crash(BaseException):
    """Stands for the process dying: not an Exception, so nothing on the way handles it."""


@dataclass
class RecordingNotifier:
    """Notifier that keeps what it was told: (thread id, event types) per publish."""

    published: list[tuple[str, list[str]]] = field(default_factory=list)

    async def publish(self, thread: Thread, new: Sequence[Event]) -> None:
        self.published.append((thread.id, [e.type for e in new]))
