"""Launch, answer, cancel and fork threads: the operations every channel shares.

Each one validates against the thread as stored and appends with compare-and-set; a lost
race re-reads and validates again, so two approvals at once yield exactly one decision.
Nothing is appended when an operation is refused.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from bot.core import authority, outcomes, wording
from bot.core.commands import is_approval
from bot.core.events import (
    DEPLOY_STEPS,
    Cancelled,
    Event,
    HumanResponse,
    SenderConfirmed,
    UserMessage,
    principal_of,
    stamped,
)
from bot.core.people import AGENT, API, Directory, Identity
from bot.core.policy import Policy
from bot.core.thread import ACTIVE, FINISHED, STATUSES, Forker, Origin, Thread
from bot.runtime.clock import utcnow
from bot.runtime.ports import Conflict, Notifier, ThreadNotFound, ThreadStore, WorkQueue
from bot.runtime.skew import ClockCheck

log = logging.getLogger(__name__)
RELEASE_MARGIN = timedelta(minutes=10)  # a run releases its thread well within this of its last event
# Threads a page loads at once. Each load holds one pooled Redis connection while it runs, and
# redis-py refuses a connection past the pool's size outright (MaxConnectionsError, before
# any retry): a page of any size takes at most this many, whatever is stored.
LOADS_AT_ONCE = 16
RECORD_ATTEMPTS = 50  # record_unless gives up after losing this many races (as the store's append_fact)


class Refused(Exception):
    """An operation was refused; nothing was recorded. The message is for the person asking."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class Unauthorized(Refused):
    """Who is asking is not known."""


class NotFound(Refused):
    pass


class Forbidden(Refused):
    """Known, but not allowed to do this."""


class WrongState(Refused):
    """Not possible in the thread's current state."""


class Invalid(Refused):
    """The request itself is malformed."""


def said_by(who: Identity, evidence: str = "", raw_users: Collection[str] = frozenset()) -> dict[str, str | None]:
    """The fields an event records about who did it: `user` as channels always stored it
    (the channel's own id of them where their `via` is one of `raw_users`, e.g. a chat
    user id or an address; by the API or a token, the name), the person, how they came, and
    the evidence (`evidence`, else the identity's own: the channel's id, the token id)."""
    user = who.evidence if who.via in raw_users else who.label
    return {"user": user, "person": who.person, "via": who.via, "evidence": evidence or who.evidence}


@dataclass
class ThreadService:
    store: ThreadStore
    policy: Policy
    notifier: Notifier | None = None
    clock: Callable[[], datetime] = utcnow
    # The `via`s whose events store the channel's own id of the speaker as `user` (the
    # registry's to say: bot/wiring/channels.raw_users), so what is stored stays as it was.
    raw_users: frozenset[str] = frozenset()
    # This process's clock against the store's (bot/runtime/skew.py): an approval is not
    # taken while it is off, since whether it expired is read off this clock.
    clock_check: ClockCheck | None = None

    @property
    def directory(self) -> Directory:
        """Who is who: channels resolve whoever speaks with it (by their channel's id, or
        `by_name`) and pass the Identity in."""
        return self.policy.directory

    def unproven(self, name: str) -> Identity:
        """Someone named by what proves nothing (the shared API token's `user`): a pipeline
        or a bot, someone unknown (`api:<name>`) with no powers but `*`. Naming a person of
        deploybot.toml (by any of their ids) is Forbidden: were it kept, their own token could
        then approve "someone else's" request. In open mode names are trusted, as before."""
        if self.policy.open_mode:
            return self.directory.by_name(name)
        person = self.directory.person_named(name)
        if person is not None:
            raise Forbidden(wording.use_your_personal_token(person))
        return Identity(None, API, name.strip())

    async def launch(
        self,
        text: str,
        who: Identity,
        channel: str = "api",
        origin: Origin | None = None,
        thread_id: str | None = None,
        evidence: str = "",
        then: Sequence[Event] = (),
        handoff: WorkQueue | None = None,
    ) -> Thread:
        """`evidence`: the channel's detail for an audit when it is more than the identity's
        (an email's Message-ID besides its address). `then`: events recorded with the first
        message (a SenderConfirmationRequested, for a sender nothing proved). `handoff`: the
        queue the new thread is pushed on for a worker, with its creation (ThreadStore.create),
        so the caller need not kick it."""
        if not text.strip():
            raise Invalid(wording.empty_message())
        await self._within_limits(who)
        message = UserMessage(text=text, channel=channel, **said_by(who, evidence, self.raw_users))
        events = stamped([message, *then], self.clock())
        thread = await self.store.create(origin or Origin(channel=channel), events, thread_id, handoff)
        for event in events:
            await self._publish(thread, event)
        return thread

    async def _within_limits(self, who: Identity) -> None:
        """Whether `who` may start one more thread (an agent: within its limits, max_open and
        max_per_hour, whichever channel it comes by); the threads they count are read only
        for an agent."""
        counted = await self._counted() if who.via == AGENT else []
        self._may(who, authority.Start(counted, self.clock()))

    def _may(self, who: Identity, action: authority.Action) -> None:
        """Raise Forbidden with the authority's sentence when `who` may not do `action`."""
        refused = authority.why_not(self.policy, who, action)
        if refused:
            raise Forbidden(refused)

    async def _counted(self) -> list[Thread]:
        """Every open thread, and every thread started in the last hour: what the limits count.
        The open ones from the status index; then the threads most recently created or
        released, newest first, until one was last written well before the hour began (its
        place in that order is when it was released, just after its last event, and a thread
        started within the hour is placed no earlier than that)."""
        found: list[Thread] = []
        for status in ACTIVE:
            found += await self.recent(status, 1000)
        since = self.clock() - authority.HOUR - RELEASE_MARGIN
        cursor: str | None = None
        while True:
            page, cursor = await self.page(None, 100, cursor)
            found += page
            if cursor is None or not page or (page[-1].events and page[-1].events[-1].at < since):
                return found

    async def get(self, thread_id: str) -> Thread:
        try:
            return await self.store.load(thread_id)
        except ThreadNotFound:
            raise NotFound(wording.no_thread(thread_id)) from None

    async def recent(self, status: str | None = None, limit: int = 50) -> list[Thread]:
        return (await self.page(status, limit))[0]

    async def page(
        self, status: str | None = None, limit: int = 50, cursor: str | None = None
    ) -> tuple[list[Thread], str | None]:
        """Up to `limit` threads, newest first, and the cursor of the next page (None: this
        is the last). With `status`, only threads in it now: read from the status index,
        never from every thread stored."""
        if status is not None and status not in STATUSES:
            raise Invalid(wording.bad_status(STATUSES))
        # The index has statuses without a clock: an approval that expired by now still
        # counts as waited for there, but waits for a human's reply here.
        statuses = None if status is None else \
            ("waiting_for_human", "waiting_for_approval") if status == "waiting_for_human" else (status,)
        now = self.clock()
        found: list[Thread] = []
        while True:
            try:
                ids, cursor = await self.store.listed(statuses, limit - len(found), cursor)
            except ValueError:
                raise Invalid(wording.bad_cursor()) from None
            for thread in await self._load_all(ids):
                if thread is not None and (status is None or thread.status(now) == status):
                    found.append(thread)
            if len(found) >= limit or cursor is None:
                return found, cursor

    async def _load_all(self, ids: Sequence[str]) -> list[Thread | None]:
        """These threads in order (None: removed since listed), LOADS_AT_ONCE at a time."""
        loaded: list[Thread | None] = []
        for start in range(0, len(ids), LOADS_AT_ONCE):
            loaded += await asyncio.gather(*(self._maybe(i) for i in ids[start:start + LOADS_AT_ONCE]))
        return loaded

    async def _maybe(self, thread_id: str) -> Thread | None:
        try:
            return await self.store.load(thread_id)
        except ThreadNotFound:  # removed since it was listed
            return None

    async def respond(
        self,
        thread_id: str,
        text: str,
        who: Identity,
        approval_id: str | None = None,
        approve: bool | None = None,
        channel: str = "api",
        evidence: str = "",
    ) -> Thread:
        """Free text, or with `approve` a decision on `approval_id`, from `who`: the policy
        decides by the person, whichever channel they answer by."""

        def events(thread: Thread) -> list[Event]:
            # A decision follows the rules in force now: recorded with it when they are not
            # those the request follows (the settings changed since it was asked).
            rules = self._rules_now(thread, approval_id) if approve is not None else []
            return [*rules, self._response(thread.extended(rules), text, who, approval_id, approve, channel,
                                           evidence)]

        return await self._append_all(thread_id, events)

    def _rules_now(self, thread: Thread, approval_id: str | None) -> list[Event]:
        """The ApprovalRulesChanged a decision on `approval_id` is recorded with, if the
        rules changed since the pending request was asked; none for anything else (refused
        below, with nothing recorded)."""
        pending = thread.pending_approval()
        if pending is None or pending.approval_id != approval_id:
            return []
        changed = self.policy.rules_changed(thread, pending)
        return [changed] if changed is not None else []

    async def cancel(self, thread_id: str, who: Identity, reason: str = "") -> Thread:
        def event(thread: Thread) -> Event:
            if thread.cancelled():
                raise WrongState(wording.already_cancelled())
            if thread.status(self.clock()) in FINISHED:  # its outcome stays what it was
                raise WrongState(wording.nothing_to_cancel(outcomes.outcome(thread).words))
            self._may(who, authority.Cancel(thread))
            return Cancelled(reason=reason, **said_by(who, raw_users=self.raw_users))

        return await self._append(thread_id, event)

    async def confirm_sender(
        self, thread_id: str, confirmation_id: str, who: Identity, evidence: str, channel: str
    ) -> Thread:
        """The sender a request named confirmed it (from their mailbox, by `channel`): the
        request is recorded again, as said by `who`, and goes on with their powers. Once
        only, and not once expired (WrongState)."""

        def events(thread: Thread) -> list[Event]:
            asked = thread.sender_confirmation(confirmation_id)
            if asked is None:
                raise NotFound(wording.sender_confirmation_closed(False))
            if thread.sender_confirmed(confirmation_id) or thread.sender_expired(confirmation_id) \
                    or self.clock() > asked.expires_at:
                raise WrongState(wording.sender_confirmation_closed(bool(thread.sender_confirmed(confirmation_id))))
            return [
                SenderConfirmed(confirmation_id=confirmation_id, evidence=evidence),
                UserMessage(text=asked.text, channel=channel, **said_by(who, evidence, self.raw_users)),
            ]

        return await self._append_all(thread_id, events)

    async def fork(self, thread_id: str, at: int, who: Identity) -> Thread:
        """A new thread holding `thread_id`'s first `at` events, asked for by `who`: its copied
        instructions act with their authority (Thread.authority), and it counts as one more
        thread they started."""
        thread = await self.get(thread_id)
        self._may(who, authority.Fork(thread))
        await self._within_limits(who)
        if not 1 <= at <= thread.version:
            raise Invalid(wording.fork_out_of_range(thread.version))
        cut = Thread(thread.id, thread.events[:at])
        last = cut.last_step()
        if last and isinstance(last[1], DEPLOY_STEPS) and cut.started(last[1].id) \
                and cut.outcome(last[1]) is None:
            raise Invalid(wording.fork_mid_deploy())
        # A fork is an experiment driven from the API or CLI: it never posts into the chat
        # thread it came from.
        origin = Origin(channel="api", forked_from=thread_id, forked_at=at, forked_by=Forker.of(who, self.clock()))
        return await self.store.create(origin, thread.events[:at])

    async def _append(self, thread_id: str, make: Callable[[Thread], Event]) -> Thread:
        return await self._append_all(thread_id, lambda thread: [make(thread)])

    async def _append_all(self, thread_id: str, make: Callable[[Thread], Sequence[Event]]) -> Thread:
        thread = await self.get(thread_id)
        while True:
            events = stamped(make(thread), self.clock())
            try:
                thread = await self.store.append(thread, events)
            except Conflict:
                thread = await self.store.refresh(thread)
                continue
            # A person's word can change the status without a run (a finished thread is
            # running again): the index hears it now, before the caller kicks a run.
            try:
                await self.store.index(thread)
            except Exception as e:  # the run the caller kicks indexes it when it releases
                log.warning("thread %s: indexing its status failed: %s", thread.id, e)
            for event in events:
                await self._publish(thread, event)
            return thread

    async def record(self, thread_id: str, events: Sequence[Event]) -> Thread:
        """Record what already happened outside a run (a message that could not be
        delivered): a fact is appended whatever was appended meanwhile."""
        thread = await self.get(thread_id)
        return await self.store.append_fact(thread, stamped(events, self.clock()))

    async def record_unless(
        self, thread_id: str, events: Sequence[Event], recorded: Callable[[Thread], bool]
    ) -> Thread:
        """Record `events` unless `recorded(thread)` says the thread holds them already: asked
        again of whatever beat this append (compare-and-set), so processes recording the same
        thing at once record it once."""
        thread = await self.get(thread_id)
        for _ in range(RECORD_ATTEMPTS):
            if recorded(thread):
                return thread
            try:
                return await self.store.append(thread, stamped(events, self.clock()))
            except Conflict:
                thread = await self.store.refresh(thread)
        raise RuntimeError(f"thread {thread_id}: could not record after {RECORD_ATTEMPTS} conflicts")

    async def check_decision(self, thread_id: str, approval_id: str, who: Identity) -> None:
        """Raise what deciding would raise, without deciding (e.g. before asking for feedback)."""
        self._decision(await self.get(thread_id), "", who, approval_id, False, "check")

    async def _publish(self, thread: Thread, event: Event) -> None:
        if self.notifier is None:
            return
        try:
            await self.notifier.publish(thread, [event])
        except Exception:  # the event is stored; a channel outage must not undo the answer
            log.exception("thread %s: notifying its channel failed", thread.id)

    def _response(
        self,
        thread: Thread,
        text: str,
        who: Identity,
        approval_id: str | None,
        approve: bool | None,
        channel: str,
        evidence: str = "",
    ) -> Event:
        if thread.cancelled():
            raise WrongState(wording.thread_cancelled())
        pending = thread.pending_approval()
        if approve is not None:
            return self._decision(thread, text, who, approval_id, approve, channel, evidence)
        if approval_id and (pending is None or pending.approval_id != approval_id):
            raise WrongState(wording.not_the_pending_approval(approval_id))
        if pending and is_approval(text):
            raise WrongState(wording.reply_cannot_approve())
        self._may(who, authority.Reply(thread))
        lapsed = pending is not None and self.clock() > pending.expires_at
        # Whoever may decide (someone it was escalated to, too): their reply is feedback.
        if pending and (lapsed or authority.why_not(self.policy, who, authority.Decide(thread, pending)) is None):
            # Free text while an approval waits is feedback: a rejection, never an approval.
            # Once the approval has lapsed, anyone's reply (the requester's, usually) closes
            # it the same way, so the model re-plans instead of the thread waiting on nobody.
            return HumanResponse(
                text=text, channel=channel, approval_id=pending.approval_id, approve=False,
                **said_by(who, evidence, self.raw_users),
            )
        if not text.strip():
            raise Invalid(wording.empty_text())
        return HumanResponse(text=text, channel=channel, **said_by(who, evidence, self.raw_users))

    def _decision(
        self,
        thread: Thread,
        text: str,
        who: Identity,
        approval_id: str | None,
        approve: bool,
        channel: str,
        evidence: str = "",
    ) -> Event:
        if not approval_id:
            raise Invalid(wording.approval_id_required())
        request = thread.approval(approval_id)
        if request is None:
            raise WrongState(wording.no_such_approval(approval_id))
        decided = thread.decision_for(approval_id)
        if decided is not None:
            raise WrongState(wording.already_decided(bool(decided.approve), decided.user, decided.at))
        expired = thread.expiry(approval_id)
        if expired is not None:
            raise WrongState(wording.expired_not_deployed(expired.expires_at))
        pending = thread.pending_approval()
        if pending is None or pending.approval_id != approval_id:
            raise WrongState(wording.no_longer_pending(approval_id))
        self._may(who, authority.Decide(thread, request))
        if approve and self.clock_check and (off := self.clock_check.problem()):
            raise WrongState(off)
        if approve and self.clock() > request.expires_at:  # a rejection still closes it
            raise WrongState(wording.approval_expired_ask_again(approval_id, request.expires_at))
        if approve and any(principal_of(a) == who.principal for a in thread.approvals_for(approval_id)):
            given = len(thread.approvals_for(approval_id))
            raise WrongState(wording.already_approved_by_you(given, thread.required(approval_id)))
        return HumanResponse(
            text=text or ("approved" if approve else ""),
            channel=channel,
            approval_id=approval_id,
            approve=approve,
            **said_by(who, evidence, self.raw_users),
        )
