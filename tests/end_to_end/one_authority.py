"""What tests/end_to_end/test_one_authority.py asks every channel with: the cells of the doc's
table (tests/authority_table.py) each channel can express, the situations it stages for them,
and how each channel's answer is read, as the channel gave it.

An `Answer` is what one channel said for one cell: it happened (allowed), or a refusal in the
channel's own words, as it put them where they go (HTML in the console, Slack's escaping in
Slack, the mail's body, a 403's JSON `detail`, the CLI's stderr, an MCP tool's error). A
command that runs in a thread answers in the thread (its CommandResult, Error, or verification
event), whichever channel said it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime

import httpx
import markupsafe

from bot.adapters.channels.slack import blocks as slack_blocks
from bot.core.events import (
    ApprovalRequested,
    Cancelled,
    CommandResult,
    DeployService,
    DoneForNow,
    Error,
    HumanResponse,
    RequestMoreInformation,
    VerificationEnded,
    VerificationRefused,
    principal_of,
)
from bot.core.people import Identity
from bot.core.thread import Origin, Thread
from bot.runtime.service import NotFound
from bot.wiring.app import App
from tests.authority_table import ACTIONS, LOCK_REASON, OTHER, Facts, asked_by, said, verifying
from tests.helpers import eventually

# The table's columns (tests/authority_table.ACTORS) ...
BOB = "an approver (bob)"
DAVE = "a person with no powers (dave)"
AGENT = "an agent (claude)"
SHARED = "the shared `API_TOKEN`"
OUTSIDER = "an outsider"
GITHUB = "a GitHub login nobody lists"
TRIGGER = "a trigger or schedule"

# ... and its rows.
START = "start a thread"
ASK = "ask for a deploy to production"
ROLL_BACK = "roll back production"
PROMOTE = "promote to production"
DECIDE = "approve or reject someone else's request"
DECIDE_OWN = "approve their own request"
REPLY = "reply in someone else's thread"
REPLY_OWN = "reply in their own thread"
CANCEL_OWN = "cancel their own thread"
CANCEL = "cancel someone else's thread"
CANCEL_LIVE = "cancel a thread while its deploy runs or is verified"
FORK_OWN = "fork their own thread"
FORK = "fork someone else's thread"
LOCK = "lock production"
UNLOCK_OWN = "unlock a lock they set"
TAKE = "unlock (take) someone else's lock"
STOP = "stop or resume deploys"
ANYWAY = "deploy anyway (past a freeze or failing checks)"
SKIP = "skip verification, or verify now"
assert {START, ASK, ROLL_BACK, PROMOTE, DECIDE, DECIDE_OWN, REPLY, REPLY_OWN, CANCEL_OWN, CANCEL, CANCEL_LIVE,
        FORK_OWN, FORK, LOCK, UNLOCK_OWN, TAKE, STOP, ANYWAY, SKIP} == set(ACTIONS)

# Cells whose answer depends on what production holds (a lock, a stop): asked one at a time,
# after every other cell, with nothing else asking for production meanwhile.
ONE_AT_A_TIME = (LOCK, UNLOCK_OWN, TAKE, STOP)

# What people say for each of them, the same words on every channel.
SAY_START = "what's on staging?"
SAY_DEPLOY = "deploy backend v1.2.3 to production"
SAY_ROLL_BACK = "roll back backend in production"
SAY_PROMOTE = "promote backend to production"
SAY_REPLY = "any news?"
SAY_LOCK = f"lock production: {LOCK_REASON}"
SAY_UNLOCK = "unlock production"
TAKE_REASON = "mine now"
SAY_TAKE = f"unlock production --force: {TAKE_REASON}"
STOP_REASON = "incident 4711"
SAY_STOP = f"stop deploys to production: {STOP_REASON}"
ANYWAY_REASON = "the fix cannot wait"
SAY_ANYWAY = f"deploy anyway: {ANYWAY_REASON}"
SKIP_REASON = "it looks fine"
SAY_SKIP = f"skip verification: {SKIP_REASON}"
SAY_VERIFY_NOW = "verify now"
SAY_RESUME = "resume deploys to production"

# A row with an "or" is two ways of doing one thing the authority answers alike: a channel does
# the first by default, or the other where its `verbs` say so (so each half is asked somewhere).
APPROVE, REJECT = "approve", "reject"
SKIP_IT, VERIFY_NOW = "skip verification", "verify now"
STOP_IT, RESUME = "stop", "resume"
FIRST_VERB = {DECIDE: APPROVE, DECIDE_OWN: APPROVE, SKIP: SKIP_IT, STOP: STOP_IT}
SAID = {START: SAY_START, ASK: SAY_DEPLOY, ROLL_BACK: SAY_ROLL_BACK, PROMOTE: SAY_PROMOTE, LOCK: SAY_LOCK,
        UNLOCK_OWN: SAY_UNLOCK, TAKE: SAY_TAKE, STOP: SAY_STOP}


# --- answers -------------------------------------------------------------------------------------

Escape = Callable[[str], str]


def plain(text: str) -> str:
    return text


def html(text: str) -> str:
    return str(markupsafe.escape(text))


slack_escaped: Escape = slack_blocks.escape


@dataclass(frozen=True)
class Answer:
    """What a channel answered one cell: it happened, or it refused saying `said` (as it put
    it where it goes: `escape` is how a plain sentence reads there). `wrong`: how the refusal
    was not the channel's way of refusing (a 409 where the API says 403), whatever its words.
    `shown`: the part of `said` a table of answers shows (a page's alert, not the whole page)."""

    allowed: bool
    said: str = ""
    escape: Escape = plain
    wrong: str = ""
    shown: str = ""

    def says(self, sentence: str) -> bool:
        return not self.allowed and not self.wrong and self.escape(sentence) in self.said

    def __str__(self) -> str:
        if self.allowed:
            return "allowed"
        words = " ".join((self.shown or self.said).split())
        words = words if len(words) <= 400 else f"{words[:400]}..."
        return f"refused ({self.wrong}), saying: {words}" if self.wrong else f"refused, saying: {words}"


ALLOWED = Answer(True)


def refusal(said: str, escape: Escape = plain, wrong: str = "", shown: str = "") -> Answer:
    return Answer(False, said, escape, wrong, shown)


# --- who acts, and in which situation -------------------------------------------------------------


@dataclass(frozen=True)
class Actor:
    """One of the table's columns as a channel knows them: `who` as it sees them, `key` what
    it needs to act as them (a token, a Slack id, an address, a --user name)."""

    column: str
    who: Identity
    key: str = ""


def blocked(who: Identity, facts: Facts) -> Thread:
    """A thread `who` started whose deploy to production a stop-the-line stopped: what
    "deploy anyway" forces (approval still applies)."""
    message = said(who, SAY_DEPLOY, facts.at)
    step = DeployService(service="backend", tag="v1.2.3", environment="production", source="command", at=facts.at)
    stopped = Error(kind="frozen", step_id=step.id, message="production is frozen (stop-the-line): incident",
                    at=facts.at)
    return Thread(facts.thread_id, (message, step, stopped))


# The situation a cell is asked in, as the table describes it: whose thread, waiting for what.
STAGED: dict[str, Callable[[Identity, Facts], Thread]] = {
    DECIDE: lambda who, facts: asked_by(OTHER, facts=facts)[0],
    REPLY: lambda who, facts: asked_by(OTHER, facts=facts)[0],
    CANCEL: lambda who, facts: asked_by(OTHER, facts=facts)[0],
    FORK: lambda who, facts: asked_by(OTHER, facts=facts)[0],
    DECIDE_OWN: lambda who, facts: asked_by(who, facts=facts)[0],
    REPLY_OWN: lambda who, facts: asked_by(who, facts=facts)[0],
    CANCEL_OWN: lambda who, facts: asked_by(who, facts=facts)[0],
    FORK_OWN: lambda who, facts: asked_by(who, facts=facts)[0],
    CANCEL_LIVE: verifying,
    SKIP: verifying,
    ANYWAY: blocked,
}


# --- reading an answer from a thread ---------------------------------------------------------------

Read = Callable[[Thread, int, Identity], Answer | None]


def by(event: HumanResponse | Cancelled, who: Identity) -> bool:
    return principal_of(event) == who.principal


def started(thread: Thread, since: int, who: Identity) -> Answer | None:
    return ALLOWED if thread.events else None


def asked(thread: Thread, since: int, who: Identity) -> Answer | None:
    """A deploy asked for (a rollback, a promotion, a deploy anyway): its approval requested,
    or what stopped it."""
    for event in thread.events[since:]:
        match event:
            case ApprovalRequested():
                return ALLOWED
            case Error() | RequestMoreInformation() | DoneForNow():
                return refusal(event.message)
            case CommandResult(ok=False):
                return refusal(event.text)
    return None


def commanded(thread: Thread, since: int, who: Identity) -> Answer | None:
    for event in thread.events[since:]:
        match event:
            case CommandResult():
                return ALLOWED if event.ok else refusal(event.text)
            case Error() | RequestMoreInformation():
                return refusal(event.message)
    return None


def verified(thread: Thread, since: int, who: Identity) -> Answer | None:
    for event in thread.events[since:]:
        match event:
            case VerificationEnded():
                return ALLOWED
            case VerificationRefused():
                return refusal(event.text)
    return None


def decided(thread: Thread, since: int, who: Identity) -> Answer | None:
    hits = [e for e in thread.events[since:] if isinstance(e, HumanResponse) and by(e, who)
            and e.approval_id and e.approve is not None]
    return ALLOWED if hits else None


def replied(thread: Thread, since: int, who: Identity) -> Answer | None:
    return ALLOWED if any(isinstance(e, HumanResponse) and by(e, who) for e in thread.events[since:]) else None


def cancelled(thread: Thread, since: int, who: Identity) -> Answer | None:
    return ALLOWED if any(isinstance(e, Cancelled) and by(e, who) for e in thread.events[since:]) else None


# How each cell's answer shows in its thread, once the channel took what was said.
READ: dict[str, Read] = {
    START: started, ASK: asked, ROLL_BACK: asked, PROMOTE: asked, ANYWAY: asked,
    DECIDE: decided, DECIDE_OWN: decided, REPLY: replied, REPLY_OWN: replied,
    CANCEL_OWN: cancelled, CANCEL: cancelled, CANCEL_LIVE: cancelled,
    LOCK: commanded, UNLOCK_OWN: commanded, TAKE: commanded, STOP: commanded, SKIP: verified,
}

WITHIN = 20.0  # seconds a thread has to show its answer (a worker's run, usually well under one)


@dataclass
class World:
    """The one app every channel reaches, and what the cells share: staging a situation,
    reading a thread's answer."""

    app: App
    api: httpx.AsyncClient  # the served app, with the shared token
    check_url: str  # what a staged verification checks: the app's own /healthz, which holds

    def now(self) -> datetime:
        return self.app.service.clock()

    async def stage(self, thread: Thread, origin: Origin, tell: bool = False) -> Thread:
        """`thread`'s events stored as a thread of `origin`; with `tell`, what the bot said in
        it (an approval request) published to the channels, as a run would have."""
        stored = await self.app.store.create(origin, list(thread.events), thread.id)
        if tell and self.app.service.notifier is not None:
            await self.app.service.notifier.publish(stored, stored.events[1:])
        return stored

    async def thread(self, thread_id: str) -> Thread | None:
        try:
            return await self.app.service.get(thread_id)
        except NotFound:
            return None

    async def answer(self, thread_id: str, action: str, who: Identity, since: int = 0,
                     refused: Callable[[], Awaitable[Answer | None]] | None = None) -> Answer:
        """The cell's answer as `thread_id` shows it after its first `since` events, or as
        `refused` finds the channel said it (an ephemeral note in Slack), whichever comes first."""
        read = READ[action]

        async def seen() -> Answer | None:
            if refused is not None and (told := await refused()) is not None:
                return told
            thread = await self.thread(thread_id)
            return read(thread, since, who) if thread is not None else None

        try:
            return await eventually(seen, within=WITHIN, every=0.05)
        except AssertionError:
            thread = await self.thread(thread_id)
            shown = [e.type for e in thread.events[since:]] if thread else "no such thread"
            return refusal(f"(no answer within {WITHIN:g}s; thread {thread_id} holds {shown})")
