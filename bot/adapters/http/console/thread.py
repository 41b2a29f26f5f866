"""A thread's page (GET /console/threads/ID) and what can be done there: reply, cancel, fork,
resume, deploy anyway."""

from __future__ import annotations

import re
from datetime import datetime
from urllib.parse import urlencode

from fastapi import APIRouter, Request
from fastapi.responses import PlainTextResponse, Response

from bot.adapters.http.console import model
from bot.adapters.http.console.board import everywhere
from bot.adapters.http.console.forms import Page, back, id_like, reason, text, whole_number
from bot.adapters.http.console.routes import MAX_REASON_CHARS, PREFIX, Console, Viewer
from bot.adapters.http.shared import MAX_TEXT_CHARS
from bot.core import commands, outcomes, transcript, wording
from bot.core.prompt import redact
from bot.core.thread import Thread
from bot.runtime.service import Forbidden, Invalid, WrongState

ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")  # a terminal's colours and cursor moves: no text


def router(console: Console) -> APIRouter:
    r = APIRouter(include_in_schema=False)
    r.get(PREFIX + "/threads/{thread_id}")(console.route(thread_page))
    r.get(PREFIX + "/threads/{thread_id}/output")(console.route(live_output, counted=False))
    r.post(PREFIX + "/threads/{thread_id}/deploy-anyway")(console.route(deploy_anyway))
    r.post(PREFIX + "/threads/{thread_id}/respond")(console.route(respond))
    r.post(PREFIX + "/threads/{thread_id}/cancel")(console.route(cancel))
    r.post(PREFIX + "/threads/{thread_id}/fork")(console.route(fork))
    r.post(PREFIX + "/threads/{thread_id}/resume")(console.route(resume))
    r.post(PREFIX + "/threads/{thread_id}/verify-now")(console.route(verify_now))
    r.post(PREFIX + "/threads/{thread_id}/skip-verification")(console.route(skip_verification))
    return r


async def thread_page(console: Console, request: Request, thread_id: str) -> Response:
    who = console.viewer(request)
    if not id_like(thread_id):
        raise Page(404, "Not found", f"there is no thread {thread_id!r}")
    version = await console.reader.fingerprint(f"thread:{thread_id}")
    thread = await console.reader.maybe(thread_id)
    if thread is None:
        raise Page(404, "Not found", f"there is no thread {thread_id!r}")
    now, policy = console.service.clock(), console.policy
    approvals = model.approvals(thread, who.identity, policy, now)
    if any(a.pending for a in approvals):  # its commit, marked faulty anywhere since it was asked
        approvals = model.marked_faulty(approvals, await everywhere(console))
    return console.render(
        request, "thread.html", thread=thread, status=thread.status(now), outcome=outcomes.outcome(thread, now),
        about=outcomes.about(thread), retry=_retry(thread, now, who), output=await _output(console, thread),
        items=model.timeline(thread, console.parts.secrets, console.words),
        approvals=approvals,
        blocked=model.blocked(thread, who.identity, policy),
        verifying=model.verifying(thread, who.identity, policy),
        version=version, watch=f"thread:{thread.id}",
    )


async def live_output(console: Console, request: Request, thread_id: str) -> Response:
    """The running deploy's newest output lines, as text (the thread page fetches it every few
    seconds while the deploy runs); 204 once nothing runs."""
    console.viewer(request)  # who may see the thread may see its output
    thread = await console.reader.maybe(thread_id) if id_like(thread_id) else None
    if thread is None:
        raise Page(404, "Not found", f"there is no thread {thread_id[:40]!r}")
    lines = await _output(console, thread)
    if lines is None:
        return Response(status_code=204, headers={"Cache-Control": "no-store"})
    return PlainTextResponse("\n".join(lines), headers={"Cache-Control": "no-store"})


async def _output(console: Console, thread: Thread) -> list[str] | None:
    """What the thread's running deploy printed so far, secrets redacted and control characters
    dropped; None when no deploy runs in it (or its output is not kept)."""
    going, live = model.running(thread), console.parts.live_output
    if going is None or live is None:
        return None
    secrets = console.parts.secrets
    return [transcript.clean(ANSI.sub("", redact(line, secrets))) for line in await live.tail(going.deploy_id)]


async def deploy_anyway(console: Console, request: Request, thread_id: str) -> Response:
    """"deploy anyway: REASON" in the thread, as the person: the thread forces the deploy
    that CI checks or a freeze stopped (and checks again that they may)."""
    who = console.viewer(request)
    fields = await console.form(request, who)
    why = reason(fields, MAX_REASON_CHARS)
    thread = await console.service.get(thread_id)
    found = model.blocked(thread, who.identity, console.policy)
    if found is None:
        raise WrongState(wording.nothing_to_force())
    if found.why_not:
        raise Forbidden(found.why_not)
    said = f"deploy anyway: {why}"
    if commands.deploy_anyway(said) != why:
        raise Invalid(f"this reason cannot be said as one command: {why!r}")
    thread = await console.service.respond(thread_id, said, who.identity, channel="console")
    await console.parts.kick(thread.id)
    return back(fields, f"{PREFIX}/threads/{thread_id}", "anyway")


async def respond(console: Console, request: Request, thread_id: str) -> Response:
    who = console.viewer(request)
    fields = await console.form(request, who)
    said = text(fields, "text", MAX_TEXT_CHARS, required=True)
    thread = await console.service.respond(thread_id, said, who.identity, channel="console")
    await console.parts.kick(thread.id)
    return back(fields, f"{PREFIX}/threads/{thread_id}", "sent")


async def cancel(console: Console, request: Request, thread_id: str) -> Response:
    who = console.viewer(request)
    fields = await console.form(request, who)
    why = text(fields, "reason", MAX_TEXT_CHARS)
    await console.service.cancel(thread_id, who.identity, why)
    await console.parts.kick(thread_id)  # its run lets go of what it held: a place in line, a timer
    return back(fields, f"{PREFIX}/threads/{thread_id}", "cancelled")


async def fork(console: Console, request: Request, thread_id: str) -> Response:
    who = console.viewer(request)
    fields = await console.form(request, who)
    at = whole_number(fields.get("at", ""), "at", 1, 1_000_000)
    thread = await console.service.fork(thread_id, at, who.identity)
    await console.parts.kick(thread.id)
    return back({}, f"{PREFIX}/threads/{thread.id}", "forked")


async def resume(console: Console, request: Request, thread_id: str) -> Response:
    who = console.viewer(request)
    fields = await console.form(request, who)
    thread = await console.service.get(thread_id)
    if thread.cancelled():
        raise WrongState("this thread was cancelled: fork it to go on")
    await console.parts.kick(thread.id)  # a run re-derives what to do from the events
    return back(fields, f"{PREFIX}/threads/{thread_id}", "resumed")


async def verify_now(console: Console, request: Request, thread_id: str) -> Response:
    """"verify now" in the thread, as the signed-in person (the run checks again that they may)."""
    return await _end_verification(console, request, thread_id, None)


async def skip_verification(console: Console, request: Request, thread_id: str) -> Response:
    """"skip verification: REASON" in the thread, as the signed-in person."""
    return await _end_verification(console, request, thread_id, MAX_REASON_CHARS)


async def _end_verification(console: Console, request: Request, thread_id: str, reason_chars: int | None) -> Response:
    who = console.viewer(request)
    fields = await console.form(request, who)
    why = reason(fields, reason_chars) if reason_chars is not None else ""
    thread = await console.service.get(thread_id)
    found = model.verifying(thread, who.identity, console.policy)
    if found is None:
        raise WrongState("this thread is not verifying a deploy")
    if found.why_not:
        raise Forbidden(found.why_not)
    said = f"skip verification: {why}" if reason_chars is not None else "verify now"
    if commands.verify_command(said) is None:
        raise Invalid(f"this reason cannot be said as one command: {why!r}")
    thread = await console.service.respond(thread_id, said, who.identity, channel="console")
    await console.parts.kick(thread.id)
    return back(fields, f"{PREFIX}/threads/{thread_id}", "verify" if reason_chars is None else "skipped")


def _retry(thread: Thread, now: datetime, who: Viewer) -> str:
    """Where Retry of the thread's failed deploy goes: the deploy form with its service, tag and
    environment, which previews it and sends it as a new thread under today's rules (an
    approval where one is needed); "" when its deploy did not fail, or the viewer may not ask."""
    step = outcomes.last_deploy(thread)
    if step is None or outcomes.outcome(thread, now).kind != "failed" or not who.may_start:
        return ""
    service = getattr(step, "service", "")
    if not service:
        return ""  # a thread older than services: its deploy cannot be said as one command today
    return f"{PREFIX}/deploy?" + urlencode({"service": service, "environment": step.environment, "tag": step.tag,
                                            "reason": wording.retry_reason(thread.id)})
