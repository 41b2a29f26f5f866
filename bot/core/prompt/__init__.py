"""Thread -> the context text the model reads (factor 3: own your context window).

Compact tagged blocks, one per event. Free text is escaped so a message cannot close its
own block and forge another, and anything that looks like a secret is redacted.

The context has a budget: `render` never returns more than `budget` estimated tokens
(`estimate_tokens`; CONTEXT_BUDGET unless the caller passes the configured one). Always
kept verbatim: the first request and the latest instruction (each cut in the middle, with a
marker, only if it alone is over a quarter of the budget), what the next decision rests on
(the last step, its approval request, decision and outcome, the newest tag list, a newer
error) and then the newest events, as many as fit. Every block's text is capped (a 20 MB
message or deploy log keeps its head and its tail). Whatever does not fit is compacted into
one <summary> block in its place: counts of messages, steps and errors, the last few errors
and the decisions and deploys made, one line each (factor 9: compact errors).
docs/context.md has the figures.
"""

from __future__ import annotations

import html
import re
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from bot.core import wording
from bot.core.events import (
    DEPLOY_STEPS,
    STEP_TYPES,
    ApprovalEscalated,
    ApprovalExpired,
    ApprovalReminded,
    ApprovalRequested,
    ApprovalRulesChanged,
    Cancelled,
    CheckObserved,
    CommandResult,
    DeliveryFailed,
    DeployBackend,
    DeployFrontend,
    DeployQueued,
    DeployResult,
    DeployService,
    DeployStarted,
    DoneForNow,
    Error,
    Event,
    GitHubAnswered,
    GitTagsResult,
    HumanResponse,
    ListGitTags,
    LockEnvironment,
    LockTaken,
    Promote,
    RequestMoreInformation,
    ResumeDeploys,
    RollBack,
    SenderConfirmationExpired,
    SenderConfirmationRequested,
    SenderConfirmed,
    ShowDeploys,
    StopDeploys,
    ToolCalled,
    UnlockEnvironment,
    UserMessage,
    VerificationEnded,
    VerificationRefused,
    VerificationStarted,
    entry_for,
)
from bot.core.thread import Thread

MAX_TAGS = 20
REDACTED = "[redacted]"

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
# Text around a cut that is redacted with the part that is kept, so that a secret across
# the cut is recognised whole (a PEM private key is at most a few KB).
CUT_MARGIN = 8_192

_PEM = r"-----BEGIN [A-Z ]*PRIVATE KEY-----"
_PEM_END = r"-----END [A-Z ]*PRIVATE KEY-----"
_SECRET_PATTERNS = [
    (re.compile(r"(?i)\b(authorization\s*[:=]\s*)(?:\w+\s+)?\S+"), r"\1" + REDACTED),
    (re.compile(r"(?i)\b(bearer|basic)\s+[A-Za-z0-9._~+/=-]{12,}"), r"\1 " + REDACTED),
    (
        re.compile(
            # A prefix is allowed: AWS_SECRET_ACCESS_KEY=, DB_PASSWORD=, GITHUB_TOKEN=.
            # (Bounded pieces: an unbounded [\w-]* on both sides is quadratic on "a-a-a-...".)
            r"(?i)\b((?:[a-z0-9]{1,40}[_-]){0,4}(?:api[_-]?key|access[_-]?key|secret|token|passw(?:or)?d|pwd)"
            r"[a-z0-9]{0,40}(?:[_-][a-z0-9]{1,40}){0,4}"
            r"[\"']?\s*[:=]\s*[\"']?)[^\s\"',;]+"
        ),
        r"\1" + REDACTED,
    ),
    (re.compile(r"\b(xox[abposr]|xapp)-[A-Za-z0-9-]{8,}"), REDACTED),
    (re.compile(r"\b(gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})"), REDACTED),
    (re.compile(r"\bsk-(?:ant-)?[A-Za-z0-9_-]{16,}"), REDACTED),
    (re.compile(r"\bAKIA[0-9A-Z]{16}\b"), REDACTED),
    # scheme://user:password@host and scheme://:password@host (Redis has no user name)
    (re.compile(r"(://[^/\s:@]*:)[^/\s@]+@"), r"\1" + REDACTED + "@"),
    # A private key, also one whose end (or beginning) is missing: pasted in part, or cut.
    # One alternation, so a text of many headers without an end is still read once.
    (re.compile(_PEM + "(?:.*?" + _PEM_END + "|.*)", re.S), REDACTED),
    (re.compile(r"\A.*" + _PEM_END, re.S), REDACTED),
]


def redact(text: str, secrets: Iterable[str] = ()) -> str:
    for secret in secrets:
        if secret and len(secret) >= 6:
            text = text.replace(secret, REDACTED)
    for pattern, replacement in _SECRET_PATTERNS:
        text = pattern.sub(replacement, text)
    return text


# --- the token estimate ----------------------------------------------------------------

# Pieces a BPE tokenizer (cl100k/o200k-like) mostly keeps whole or splits predictably.
_PIECES = re.compile(
    r"(?P<letters>[A-Z]+(?![a-z])|[A-Z]?[a-z]+)|(?P<digits>[0-9]+)|(?P<blank>[ \t]+)|(?P<newline>\n+)"
    r"|(?P<punct>[!-/:-@\[-`{-~]+)|(?P<wide>[\U00010000-\U0010ffff])|(?P<other>.)",
    re.S,
)


def estimate_tokens(text: str) -> int:
    """About how many tokens a model's tokenizer makes of `text`, without its vocabulary:
    a run of letters costs one per 4 letters (a new capital starts a run), digits one per
    3, punctuation one per 2, a single space none (it joins the next word), more blanks
    or a run of line breaks one, a character outside the basic plane (emoji) 3, any other
    character 1. Against cl100k it errs high on prose, renderings, logs and code (up to
    1.4x) and low on random strings (0.8x on base64, 0.56x on made-up words): docs/context.md."""
    n = 0
    for m in _PIECES.finditer(text):
        kind, size = m.lastgroup, m.end() - m.start()
        if kind == "letters":
            n += (size + 3) // 4
        elif kind == "digits":
            n += (size + 2) // 3
        elif kind == "blank":
            n += size > 1
        elif kind == "punct":
            n += (size + 1) // 2
        elif kind == "wide":
            n += 3
        else:  # newline, other
            n += 1
    return n


# --- the rendering ----------------------------------------------------------------------


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
        return _tag(name, self.fit(body, tokens or self.block_tokens) if body else "", **values)

    def _block(self, e: Event, tokens: int) -> str:
        render = entry_for(_BLOCKS, e)
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



# --- one block per event type (`tokens`: what its free text may take) -------------------


def _minute(at: datetime) -> str:
    return f"{at:%Y-%m-%d %H:%M}Z"


def _user_message(c: _Context, e: UserMessage, tokens: int) -> str:
    return c.tag("user_message", e.text, tokens, user=e.user, channel=e.channel)


def _human_response(c: _Context, e: HumanResponse, tokens: int) -> str:
    decision = {True: "approved", False: "rejected", None: None}[e.approve]
    return c.tag("human_response", e.text, tokens, user=e.user, decision=decision)


def _cancelled(c: _Context, e: Cancelled, tokens: int) -> str:
    return c.tag("cancelled", e.reason, tokens, user=e.user)


def _list_git_tags(c: _Context, e: ListGitTags, tokens: int) -> str:
    return c.tag("list_git_tags", service=e.service)


def _deploy_service(c: _Context, e: DeployService, tokens: int) -> str:
    return c.tag(
        "deploy", service=e.service, tag=e.tag, environment=e.environment, reason=e.reason,
        rollback_of=e.rollback_of, force=e.force,
    )


def _deploy_one(c: _Context, e: DeployBackend | DeployFrontend, tokens: int) -> str:
    return c.tag(e.type, tag=e.tag, environment=e.environment, reason=e.reason)


def _roll_back(c: _Context, e: RollBack, tokens: int) -> str:
    return c.tag(e.type, service=e.service, environment=e.environment)


def _promote(c: _Context, e: Promote, tokens: int) -> str:
    return c.tag(e.type, service=e.service, environment=e.environment)


def _message(c: _Context, e: RequestMoreInformation | DoneForNow, tokens: int) -> str:
    return c.tag(e.type, e.message, tokens)


def _lock_environment(c: _Context, e: LockEnvironment, tokens: int) -> str:
    return c.tag(e.type, environment=e.environment, service=e.service or None, reason=e.reason)


def _unlock_environment(c: _Context, e: UnlockEnvironment, tokens: int) -> str:
    return c.tag(e.type, environment=e.environment, service=e.service or None, force=e.force)


def _lock_taken(c: _Context, e: LockTaken, tokens: int) -> str:
    return c.tag(e.type, e.reason, tokens, environment=e.environment, service=e.service or None, by=e.by)


def _environment_only(c: _Context, e: ShowDeploys | ResumeDeploys, tokens: int) -> str:
    return c.tag(e.type, environment=e.environment)


def _stop_deploys(c: _Context, e: StopDeploys, tokens: int) -> str:
    until = _minute(e.until) if e.until else None
    return c.tag(e.type, e.reason, tokens, environment=e.environment, until=until)


def _git_tags_result(c: _Context, e: GitTagsResult, tokens: int) -> str:
    lines = [f"{t.name} {t.commit[:7]} {t.date[:10]}".strip() for t in e.tags[:MAX_TAGS]]
    if len(e.tags) > MAX_TAGS:
        lines.append(f"... and {len(e.tags) - MAX_TAGS} older tags")
    return c.tag("list_git_tags_result", "\n".join(lines) or "(no tags)", tokens, service=e.service or None)


def _approval_requested(c: _Context, e: ApprovalRequested, tokens: int) -> str:
    return c.tag(
        "approval_requested",
        service=e.service,
        tag=e.tag,
        commit=e.commit[:7],
        environment=e.environment,
        expires=_minute(e.expires_at),
        change=" ".join(wording.change_lines(e.change)[:1]) if e.change else None,
    )


def _command_result(c: _Context, e: CommandResult, tokens: int) -> str:
    return c.tag("command_result", e.text, tokens, ok=str(e.ok).lower())


def _approval_reminded(c: _Context, e: ApprovalReminded, tokens: int) -> str:
    return c.tag(e.type, count=e.count)


def _approval_escalated(c: _Context, e: ApprovalEscalated, tokens: int) -> str:
    return c.tag(e.type, to=", ".join(e.to))


def _approval_rules_changed(c: _Context, e: ApprovalRulesChanged, tokens: int) -> str:
    return c.tag(e.type, required=e.required, approvers=", ".join(e.approvers))


def _approval_expired(c: _Context, e: ApprovalExpired, tokens: int) -> str:
    # Not a rejection: nobody decided in time, and nothing was deployed.
    return c.tag(e.type, "nobody decided in time; not deployed", expired=_minute(e.expires_at))


def _deploy_queued(c: _Context, e: DeployQueued, tokens: int) -> str:
    return c.tag(e.type, e.behind, tokens, position=e.position)


def _deploy_started(c: _Context, e: DeployStarted, tokens: int) -> str:
    return c.tag("deploy_started")


def _deploy_result(c: _Context, e: DeployResult, tokens: int) -> str:
    return c.tag("deploy_result", e.output, tokens, ok=str(e.ok).lower(), exit_code=e.exit_code, url=e.url)


def _error(c: _Context, e: Error, tokens: int) -> str:
    return c.tag("error", e.message, tokens, kind=e.kind)


def _github_answered(c: _Context, e: GitHubAnswered, tokens: int) -> str:
    return c.tag("github_answered", e.comment, tokens, state=e.state)


def _delivery_failed(c: _Context, e: DeliveryFailed, tokens: int) -> str:
    return c.tag("delivery_failed", e.reason, tokens, channel=e.channel, to=e.to)


def _tool_called(c: _Context, e: ToolCalled, tokens: int) -> str:
    return c.tag("tool_called", tool=e.tool, agent=e.agent)


def _sender_confirmation_requested(c: _Context, e: SenderConfirmationRequested, tokens: int) -> str:
    # The request itself is its user_message; the model only learns that it waited for its sender.
    return c.tag(e.type, claimed=e.claimed, expires=_minute(e.expires_at))


def _sender_confirmed(c: _Context, e: SenderConfirmed, tokens: int) -> str:
    return c.tag(e.type)


def _sender_confirmation_expired(c: _Context, e: SenderConfirmationExpired, tokens: int) -> str:
    return c.tag(e.type, "nobody confirmed the sender in time; nothing was done", expired=_minute(e.expires_at))


def _verification_started(c: _Context, e: VerificationStarted, tokens: int) -> str:
    return c.tag(e.type, deploy_id=e.deploy_id, ends=_minute(e.ends_at), checks=str(len(e.checks)))


def _check_observed(c: _Context, e: CheckObserved, tokens: int) -> str:
    state = "holds" if e.ok else ("no answer" if e.ok is None else "fails")
    return c.tag(e.type, e.value, tokens, check=e.check, state=state)


def _verification_ended(c: _Context, e: VerificationEnded, tokens: int) -> str:
    return c.tag(e.type, e.reason, tokens, outcome=e.outcome, check=e.check or None,
                 value=e.value or None, by=e.by or None)


def _verification_refused(c: _Context, e: VerificationRefused, tokens: int) -> str:
    return c.tag(e.type, e.text, tokens)


# Every event type the model reads; `_Context._block` looks an event up by its class.
_BLOCKS: dict[type, Callable[[_Context, Any, int], str]] = {
    UserMessage: _user_message,
    HumanResponse: _human_response,
    Cancelled: _cancelled,
    ListGitTags: _list_git_tags,
    DeployService: _deploy_service,
    DeployBackend: _deploy_one,
    DeployFrontend: _deploy_one,
    RollBack: _roll_back,
    Promote: _promote,
    RequestMoreInformation: _message,
    DoneForNow: _message,
    LockEnvironment: _lock_environment,
    UnlockEnvironment: _unlock_environment,
    LockTaken: _lock_taken,
    ShowDeploys: _environment_only,
    ResumeDeploys: _environment_only,
    StopDeploys: _stop_deploys,
    GitTagsResult: _git_tags_result,
    ApprovalRequested: _approval_requested,
    CommandResult: _command_result,
    ApprovalReminded: _approval_reminded,
    ApprovalEscalated: _approval_escalated,
    ApprovalRulesChanged: _approval_rules_changed,
    ApprovalExpired: _approval_expired,
    DeployQueued: _deploy_queued,
    DeployStarted: _deploy_started,
    DeployResult: _deploy_result,
    Error: _error,
    DeliveryFailed: _delivery_failed,
    GitHubAnswered: _github_answered,
    ToolCalled: _tool_called,
    SenderConfirmationRequested: _sender_confirmation_requested,
    SenderConfirmed: _sender_confirmed,
    SenderConfirmationExpired: _sender_confirmation_expired,
    VerificationStarted: _verification_started,
    CheckObserved: _check_observed,
    VerificationEnded: _verification_ended,
    VerificationRefused: _verification_refused,
}


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


def fit(text: str, tokens: int, secrets: Iterable[str] = ()) -> str:
    """`text` redacted, and cut in the middle if it is over `tokens` estimated tokens: its
    head and its tail are kept, with a marker saying how much was cut."""
    secrets = tuple(secrets)
    limit = 4 * tokens  # characters: about 4 a token
    if len(text) <= limit:
        text = redact(text, secrets)
        if estimate_tokens(text) <= tokens:
            return text
        limit = len(text) - 1
    while True:
        cut = _cut(text, limit, secrets)
        estimate = estimate_tokens(cut)
        if estimate <= tokens or limit == 0:
            return cut
        limit = min(limit - 1, limit * tokens // estimate)


def _cut(text: str, limit: int, secrets: tuple[str, ...]) -> str:
    head, tail = limit * 2 // 3, limit - limit * 2 // 3
    marker = f"[... {len(text) - head - tail:,} characters cut ...]"
    return "\n".join(part for part in (_head(text, head, secrets), marker, _tail(text, tail, secrets)) if part)


def _head(text: str, size: int, secrets: tuple[str, ...]) -> str:
    """The first `size` characters of `text` redacted: the text after them is redacted with
    them, so a secret across the cut is not left in part."""
    margin = CUT_MARGIN
    while True:
        window = text[: size + margin]
        clean = redact(window, secrets)
        if len(window) == len(text) or len(clean) >= size + margin // 2 or clean.endswith(REDACTED):
            return clean[:size]
        margin *= 2


def _tail(text: str, size: int, secrets: tuple[str, ...]) -> str:
    if size == 0:
        return ""
    margin = CUT_MARGIN
    while True:
        window = text[-(size + margin) :]
        clean = redact(window, secrets)
        if len(window) == len(text) or len(clean) >= size + margin // 2 or clean.startswith(REDACTED):
            return clean[-size:]
        margin *= 2


def _counts(counter: Counter[str]) -> str:
    shown = counter.most_common(8)
    more = len(counter) - len(shown)
    return ", ".join(f"{n} {what}" for what, n in shown) + (f" and {more} more" if more > 0 else "")


def _newest(what: str, lines: list[str], count: int) -> list[str]:
    if not lines:
        return []
    head = f"{what}: {len(lines)}" + (f", the last {count}:" if len(lines) > count else ":")
    return [head, *(f"- {line}" for line in lines[-count:])]


def _attrs(**values: object) -> str:
    return "".join(
        f' {k}="{html.escape(str(v))}"' for k, v in values.items() if v not in (None, "")
    )


def _tag(name: str, body: str = "", **attrs: object) -> str:
    if not body:
        return f"<{name}{_attrs(**attrs)}/>"
    return f"<{name}{_attrs(**attrs)}>\n{html.escape(body.strip(), quote=False)}\n</{name}>"
