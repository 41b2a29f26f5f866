"""Launch, answer, cancel and fork threads: the operations every channel shares.

Each one validates against the thread as stored and appends with compare-and-set; a lost
race re-reads and validates again, so two approvals at once yield exactly one decision.
Nothing is appended when an operation is refused.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime

from bot import wording
from bot.clock import utcnow
from bot.commands import is_approval
from bot.events import DEPLOY_STEPS, Cancelled, Event, HumanResponse, UserMessage, stamped
from bot.policy import Policy
from bot.ports import Conflict, Notifier, ThreadNotFound, ThreadStore
from bot.thread import STATUSES, Origin, Thread

log = logging.getLogger(__name__)


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


@dataclass
class ThreadService:
    store: ThreadStore
    policy: Policy
    notifier: Notifier | None = None
    clock: Callable[[], datetime] = utcnow

    async def launch(
        self,
        text: str,
        user: str,
        channel: str = "api",
        origin: Origin | None = None,
        thread_id: str | None = None,
    ) -> Thread:
        if not text.strip():
            raise Invalid(wording.empty_message())
        [event] = stamped([UserMessage(text=text, user=user, channel=channel)], self.clock())
        thread = await self.store.create(origin or Origin(channel=channel), [event], thread_id)
        await self._publish(thread, event)
        return thread

    async def get(self, thread_id: str) -> Thread:
        try:
            return await self.store.load(thread_id)
        except ThreadNotFound:
            raise NotFound(wording.no_thread(thread_id)) from None

    async def recent(self, status: str | None = None, limit: int = 50) -> list[Thread]:
        if status is not None and status not in STATUSES:
            raise Invalid(wording.bad_status(STATUSES))
        threads = [await self.get(i) for i in await self.store.recent(limit)]
        now = self.clock()  # an approval that expired is no longer waited for
        return [t for t in threads if status is None or t.status(now) == status]

    async def respond(
        self,
        thread_id: str,
        text: str,
        user: str,
        approval_id: str | None = None,
        approve: bool | None = None,
        channel: str = "api",
    ) -> Thread:
        def event(thread: Thread) -> Event:
            return self._response(thread, text, user, approval_id, approve, channel)

        return await self._append(thread_id, event)

    async def cancel(self, thread_id: str, user: str, reason: str = "") -> Thread:
        def event(thread: Thread) -> Event:
            if thread.cancelled():
                raise WrongState(wording.already_cancelled())
            return Cancelled(user=user, reason=reason)

        return await self._append(thread_id, event)

    async def fork(self, thread_id: str, at: int) -> Thread:
        thread = await self.get(thread_id)
        if not 1 <= at <= thread.version:
            raise Invalid(wording.fork_out_of_range(thread.version))
        cut = Thread(thread.id, thread.events[:at])
        last = cut.last_step()
        if last and isinstance(last[1], DEPLOY_STEPS) and cut.started(last[1].id) \
                and cut.outcome(last[1]) is None:
            raise Invalid(wording.fork_mid_deploy())
        # A fork is an experiment driven from the API or CLI: it never posts into the chat
        # thread it came from.
        origin = Origin(channel="api", forked_from=thread_id, forked_at=at)
        return await self.store.create(origin, thread.events[:at])

    async def _append(self, thread_id: str, make: Callable[[Thread], Event]) -> Thread:
        thread = await self.get(thread_id)
        while True:
            [event] = stamped([make(thread)], self.clock())
            try:
                thread = await self.store.append(thread, [event])
            except Conflict:
                thread = await self.store.refresh(thread)
                continue
            await self._publish(thread, event)
            return thread

    async def record(self, thread_id: str, events: Sequence[Event]) -> Thread:
        """Record what already happened outside a run (a message that could not be
        delivered): a fact is appended whatever was appended meanwhile."""
        thread = await self.get(thread_id)
        return await self.store.append_fact(thread, stamped(events, self.clock()))

    async def check_decision(self, thread_id: str, approval_id: str, user: str) -> None:
        """Raise what deciding would raise, without deciding (e.g. before asking for feedback)."""
        self._decision(await self.get(thread_id), "", user, approval_id, False, "check")

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
        user: str,
        approval_id: str | None,
        approve: bool | None,
        channel: str,
    ) -> Event:
        if thread.cancelled():
            raise WrongState(wording.thread_cancelled())
        pending = thread.pending_approval()
        if approve is not None:
            return self._decision(thread, text, user, approval_id, approve, channel)
        if approval_id and (pending is None or pending.approval_id != approval_id):
            raise WrongState(wording.not_the_pending_approval(approval_id))
        if pending and is_approval(text):
            raise WrongState(wording.reply_cannot_approve())
        lapsed = pending is not None and self.clock() > pending.expires_at
        if pending and (lapsed or self.policy.may_decide(user, pending) is None):
            # Free text while an approval waits is feedback: a rejection, never an approval.
            # Once the approval has lapsed, anyone's reply (the requester's, usually) closes
            # it the same way, so the model re-plans instead of the thread waiting on nobody.
            return HumanResponse(
                text=text, user=user, channel=channel, approval_id=pending.approval_id, approve=False
            )
        if not text.strip():
            raise Invalid(wording.empty_text())
        return HumanResponse(text=text, user=user, channel=channel)

    def _decision(
        self, thread: Thread, text: str, user: str, approval_id: str | None, approve: bool, channel: str
    ) -> Event:
        if not approval_id:
            raise Invalid(wording.approval_id_required())
        request = thread.approval(approval_id)
        if request is None:
            raise WrongState(wording.no_such_approval(approval_id))
        decided = thread.decision_for(approval_id)
        if decided is not None:
            raise WrongState(wording.already_decided(bool(decided.approve), decided.user, decided.at))
        pending = thread.pending_approval()
        if pending is None or pending.approval_id != approval_id:
            raise WrongState(wording.no_longer_pending(approval_id))
        why = self.policy.may_decide(user, request)
        if why:
            raise Forbidden(why)
        if approve and self.clock() > request.expires_at:
            raise WrongState(wording.approval_expired_ask_again(approval_id, request.expires_at))
        return HumanResponse(
            text=text or ("approved" if approve else ""),
            user=user,
            channel=channel,
            approval_id=approval_id,
            approve=approve,
        )
