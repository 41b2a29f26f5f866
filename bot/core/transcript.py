"""Thread -> markdown a human can read; one event as a line (logs) or as plain text (the CLI).

Nothing a person, the model or git wrote can forge a line of the markdown: every such text
and every name is redacted, then escaped (markdown's inline punctuation gets a backslash;
a line cannot start a list item, a heading, a quote or a rule), its line breaks of every
kind (\\r, \\u2028, ...) become continuation lines indented under their own event, and
control and format characters (bot.core.characters) are dropped. Deploy output goes in a
code fence longer than any run of backticks in it, so it cannot close the fence.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from bot.core import people, wording
from bot.core.characters import visible
from bot.core.events import (
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
from bot.core.outcomes import REFUSALS
from bot.core.prompt import redact
from bot.core.thread import Thread

# C0 and C1 control characters but the tab and the line feed, and the bidirectional overrides and isolates
# (they reorder what a reader sees; `clean` drops every other format character too).
CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
_INLINE = re.compile(r"[\\`*_<>&|~]|\](?=[(\[:])")  # emphasis, code, html, entities, tables, links
_ORDERED = re.compile(r"(\d+)([.)])")


@dataclass(frozen=True)
class _Style:
    text: Callable[[str], str]  # what people, the model or git wrote
    name: Callable[[str], str]  # who
    code: Callable[[str], str]  # an id or a time
    output: Callable[[str], str]  # a deploy's output, many lines


def clean(text: str) -> str:
    """`text` without control characters (but tabs and line feeds) or format characters."""
    return visible(CONTROL.sub("", text))


def _fence(output: str) -> str:
    lines = [clean(line) for line in output.splitlines()]
    # Counted on the cleaned lines: "``\x00``" (or "``\u200b``") becomes four backticks once cleaned.
    longest = max((len(run) for line in lines for run in re.findall(r"`+", line)), default=0)
    fence = "`" * max(3, longest + 1)
    return "\n" + "\n".join([fence, *lines, fence])


def one_line(text: str) -> str:
    """`text` on one line with no control characters: for a log line, which a person's
    newline or terminal escape must not forge or hijack."""
    return " ".join(clean(line) for line in str(text).splitlines())


def escape(text: str) -> str:
    """`text` as markdown that shows it literally, whatever it holds: one escaped line per
    line of it (split on every kind of line break), with no control characters."""
    return "\n".join(_escape_line(line) for line in text.splitlines())


def _escape_line(line: str) -> str:
    line = _INLINE.sub(lambda m: "\\" + m.group(), clean(line).strip())
    if line[:1] in ("-", "+", "#", "="):  # a list item, a heading, a setext underline or a rule
        return "\\" + line
    ordered = _ORDERED.match(line)  # "1. " or "1) " starts an ordered list
    return f"{ordered[1]}\\{line[len(ordered[1]):]}" if ordered else line


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _markdown(secrets: tuple[str, ...]) -> _Style:
    """Values are redacted before they are escaped: a secret holding `_` or `*` would not
    be recognised once escaped."""
    return _Style(
        text=lambda s: escape(redact(s, secrets)),
        name=lambda s: f"**{escape(_one_line(redact(s, secrets)))}**",
        code=lambda s: f"`{s}`" if re.fullmatch(r"[\w:.+-]*", s) else escape(redact(s, secrets)),
        output=lambda s: _fence(redact(s, secrets)),
    )


# The one-line view for logs: markup, no escaping (never rendered as markdown).
_LINE = _Style(text=str, name=lambda s: f"**{s}**", code=lambda s: f"`{s}`", output=lambda s: f"\n```\n{s}\n```")
_PLAIN = _Style(text=str, name=str, code=str, output=lambda s: "\n" + s)


def markdown(thread: Thread, secrets: tuple[str, ...] = (), now: datetime | None = None) -> str:
    """`now`: the caller's clock, for the status (an expired approval waits for a human)."""
    style = _markdown(secrets)
    lines = [f"# Thread {style.text(_one_line(thread.id))}", "", f"Status: **{thread.status(now)}**", ""]
    if thread.origin.forked_from:
        lines[3:3] = [
            f"Forked from {style.text(_one_line(thread.origin.forked_from))} at event {thread.origin.forked_at}",
            "",
        ]
    for e in thread.events:
        if says_again(thread, e):
            continue
        body = _line(e, style).replace("\n", "\n  ")
        lines.append(f"- `{e.at:%H:%M:%S}` {body}")
    return redact("\n".join(lines) + "\n", secrets)


def says_again(thread: Thread, event: Event) -> bool:
    """Whether `event` is the bot's closing word that only says again what the event just
    before it said: a command's result ("There is nothing to roll api in production back
    to…"), or the refusal that stopped a deploy ("Stopped: " and the refusal's own words).
    Chat shows only the closing word; a page of every event shows it once."""
    if not isinstance(event, DoneForNow) or event.source != "command":
        return False
    index = next((i for i, e in enumerate(thread.events) if e.id == event.id), 0)
    before = (e for e in reversed(thread.events[:index]) if not isinstance(e, DeliveryFailed | ToolCalled))
    previous = next(before, None)
    if isinstance(previous, Error):
        return event.message == wording.stopped(previous.message)
    if isinstance(previous, DeployResult):
        return event.message == closing_word(previous)
    return isinstance(previous, CommandResult) and previous.text == event.message


def closing_word(result: DeployResult) -> str:
    """What the bot says once a deploy ends (chat gets it; a page of every event has the result)."""
    what = wording.what_to_deploy(result.service, result.tag, result.environment)
    if result.ok and result.rollback_of:
        return wording.rolled_back(what)
    if result.ok:
        return wording.deployed(what, result.url)
    return wording.deploy_failed_saying(what, result.exit_code, result.output[-300:])


def line(e: Event) -> str:
    """One event as a markdown-like line, not escaped: for logs, not to be rendered."""
    return _line(e, _LINE)


def plain(e: Event) -> str:
    """One event as plain text: no markup, nothing escaped (the terminal prints it)."""
    return _line(e, _PLAIN)


def text(e: Event, secrets: tuple[str, ...] = ()) -> str:
    """One event in plain words (the markdown's wording, without its markup), secrets
    redacted and control and format characters dropped: for a page that escapes it itself (the web
    console's timeline, one element per event, so a line break in it cannot start another)."""
    return clean(redact(_line(e, _PLAIN), secrets))


def _line(e: Event, s: _Style) -> str:
    render = entry_for(_LINES, e)
    return render(e, s) if render is not None else e.type


# --- one line per event type: what people said -----------------------------------------


def _bot(s: _Style) -> str:
    return s.name("deploybot")


def _who(e: UserMessage | HumanResponse | Cancelled) -> str:
    """One name per person, whichever channel they came by: the person, else the channel's id."""
    return e.person or e.user


def _user_message(e: UserMessage, s: _Style) -> str:
    return f"{s.name(_who(e))} ({s.text(e.channel)}): {s.text(e.text)}"


def _human_response(e: HumanResponse, s: _Style) -> str:
    if e.approve is True:
        return f"{s.name(_who(e))} approved"
    if e.approve is False:
        return f"{s.name(_who(e))} rejected" + (f": {s.text(e.text)}" if e.text else "")
    return f"{s.name(_who(e))}: {s.text(e.text)}"


def _cancelled(e: Cancelled, s: _Style) -> str:
    return f"cancelled by {s.text(_who(e))}" + (f": {s.text(e.reason)}" if e.reason else "")


# --- the steps --------------------------------------------------------------------------


def _list_git_tags(e: ListGitTags, s: _Style) -> str:
    return f"{_bot(s)} lists the git tags" + (f" of {s.text(e.service)}" if e.service else "")


def _deploy(e: DeployService | DeployBackend | DeployFrontend, s: _Style) -> str:
    t = s.text
    why = f" ({t(e.reason)})" if e.reason else ""
    forced = (
        f"; {t(wording.forced_note(e.force, e.forced_by or '?'))}"
        if isinstance(e, DeployService) and e.force else ""
    )
    if isinstance(e, DeployService) and e.rollback_of:
        if e.reason == wording.rollback_reason(e.tag, e.rollback_from):
            why = ""  # the reason the rollback was planned with says what the proposal says
        what = t(wording.rollback_proposal(e.service, e.environment, e.rollback_from, e.tag))
        return f"{_bot(s)} proposes: {what}{why}{forced}"
    return f"{_bot(s)} proposes: deploy {t(e.service)} {t(e.tag)} to {t(e.environment)}{why}{forced}"


def _roll_back(e: RollBack, s: _Style) -> str:
    return f"{_bot(s)} looks for what to roll {s.text(e.service)} in {s.text(e.environment)} back to"


def _promote(e: Promote, s: _Style) -> str:
    return f"{_bot(s)} looks for what to promote {s.text(e.service)} to {s.text(e.environment)} with"


def _request_more_information(e: RequestMoreInformation, s: _Style) -> str:
    return f"{_bot(s)} asks: {s.text(e.message)}"


def _done_for_now(e: DoneForNow, s: _Style) -> str:
    return f"{_bot(s)}: {s.text(e.message)}"


def _lock_environment(e: LockEnvironment, s: _Style) -> str:
    return f"{_bot(s)} locks {s.text(wording.lock_target(e.environment, e.service))}: {s.text(e.reason)}"


def _unlock_environment(e: UnlockEnvironment, s: _Style) -> str:
    forced = f" (taking it: {s.text(e.force)})" if e.force else ""
    return f"{_bot(s)} unlocks {s.text(wording.lock_target(e.environment, e.service))}{forced}"


def _stop_deploys(e: StopDeploys, s: _Style) -> str:
    until = f" until {wording.utc(e.until)}" if e.until else ""
    return f"{_bot(s)} stops deploys to {s.text(wording.freeze_scope(e.environment))}{until}: {s.text(e.reason)}"


def _resume_deploys(e: ResumeDeploys, s: _Style) -> str:
    return f"{_bot(s)} resumes deploys to {s.text(wording.freeze_scope(e.environment))}"


def _show_deploys(e: ShowDeploys, s: _Style) -> str:
    return f"{_bot(s)} looks up what is on {s.text(e.environment)}"


# --- what came of them ------------------------------------------------------------------


def _git_tags_result(e: GitTagsResult, s: _Style) -> str:
    t = s.text
    tags = ", ".join(f"{t(tag.name)} ({t(tag.commit[:7])})" for tag in e.tags[:10])
    more = f" and {len(e.tags) - 10} more" if len(e.tags) > 10 else ""
    whose = f" of {t(e.service)}" if e.service else ""
    return f"tags{whose}: {tags or 'none'}{more}"


def _approval_requested(e: ApprovalRequested, s: _Style) -> str:
    t = s.text
    change = f"; {t(wording.change_in_one_line(e.change))}" if e.change else ""
    return (
        f"{s.name('approval needed')} to deploy {t(e.service)} {t(e.tag)} ({t(e.commit[:7])}) to "
        f"{t(e.environment)}, asked by {t(people.one_name(e.asker)) if e.asker else 'unknown'}; expires "
        f"{wording.utc(e.expires_at)}; approval id {s.code(e.approval_id)}{change}"
    )


def _lock_taken(e: LockTaken, s: _Style) -> str:
    target = wording.lock_target(e.environment, e.service)
    return f"{s.text(wording.lock_taken_from_you(target, e.by, e.reason))}"


def _command_result(e: CommandResult, s: _Style) -> str:
    return s.text(e.text)


def _approval_reminded(e: ApprovalReminded, s: _Style) -> str:
    return f"{_bot(s)} reminds the approvers (reminder {e.count})"


def _approval_escalated(e: ApprovalEscalated, s: _Style) -> str:
    return f"{_bot(s)} asks {s.text(', '.join(e.to))} too: nobody decided in time"


def _approval_rules_changed(e: ApprovalRulesChanged, s: _Style) -> str:
    who = s.text(people.describe(e.approvers))
    return f"the rules changed since it was asked: it now needs {wording.approvals_needed(e.required)}, from {who}"


def _approval_expired(e: ApprovalExpired, s: _Style) -> str:
    return f"approval expired at {wording.utc(e.expires_at)}: not deployed"


def _sender_confirmation_requested(e: SenderConfirmationRequested, s: _Style) -> str:
    return f"{_bot(s)} asks {s.text(e.address)} to confirm they sent this; nothing is done until then"


def _sender_confirmed(e: SenderConfirmed, s: _Style) -> str:
    return f"{s.text(e.evidence.partition(' ')[0]) or 'the sender'} confirmed sending this"


def _sender_confirmation_expired(e: SenderConfirmationExpired, s: _Style) -> str:
    return f"nobody confirmed sending this by {wording.utc(e.expires_at)}: dropped, nothing was done"


def _deploy_queued(e: DeployQueued, s: _Style) -> str:
    return f"waits in line (number {e.position}): {s.text(e.behind)}"


def _deploy_started(e: DeployStarted, s: _Style) -> str:
    return f"deploying… (deploy id {s.code(e.deploy_id)})"


def _deploy_result(e: DeployResult, s: _Style) -> str:
    t = s.text
    done = "rolled back" if e.rollback_of else "deployed"
    head = done if e.ok else f"deploy FAILED (exit code {e.exit_code})"
    out = s.output(e.output) if e.output else ""
    link = f" ({t(e.url)})" if e.url else ""
    return f"{head}: {t(e.service)} {t(e.tag)} to {t(e.environment)}{link}{out}"


def _error(e: Error, s: _Style) -> str:
    said = "refused" if e.kind in REFUSALS else "error"  # a rule said no: nothing went wrong
    return f"{said} ({e.kind}): {s.text(e.message)}"


def _github_answered(e: GitHubAnswered, s: _Style) -> str:
    return s.text(wording.gate_answered(e.state, e.comment))


def _delivery_failed(e: DeliveryFailed, s: _Style) -> str:
    return f"could not deliver to {s.text(e.to)} by {s.text(e.channel)}: {s.text(e.reason)}"


def _tool_called(e: ToolCalled, s: _Style) -> str:
    return s.text(wording.tool_called(e.tool, e.agent.removeprefix("agent:")))


def _verification_started(e: VerificationStarted, s: _Style) -> str:
    checks = f"{len(e.checks)} check{'s' if len(e.checks) != 1 else ''}"
    return (f"verifying {s.text(e.service)} {s.text(e.tag)} in {s.text(e.environment)} until "
            f"{wording.utc(e.ends_at)} ({checks}; on failure: {s.text(e.on_failure)})")


def _check_observed(e: CheckObserved, s: _Style) -> str:
    return f"check {s.text(wording.check_line(e.check, e.ok, e.value))}"


def _verification_ended(e: VerificationEnded, s: _Style) -> str:
    if e.outcome == "verified":
        return "verified" + (f" early by {s.text(e.by)}" if e.early else ": every check held for the whole bake")
    if e.outcome == "skipped":
        return f"verification skipped by {s.text(e.by)}: {s.text(e.reason)}"
    return f"verification FAILED: {s.text(e.check)} at {s.text(e.value)}; the deploy is marked faulty"


def _verification_refused(e: VerificationRefused, s: _Style) -> str:
    return s.text(e.text)


# Every event type's line; `_line` looks an event up by its class.
_LINES: dict[type, Callable[[Any, _Style], str]] = {
    UserMessage: _user_message,
    HumanResponse: _human_response,
    Cancelled: _cancelled,
    ListGitTags: _list_git_tags,
    DeployService: _deploy,
    DeployBackend: _deploy,
    DeployFrontend: _deploy,
    RollBack: _roll_back,
    Promote: _promote,
    RequestMoreInformation: _request_more_information,
    DoneForNow: _done_for_now,
    LockEnvironment: _lock_environment,
    UnlockEnvironment: _unlock_environment,
    StopDeploys: _stop_deploys,
    ResumeDeploys: _resume_deploys,
    ShowDeploys: _show_deploys,
    GitTagsResult: _git_tags_result,
    ApprovalRequested: _approval_requested,
    LockTaken: _lock_taken,
    CommandResult: _command_result,
    ApprovalReminded: _approval_reminded,
    ApprovalEscalated: _approval_escalated,
    ApprovalRulesChanged: _approval_rules_changed,
    ApprovalExpired: _approval_expired,
    SenderConfirmationRequested: _sender_confirmation_requested,
    SenderConfirmed: _sender_confirmed,
    SenderConfirmationExpired: _sender_confirmation_expired,
    ToolCalled: _tool_called,
    DeployQueued: _deploy_queued,
    DeployStarted: _deploy_started,
    DeployResult: _deploy_result,
    Error: _error,
    DeliveryFailed: _delivery_failed,
    VerificationStarted: _verification_started,
    CheckObserved: _check_observed,
    VerificationEnded: _verification_ended,
    VerificationRefused: _verification_refused,
    GitHubAnswered: _github_answered,
}
