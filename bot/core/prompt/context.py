"""The thread as the model reads it, within its budget: the blocks the next decision rests on and
the newest, and a summary of the rest (see this package's face)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from bot.core.events import (
    DEPLOY_STEPS,
    STEP_TYPES,
    DeployResult,
    DoneForNow,
    Error,
    Event,
    GitTagsResult,
    HumanResponse,
    RequestMoreInformation,
    UserMessage,
    entry_for,
)
from bot.core.prompt import blocks
from bot.core.prompt.estimate import estimate_tokens
from bot.core.prompt.redaction import fit, redact
from bot.core.thread import Thread

CONTEXT_BUDGET = 24_000  # estimated tokens of thread context per model call (CONTEXT_BUDGET)
MIN_BUDGET = 2_000  # below this not even the blocks a decision rests on fit
REQUEST_SHARE = 4  # the first request and the latest instruction may take a quarter each,
BLOCK_SHARE = 16  # any other block's text a sixteenth (1,500 tokens, ~6 KB of prose),
SUMMARY_SHARE = 8  # the summary an eighth
SUMMARY_TAG = 32  # what the <summary> tag around its text costs, at most
ATTR_TOKENS = 40  # an attribute (a user name, a reason, a tag) is a short value
LINE_TOKENS = 60  # one line of the summary
SUMMARY_ITEMS = 5  # decisions and deploys listed in the summary (the newest)
SUMMARY_ERRORS = 3  # errors quoted in the summary (the newest)


def render(thread: Thread, secrets: Iterable[str] = (), budget: int = CONTEXT_BUDGET) -> str:
    """The thread as the model reads it, in at most `budget` estimated tokens."""
    if budget < MIN_BUDGET:
        raise ValueError(f"a context budget must be at least {MIN_BUDGET} tokens, not {budget}")
    secrets = tuple(secrets)
    scale = 1
    while True:  # caps shrink until it fits: needed only for small budgets and huge attributes
        text = _Context(thread, secrets, budget, scale).render()
        if estimate_tokens(text) <= budget or scale >= 1024:
            return text
        scale *= 2


@dataclass
class _Context:
    thread: Thread
    secrets: tuple[str, ...]
    budget: int
    scale: int

    def __post_init__(self) -> None:
        events = self.thread.events
        self.blocks: dict[int, str] = {}
        self.request = next((i for i, e in enumerate(events) if isinstance(e, UserMessage)), None)
        # What the next decision rests on most is read whole as long as the first request is.
        latest = self.thread.latest_instruction()
        self.instruction = latest.position if latest else None
        self.block_tokens = max(1, self.budget // BLOCK_SHARE // self.scale)
        self.request_tokens = max(1, self.budget // REQUEST_SHARE // self.scale)
        self.summary_tokens = max(1, self.budget // SUMMARY_SHARE // self.scale)
        self.attr_tokens = max(1, ATTR_TOKENS // self.scale)

    def render(self) -> str:
        pinned = _pinned(self.thread)
        kept = self.newest(pinned, self.budget)
        if len(kept) < len(self.thread.events):  # a summary is needed: leave it room
            kept = self.newest(pinned, self.budget - self.summary_tokens - SUMMARY_TAG)
        text = self.assemble(kept)
        while estimate_tokens(text) > self.budget:  # a backstop: every part was counted
            older = sorted(kept - pinned)
            if not older:
                break
            kept.discard(older[0])
            text = self.assemble(kept)
        return text

    def newest(self, pinned: set[int], room: int) -> set[int]:
        """The pinned events and the newest others, as many as fit in `room` together."""
        kept = set(pinned)
        used = sum(self.cost(i) for i in kept)
        for i in range(len(self.thread.events) - 1, -1, -1):
            if i in kept:
                continue
            cost = self.cost(i)
            if used + cost > room:
                break
            kept.add(i)
            used += cost
        return kept

    def assemble(self, kept: set[int]) -> str:
        """The kept blocks in order, and the summary of the others where the first was."""
        omitted = [i for i in range(len(self.thread.events)) if i not in kept]
        return "\n".join(
            self.block(i) if i in kept else self.summary(omitted)
            for i in range(len(self.thread.events))
            if i in kept or i == omitted[0]
        )

    def cost(self, i: int) -> int:
        return estimate_tokens(self.block(i)) + 1  # and the line break before the next block

    def block(self, i: int) -> str:
        if i not in self.blocks:
            tokens = self.request_tokens if i in (self.request, self.instruction) else self.block_tokens
            self.blocks[i] = redact(self._block(self.thread.events[i], tokens), self.secrets)
        return self.blocks[i]

    # --- one event ---

    def fit(self, text: str, tokens: int) -> str:
        return fit(text, tokens, self.secrets)

    def tag(self, name: str, body: str = "", tokens: int = 0, **attrs: object) -> str:
        values = {
            k: self.fit(str(v), self.attr_tokens) for k, v in attrs.items() if v not in (None, "")
        }
        return blocks.tag(name, self.fit(body, tokens or self.block_tokens) if body else "", **values)

    def _block(self, e: Event, tokens: int) -> str:
        render = entry_for(blocks.BLOCKS, e)
        if render is None:  # pragma: no cover
            raise TypeError(f"no rendering for {type(e).__name__}")
        return render(self, e, tokens)

    # --- what does not fit ---

    def summary(self, omitted: Sequence[int]) -> str:
        events = [self.thread.events[i] for i in omitted]
        lines = [
            f"{len(events)} earlier events are summarized here; the other blocks are shown in "
            "full, oldest first."
        ]
        people = Counter(e.user for e in events if isinstance(e, (UserMessage, HumanResponse)))
        if people:
            lines.append("messages from people: " + _counts(people))
        steps = Counter[str](e.type for e in events if isinstance(e, STEP_TYPES))
        if steps:
            lines.append("steps: " + _counts(steps))
        decisions = [self._decision(e) for e in events if isinstance(e, HumanResponse) and e.approve is not None]
        lines += _newest("decisions", decisions, SUMMARY_ITEMS)
        deploys = [self._deploy(e) for e in events if isinstance(e, DeployResult)]
        lines += _newest("deploys", deploys, SUMMARY_ITEMS)
        errors = [e for e in events if isinstance(e, Error)]
        if errors:
            kinds = Counter[str](e.kind for e in errors)
            lines.append(f"errors: {len(errors)} ({_counts(kinds)}); the last {min(len(errors), SUMMARY_ERRORS)}:")
            lines += [f"- {e.kind}: {self.line(e.message)}" for e in errors[-SUMMARY_ERRORS:]]
        said = [e for e in events if isinstance(e, (RequestMoreInformation, DoneForNow))]
        if said:
            lines.append(f"the bot last said ({said[-1].type}): {self.line(said[-1].message)}")
        body = "\n".join(lines)
        return redact(self.tag("summary", body, self.summary_tokens, events=len(events)), self.secrets)

    def line(self, text: str) -> str:
        return " ".join(self.fit(text, LINE_TOKENS // self.scale or 1).split())

    def _decision(self, e: HumanResponse) -> str:
        request = self.thread.approval(e.approval_id or "")
        what = f"{request.service} {request.tag} to {request.environment}" if request else "a deploy"
        verb = "approved" if e.approve else "rejected"
        feedback = f": {e.text}" if e.text and not e.approve else ""
        return self.line(f"{verb} by {e.user}: {what}{feedback}")

    def _deploy(self, e: DeployResult) -> str:
        how = "ok" if e.ok else f"FAILED (exit code {e.exit_code})"
        return self.line(f"{e.service} {e.tag} to {e.environment}: {how}")


def _pinned(thread: Thread) -> set[int]:
    """The events the next decision rests on: they are always shown in full."""
    events = thread.events
    where = {e.id: i for i, e in enumerate(events)}
    keep: list[Event | None] = [next((e for e in events if isinstance(e, UserMessage)), None)]
    instruction = thread.latest_instruction()
    if instruction:
        keep.append(events[instruction.position])
    last = thread.last_step()
    if last:
        position, step = last
        keep += [step, thread.outcome(step)]
        if isinstance(step, DEPLOY_STEPS):
            request = thread.approval_for(step.id)
            keep += [request, thread.started(step.id)]
            if request:
                keep.append(thread.decision_for(request.approval_id))
        keep += [e for e in events[position + 1 :] if isinstance(e, Error)][-1:]
    keep += [e for e in events if isinstance(e, GitTagsResult)][-1:]
    return {where[e.id] for e in keep if e is not None and e.id in where}


def _counts(counter: Counter[str]) -> str:
    shown = counter.most_common(8)
    more = len(counter) - len(shown)
    return ", ".join(f"{n} {what}" for what, n in shown) + (f" and {more} more" if more > 0 else "")


def _newest(what: str, lines: list[str], count: int) -> list[str]:
    if not lines:
        return []
    head = f"{what}: {len(lines)}" + (f", the last {count}:" if len(lines) > count else ":")
    return [head, *(f"- {line}" for line in lines[-count:])]
