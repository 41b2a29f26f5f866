"""A thread and the questions we ask of it. Pure: no I/O, no clock unless passed in.

Execution state ("waiting for approval", "3 errors in a row", "a deploy started but never
finished") is always derived here from the events, never stored beside them.
"""

from __future__ import annotations

import functools
import json
import typing
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal, NamedTuple, TypeVar

from pydantic import BaseModel, ConfigDict, Field, model_validator

from bot.core.events import (
    DEPLOY_STEPS,
    STEP_TYPES,
    ApprovalEscalated,
    ApprovalExpired,
    ApprovalReminded,
    ApprovalRequested,
    ApprovalRulesChanged,
    Cancelled,
    CommandResult,
    DeliveryFailed,
    DeployQueued,
    DeployResult,
    DeployStarted,
    DoneForNow,
    Error,
    Event,
    GitHubAnswered,
    GitTagsResult,
    HumanResponse,
    RequestMoreInformation,
    SenderConfirmationExpired,
    SenderConfirmationRequested,
    SenderConfirmed,
    Step,
    ToolCalled,
    UserMessage,
    VerificationEnded,
    VerificationStarted,
    identity_of,
    principal_of,
)
from bot.core.people import ANYONE, Identity

Status = Literal[
    "running", "waiting_for_sender", "waiting_for_approval", "waiting_for_lock", "waiting_for_human",
    "done", "failed", "cancelled", "verifying",
]
STATUSES: tuple[Status, ...] = typing.get_args(Status)
FINISHED: tuple[Status, ...] = ("done", "failed", "cancelled")
"""Statuses a thread stays in until a person writes to it again: kept for THREAD_RETENTION."""
ACTIVE: tuple[Status, ...] = tuple(s for s in STATUSES if s not in FINISHED)
"""Statuses where the bot or a person still has something to do: what the sweep looks at."""
E = TypeVar("E")
A = TypeVar("A")
NOBODY = Identity(None, "", "")  # no one: no powers


def _once(question: Callable[[Thread], A]) -> Callable[[Thread], A]:
    """A question of the events alone, answered once per Thread: its events never change, and a
    run asks the same ones many times while it decides (CPU per run). The answer is
    kept in the instance's __dict__, which a frozen dataclass lets us write and which neither
    its fields, its equality nor its repr include."""
    key = f"_once_{question.__name__}"

    @functools.wraps(question)
    def answer(self: Thread) -> A:
        kept = self.__dict__
        if key not in kept:
            kept[key] = question(self)
        return kept[key]  # type: ignore[no-any-return]

    return answer


class Forker(BaseModel):
    """Who forked a thread, as an event records whoever did something (events.identity_of)."""

    model_config = ConfigDict(frozen=True)
    user: str
    person: str | None = None
    via: str = ""
    evidence: str = ""
    at: datetime | None = None  # when it was forked (the forker's limits count it from then)

    @classmethod
    def of(cls, who: Identity, at: datetime) -> Forker:
        return cls(user=who.label, person=who.person, via=who.via, evidence=who.evidence, at=at)

    def identity(self) -> Identity:
        return Identity(self.person, self.via, self.evidence)


class Origin(BaseModel):
    """Where a thread came from, so its channel can answer there: the channel (its kind) and
    that channel's own fields (`place`: a Slack thread's channel and ts, an email's sender,
    subject and Message-ID), read with `at(kind, field)`. Stored as JSON beside the events,
    as it always was: the channel's fields flat, as `<kind>_<field>` (unknown stored fields
    of another kind are ignored)."""

    model_config = ConfigDict(frozen=True, extra="ignore")
    channel: str = "api"
    place: dict[str, str] = Field(default_factory=dict)
    forked_from: str | None = None
    forked_at: int | None = None
    forked_by: Forker | None = None  # who forked it (forks made before this was kept: None)
    # Where else the thread is posted (a trigger's or schedule's `notify`): `slack:<channel>`
    # starts a Slack thread there, `email:<address>` mails its updates (bot/core/triggers.py).
    notify: tuple[str, ...] = ()

    @model_validator(mode="before")
    @classmethod
    def _flat(cls, data: Any) -> Any:
        """The channel's own fields as stored (`<kind>_<field>`, of its own kind only), moved
        under `place`."""
        if not isinstance(data, dict):
            return data
        prefix = f"{data.get('channel', 'api')}_"
        own = {k: v for k, v in data.items() if k.startswith(prefix) and k not in cls.model_fields}
        if not own:
            return data
        rest = {k: v for k, v in data.items() if k not in own}
        place = {k.removeprefix(prefix): v for k, v in own.items() if v is not None}
        return {**rest, "place": {**rest.get("place", {}), **place}}

    def at(self, kind: str, field: str) -> str | None:
        """A field of `kind`'s own, when the thread came from that kind of channel; else None."""
        return self.place.get(field) if self.channel == kind else None

    def dump(self) -> str:
        left_out = {"place"} if self.notify else {"place", "notify"}
        stored = self.model_dump(mode="json", exclude_none=True, exclude=left_out)
        flat = {"channel": stored.pop("channel"), **{f"{self.channel}_{k}": v for k, v in self.place.items()}}
        return json.dumps({**flat, **stored}, separators=(",", ":"), ensure_ascii=False)


class Instruction(NamedTuple):
    """The newest thing a human asked for: where it stands in the thread, what, and who:
    `user` as the channel named them, `principal` as the rules compare them, `identity` for
    what they may do (see events.principal_of / identity_of)."""

    position: int
    text: str
    user: str
    principal: str
    identity: Identity


class ApprovalRules(NamedTuple):
    """What an approval needs: `required` approvals from different people among `approvers`
    (principals; `*`: anyone) or whoever it was escalated to. `approvers` None: not recorded
    (a request older than this record): anyone's approval counts, as it did then."""

    required: int
    approvers: tuple[str, ...] | None

    def admits(self, principal: str, escalated_to: Sequence[str] = ()) -> bool:
        if self.approvers is None or ANYONE in self.approvers:
            return True
        return principal in self.approvers or principal in escalated_to


@dataclass(frozen=True)
class Thread:
    id: str
    events: tuple[Event, ...] = ()
    origin: Origin = field(default_factory=Origin)

    @property
    def version(self) -> int:
        return len(self.events)

    def extended(self, new: Sequence[Event]) -> Thread:
        return Thread(self.id, self.events + tuple(new), self.origin)

    # --- lookups -------------------------------------------------------------------

    def of(self, kind: type[E]) -> Iterator[E]:
        """The events of one type, oldest first."""
        return (e for e in self.events if isinstance(e, kind))

    @_once
    def last_step(self) -> tuple[int, Step] | None:
        for i in range(len(self.events) - 1, -1, -1):
            event = self.events[i]
            if isinstance(event, STEP_TYPES):
                return i, event
        return None

    def late_result(self, index: int) -> DeployResult | None:
        """The result of an interrupted deploy recorded after the question at `index` asked
        about it (its worker was only cut off from Redis, for longer than its lease)."""
        unknown = {e.step_id for e in self.events[:index] if isinstance(e, Error) and e.kind == "interrupted"}
        return next((e for e in self.events[index + 1:] if isinstance(e, DeployResult) and e.step_id in unknown), None)

    def approval_for(self, step_id: str) -> ApprovalRequested | None:
        return next(
            (e for e in self.of(ApprovalRequested) if e.step_id == step_id), None
        )

    def approval(self, approval_id: str) -> ApprovalRequested | None:
        return next(
            (e for e in self.of(ApprovalRequested) if e.approval_id == approval_id), None
        )

    def approval_rules(self, approval_id: str, before: int | None = None) -> ApprovalRules:
        """The rules approval `approval_id` follows: the newest ApprovalRulesChanged for it
        (of the events before position `before`, if given: what applied to a decision
        recorded there), else those it was asked under. One approval from anyone for an
        unknown id."""
        request = self.approval(approval_id)
        rules = ApprovalRules(1, None)
        if request is not None:
            rules = ApprovalRules(request.required, tuple(request.approvers) or None)
        for e in self.events[:before]:
            if isinstance(e, ApprovalRulesChanged) and e.approval_id == approval_id:
                rules = ApprovalRules(e.required, tuple(e.approvers))
        return rules

    def required(self, approval_id: str) -> int:
        """How many approvals from different people approval `approval_id` needs now."""
        return self.approval_rules(approval_id).required

    def decision_for(self, approval_id: str) -> HumanResponse | None:
        """What decided an approval request, once it is decided: the first rejection (one
        rejects), else the approval that made the number it needs from different people, of
        those its rules admit (`approval_rules`: the newest recorded, so a pending request
        asked under weaker rules waits for what the current ones need). None while open."""
        rules = self.approval_rules(approval_id)
        escalation = self.escalation(approval_id)
        escalated_to = escalation.to if escalation else ()
        approvers: set[str] = set()
        for e in self.of(HumanResponse):
            if e.approval_id != approval_id or e.approve is None:
                continue
            if e.approve is False:
                return e
            if rules.admits(principal_of(e), escalated_to):
                approvers.add(principal_of(e))
            if len(approvers) >= rules.required:
                return e
        return None

    def approvals_for(self, approval_id: str) -> list[HumanResponse]:
        """The approvals given so far that count under the approval's rules now, one per
        person (their first), oldest first."""
        rules = self.approval_rules(approval_id)
        escalation = self.escalation(approval_id)
        escalated_to = escalation.to if escalation else ()
        seen: dict[str, HumanResponse] = {}
        for e in self.of(HumanResponse):
            if e.approval_id == approval_id and e.approve is True and rules.admits(principal_of(e), escalated_to):
                seen.setdefault(principal_of(e), e)
        return list(seen.values())

    def expiry(self, approval_id: str) -> ApprovalExpired | None:
        return next((e for e in self.of(ApprovalExpired) if e.approval_id == approval_id), None)

    def reminded(self, approval_id: str) -> int:
        """The number of the newest reminder of the approval (0: none yet)."""
        return max((e.count for e in self.of(ApprovalReminded) if e.approval_id == approval_id), default=0)

    def escalation(self, approval_id: str) -> ApprovalEscalated | None:
        return next((e for e in self.of(ApprovalEscalated) if e.approval_id == approval_id), None)

    def sender_confirmation(self, confirmation_id: str | None = None) -> SenderConfirmationRequested | None:
        """The newest request to confirm a sender (or the one named `confirmation_id`)."""
        if confirmation_id is None:
            return self._newest_sender_confirmation()
        asked = [e for e in self.of(SenderConfirmationRequested) if e.confirmation_id == confirmation_id]
        return asked[-1] if asked else None

    @_once
    def _newest_sender_confirmation(self) -> SenderConfirmationRequested | None:
        return next((e for e in reversed(self.events) if isinstance(e, SenderConfirmationRequested)), None)

    def sender_confirmed(self, confirmation_id: str) -> SenderConfirmed | None:
        return next((e for e in self.of(SenderConfirmed) if e.confirmation_id == confirmation_id), None)

    def sender_expired(self, confirmation_id: str) -> SenderConfirmationExpired | None:
        return next((e for e in self.of(SenderConfirmationExpired) if e.confirmation_id == confirmation_id), None)

    def waiting_for_sender(self) -> SenderConfirmationRequested | None:
        """The sender confirmation the thread waits on: asked, neither confirmed nor expired.
        Until then the request has no powers: nothing runs, nobody is asked to approve."""
        asked = self.sender_confirmation()
        if asked is None or self.sender_confirmed(asked.confirmation_id) or self.sender_expired(asked.confirmation_id):
            return None
        return asked

    def unconfirmed(self) -> bool:
        """The sender was never confirmed and nobody wrote since the confirmation expired:
        the request was dropped, and nothing is left to do."""
        asked = self.sender_confirmation()
        expired = self.sender_expired(asked.confirmation_id) if asked else None
        if asked is None or expired is None or self.sender_confirmed(asked.confirmation_id):
            return False
        return not self.human_input_after(self.events.index(expired))

    def queued(self, step_id: str) -> DeployQueued | None:
        """The newest word on the deploy's place in line, if it waited."""
        return next((e for e in reversed(self.events) if isinstance(e, DeployQueued) and e.step_id == step_id), None)

    def started(self, step_id: str) -> DeployStarted | None:
        return next((e for e in self.of(DeployStarted) if e.step_id == step_id), None)

    def outcome(self, step: Step) -> Event | None:
        """The event that closed a step: its result, an error about it, or a rejection."""
        for e in self.events:
            if isinstance(e, (GitTagsResult, DeployResult, CommandResult, Error)) and e.step_id == step.id:
                return e
        request = self.approval_for(step.id)
        if request:
            decision = self.decision_for(request.approval_id)
            if decision is not None and decision.approve is False:
                return decision
            if decision is None:
                return self.expiry(request.approval_id)
        return None

    def verifying(self) -> VerificationStarted | None:
        """The deploy verification the thread is in (bot/core/verification.py): started, not
        ended, not cancelled."""
        if self.cancelled():
            return None
        started = next((e for e in reversed(self.events) if isinstance(e, VerificationStarted)), None)
        if started is None or any(e.deploy_id == started.deploy_id for e in self.of(VerificationEnded)):
            return None
        return started

    @_once
    def cancelled(self) -> Cancelled | None:
        return next((e for e in self.of(Cancelled)), None)

    def human_input_after(self, index: int) -> bool:
        return any(isinstance(e, (UserMessage, HumanResponse)) for e in self.events[index + 1 :])

    def latest_instruction(self) -> Instruction | None:
        """The newest thing a human asked for; approvals are not asks."""
        for i in range(len(self.events) - 1, -1, -1):
            e = self.events[i]
            if isinstance(e, UserMessage):
                return Instruction(i, e.text, e.user, principal_of(e), identity_of(e))
            if isinstance(e, HumanResponse) and e.approve is not True:
                text = e.text or "(rejected without feedback)"
                return Instruction(i, text, e.user, principal_of(e), identity_of(e))
        return None

    def instruction_for(self, step_id: str) -> Instruction | None:
        """The instruction that produced step `step_id`: the newest one before it. What people
        say after it (a reply while its approval waits) changes nothing about who asked."""
        index = next((i for i, e in enumerate(self.events) if e.id == step_id), len(self.events))
        return Thread(self.id, self.events[:index], self.origin).latest_instruction()

    def authority(self, instruction: Instruction | None) -> Identity:
        """Who acts on `instruction` (asking for a deploy, locking, stopping deploys, deploying
        anyway): whoever gave it, but for an instruction copied into a fork whoever forked the
        thread: the fork replays it with the forker's powers, never with those of whoever said
        it then (nobody's, for a fork made before forkers were kept)."""
        forked_at = self.origin.forked_at
        if instruction is None:
            return NOBODY
        if forked_at is not None and instruction.position < forked_at:
            forker = self.forked_by()
            return forker if forker is not None else NOBODY
        return instruction.identity

    def forked_by(self) -> Identity | None:
        """Who forked this thread (None: not a fork, or one made before forkers were kept)."""
        forker = self.origin.forked_by
        return forker.identity() if forker is not None and self.origin.forked_at is not None else None

    def first_message(self) -> UserMessage | None:
        return next(self.of(UserMessage), None)

    def started_by(self) -> str | None:
        """The principal of whoever asked for this thread (an agent: `agent:NAME`): whoever
        forked it, else whoever started it (as events.principal_of names them)."""
        forker = self.forked_by()
        if forker is not None:
            return forker.principal
        first = self.first_message()
        return principal_of(first) if first is not None else None

    def asker(self) -> Identity | None:
        """Who asked for this thread: whoever forked it, else whoever started it."""
        forker = self.forked_by()
        if forker is not None:
            return forker
        first = self.first_message()
        return identity_of(first) if first is not None else None

    def requesters(self) -> list[str]:
        """The principals of everyone who gave instructions in this thread, by whichever
        channel (approvals are not instructions), and whoever forked it."""
        forker = self.forked_by()
        return sorted({
            principal_of(e) for e in self.events
            if isinstance(e, UserMessage) or (isinstance(e, HumanResponse) and e.approve is None)
        } | ({forker.principal} if forker is not None else set()))

    def pending_approval(self, now: datetime | None = None) -> ApprovalRequested | None:
        """The approval request the open deploy step waits on. With `now`, one that expired
        by then is not pending: an approval would be refused (see `expired_approval`)."""
        request = self._open_approval()
        if request is not None and now is not None and now > request.expires_at:
            return None
        return request

    def expired_approval(self, now: datetime) -> ApprovalRequested | None:
        """The open deploy step's approval request if it expired by `now`: nobody can approve
        it any more, only reply, and the bot proposes the deploy again."""
        request = self._open_approval()
        return request if request is not None and now > request.expires_at else None

    def _open_approval(self) -> ApprovalRequested | None:
        if self.cancelled():
            return None
        last = self.last_step()
        if not last or not isinstance(last[1], DEPLOY_STEPS):
            return None
        request = self.approval_for(last[1].id)
        if request is None or self.decision_for(request.approval_id) is not None:
            return None
        return request if self.outcome(last[1]) is None else None

    def _since_human(self) -> Sequence[Event]:
        for i in range(len(self.events) - 1, -1, -1):
            if isinstance(self.events[i], (UserMessage, HumanResponse)):
                return self.events[i + 1 :]
        return self.events

    def consecutive_errors(self) -> int:
        """Errors since the last human input or the last step that actually produced a result."""
        count = 0
        for e in reversed(self._since_human()):
            if isinstance(e, (GitTagsResult, DeployResult, CommandResult)):
                break
            count += isinstance(e, Error)
        return count

    def steps_since_human(self) -> int:
        return sum(isinstance(e, STEP_TYPES) for e in self._since_human())

    def status(self, now: datetime | None = None) -> Status:
        """Derived from the events alone. Callers with a clock pass `now`: a thread whose
        approval request expired by then waits for a human's reply (the approval would be
        refused; a reply re-plans), so it is "waiting_for_human", not "waiting_for_approval".
        Without `now` (the reducer) an expiry is not seen here: the deploy's re-check refuses it."""
        status = self._status()
        if status == "waiting_for_approval" and now is not None and self.expired_approval(now):
            return "waiting_for_human"
        return status

    @_once
    def _status(self) -> Status:
        """The status without a clock: the only part `now` changes is an expired approval's."""
        if self.cancelled():
            return "cancelled"
        if self.waiting_for_sender():
            return "waiting_for_sender"
        if self.unconfirmed():
            return "done"
        if self.verifying():
            return "verifying"
        if self.pending_approval():
            return "waiting_for_approval"
        last = self.last_step()
        if last and isinstance(last[1], DEPLOY_STEPS) and self.outcome(last[1]) is None \
                and not self.started(last[1].id) and self.queued(last[1].id):
            return "waiting_for_lock"
        if last and not self.human_input_after(last[0]):
            if isinstance(last[1], RequestMoreInformation) and self.late_result(last[0]) is None:
                return "waiting_for_human"
            if isinstance(last[1], DoneForNow):
                return "done"
        facts_only = DeliveryFailed | ToolCalled | GitHubAnswered  # recorded alongside, deciding nothing
        last_fact = next((e for e in reversed(self.events) if not isinstance(e, facts_only)), None)
        if isinstance(last_fact, Error) and last_fact.kind == "internal":
            return "failed"
        return "running"
