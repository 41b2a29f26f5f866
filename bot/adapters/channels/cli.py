"""The terminal channel: `chat` runs a conversation here; `threads ...` mirrors the HTTP API.

Every command works on the shared store and runs the loop in this process, so a thread
started by the web server can be answered and resumed from a terminal, and vice versa.

Whatever came from people, the model or git is printed through `safe`: a message holding
terminal escape sequences (ESC, CSI, a carriage return) cannot move the cursor, recolour
or rewrite what the terminal shows.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import datetime

from bot.core import people, standing, transcript, wording
from bot.core.commands import is_approval
from bot.core.events import Event
from bot.core.people import CLI, Identity
from bot.core.thread import Thread
from bot.core.views import summary_json, thread_json
from bot.runtime import launch_once
from bot.runtime.service import NotFound, Refused, ThreadService


@dataclass(frozen=True)
class Terminal:
    """What the terminal needs, handed in by the composition root: the service, a way to
    run a thread's loop here, and the secrets to keep out of what it prints."""

    service: ThreadService
    run: Callable[[str], Awaitable[Thread | None]]
    secrets: tuple[str, ...] = ()
    store: str = ""  # where the store is, in words: said when a thread is not in it


class PrintNotifier:
    """Shows each new event as it is recorded, under a `thread ID` line the first time this
    process hears of the thread. It is the only printer of events: the service publishes what
    a person says as it records it, so a command printing it again would show it twice."""

    def __init__(self) -> None:
        self.seen: set[str] = set()

    async def publish(self, thread: Thread, new: Sequence[Event]) -> None:
        if thread.id not in self.seen:
            self.seen.add(thread.id)
            print(f"thread {safe(thread.id, True)}", flush=True)
        for event in new:
            if not transcript.says_again(thread, event):
                print(f"  {plain(event)}", flush=True)


def safe(text: str, one_line: bool = False) -> str:
    """`text` without control characters (C0 but tab and line feed, C1) or format characters (bidi, zero-width);
    every kind of line break is a line feed, or a space with `one_line`."""
    if one_line:
        return transcript.one_line(text)
    return "\n".join(transcript.clean(line) for line in str(text).splitlines())


def plain(event: Event) -> str:
    """One event for the terminal: its continuation lines indented, no blank ones."""
    lines = [ln for ln in safe(transcript.plain(event)).splitlines() if ln.strip()]
    return "\n    ".join(lines)


def who(term: Terminal, user: str) -> Identity:
    """`--user NAME`: whoever runs the CLI reaches the store directly, so the name is taken
    as given (the person deploybot.toml names so, or someone unknown) and recorded as given
    through the CLI (via "cli"): nothing else proved it."""
    return term.service.directory.by_name(user, via=CLI)


def _now(term: Terminal) -> datetime:
    """The service's clock: an approval that expired shows as waiting for a human."""
    return term.service.clock()


async def ask(prompt: str) -> str | None:
    """The answer typed after `prompt`; None when stdin has ended. Read from a pipe, nothing
    echoes it, so it is printed after the prompt: the output reads as the terminal would."""
    try:
        answer = (await asyncio.to_thread(input, prompt)).strip()
    except EOFError:
        print(flush=True)  # end the prompt's line
        return None
    if not sys.stdin.isatty():
        print(safe(answer, one_line=True), flush=True)
    return answer


KEY = "--idempotency-key"


async def chat(term: Terminal, message: str, user: str, key: str | None = None) -> int:
    """`key`: the same key again (a script retrying after a timeout, a terminal that was
    interrupted) goes on with the thread it started (bot/runtime/launch_once.py)."""
    if key is None:
        thread = await term.service.launch(message, who(term, user), channel="cli")
    else:
        launch_once.key_of(key, KEY)  # Invalid (refused) when it is no key
        thread, _ = await launch_once.launch_once(term.service, message, who(term, user), key, KEY, channel="cli")
    while True:
        ran = await term.run(thread.id)
        if ran is None:
            return _elsewhere(thread)
        thread = ran
        status = thread.status(_now(term))
        if status == "waiting_for_approval":
            request = thread.pending_approval()
            assert request
            if (refused := await _may_not_decide(term, thread, user)) is not None:
                print(safe(refused))  # asked only of people who may decide
                return _paused(thread, _now(term))
            answer = await ask(safe(
                f"Approve deploying {request.service} {request.tag} to {request.environment}? "
                "[y to approve, anything else rejects it as feedback] ", one_line=True
            ))
            if answer is None:
                return _paused(thread, _now(term))
            approve = is_approval(answer)
            text = "" if approve else answer
            await _respond(term, thread, text, user, request.approval_id, approve)
        elif status == "waiting_for_human":
            answer = await ask("your reply> ")
            if not answer:
                return _paused(thread, _now(term))
            await _respond(term, thread, answer, user, None, None)
        else:
            print(f"[{status}]")
            return 0 if status == "done" else 1


async def _may_not_decide(term: Terminal, thread: Thread, user: str) -> str | None:
    """Why `user` may not decide on the thread's pending approval, naming who may; None if
    they may."""
    request = thread.pending_approval()
    if request is None:
        return None
    try:
        await term.service.check_decision(thread.id, request.approval_id, who(term, user))
    except Refused as e:
        deciders = people.describe(standing.of(thread, request, term.service.policy).deciders or ())
        return wording.not_yours_to_decide(e.message.rstrip("."), deciders)
    return None


async def _respond(
    term: Terminal, thread: Thread, text: str, user: str, approval_id: str | None, approve: bool | None
) -> None:
    try:
        await term.service.respond(thread.id, text, who(term, user), approval_id, approve, channel="cli")
    except Refused as e:
        print(f"refused: {safe(e.message)}", file=sys.stderr)
        raise SystemExit(_paused(thread, _now(term))) from e


def _paused(thread: Thread, now: datetime | None = None) -> int:
    """No answer to read (stdin ended: a pipe, a script, no terminal): the thread waits in the
    store, and this says the command that answers it, from any terminal."""
    tid = safe(thread.id, True)
    request = thread.pending_approval(now)
    how = (f"--approve --approval-id {safe(request.approval_id, True)}" if request else '"your reply"')
    print(f"[{thread.status(now)}] thread {tid} is paused; answer it later with "
          f"`python -m bot threads respond {tid} {how}`")
    return 0


async def threads(term: Terminal, a: argparse.Namespace) -> int:
    """`python -m bot threads ACTION`; the options are defined in bot/__main__.py. A thread
    that is not there is said with the store looked in: run without the team's store (no
    REDIS_URL), the CLI finds an empty one of its own folder, and that is worth knowing."""
    try:
        return await _threads(term, a)
    except NotFound:
        if not term.store or a.action == "list":
            raise
        raise NotFound(wording.no_thread_in(a.id, term.store)) from None


async def _threads(term: Terminal, a: argparse.Namespace) -> int:
    match a.action:
        case "list":
            now = _now(term)
            for t in await term.service.recent(a.status, a.limit):
                s = summary_json(t, now)
                if a.status and s["status"] != a.status:  # its approval expired since
                    continue
                row = f"{s['id']}  {s['status']:<20} {(s['updated_at'] or '')[:19]}  {s['title']}"
                print(safe(row, one_line=True))
            return 0
        case "show":
            thread = await term.service.get(a.id)
            if a.markdown:
                print(safe(transcript.markdown(thread, term.secrets, _now(term))))
            else:  # JSON escapes every control character itself
                print(json.dumps(thread_json(thread, _now(term), term.service.policy), indent=2))
            return 0
        case "respond":
            approve = True if a.approve else False if a.reject else None
            await term.service.respond(a.id, a.text or "", who(term, a.user), a.approval_id, approve, "cli")
            return await _resume(term, a.id)
        case "fork":
            thread = await term.service.fork(a.id, a.at, who(term, a.user))
            print(safe(f"forked {a.id} at {a.at}: new thread {thread.id}", one_line=True))
            return await _resume(term, thread.id)
        case "cancel":
            await term.service.cancel(a.id, who(term, a.user), a.reason)
            print(safe(f"cancelled {a.id}", one_line=True))
            await term.run(a.id)  # its run lets go of what it held: a place in line, a timer
            return 0
        case "resume":
            return await _resume(term, a.id)
    return 2


async def _resume(term: Terminal, thread_id: str) -> int:
    thread = await term.run(thread_id)
    if thread is None:
        return _elsewhere(await term.service.get(thread_id))
    print(f"[{thread.status(_now(term))}] thread {safe(thread.id, True)}")
    return 0


def _elsewhere(thread: Thread) -> int:
    print(f"[running] thread {safe(thread.id, True)} is being advanced by another deploybot process right now")
    return 0
