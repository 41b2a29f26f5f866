"""A thread's page: its timeline, each event's words and the event itself, and where it may be
forked."""

from __future__ import annotations

import json
from collections import OrderedDict
from dataclasses import dataclass

from bot.core import transcript
from bot.core.events import (
    DEPLOY_STEPS,
    STEP_TYPES,
    CommandResult,
    DeployResult,
    DeployStarted,
    Error,
    Event,
    GitTagsResult,
    HumanResponse,
)
from bot.core.thread import Thread


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
