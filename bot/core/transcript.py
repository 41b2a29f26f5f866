"""Thread -> markdown a human can read; one event as a line (logs) or as plain text (the CLI).

Nothing a person, the model or git wrote can forge a line of the markdown: every such text
and every name is redacted, then escaped (markdown's inline punctuation gets a backslash;
a line cannot start a list item, a heading, a quote or a rule), its line breaks of every
kind (\\r, \\u2028, ...) become continuation lines indented under their own event, and
control characters are dropped. Deploy output goes in a code fence longer than any run of
backticks in it, so it cannot close the fence.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from bot.core import wording
from bot.core.events import (
    ApprovalEscalated,
    ApprovalExpired,
    ApprovalReminded,
    ApprovalRequested,
    Cancelled,
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
    GitTagsResult,
    HumanResponse,
    ListGitTags,
    LockEnvironment,
    LockTaken,
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
)
from bot.core.prompt import redact
from bot.core.thread import Thread

# C0 and C1 control characters but the tab and the line feed, and the bidirectional overrides and isolates
# (they reorder what a reader sees).
CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
_INLINE = re.compile(r"[\\`*_<>&|~]|\](?=[(\[:])")  # emphasis, code, html, entities, tables, links
_ORDERED = re.compile(r"(\d+)([.)])")


@dataclass(frozen=True)
class _Style:
    text: Callable[[str], str]  # what people, the model or git wrote
    name: Callable[[str], str]  # who
    code: Callable[[str], str]  # an id or a time
    output: Callable[[str], str]  # a deploy's output, many lines


def _fence(output: str) -> str:
    lines = [CONTROL.sub("", line) for line in output.splitlines()]
    # Counted on the cleaned lines: "``\x00``" becomes four backticks once cleaned.
    longest = max((len(run) for line in lines for run in re.findall(r"`+", line)), default=0)
    fence = "`" * max(3, longest + 1)
    return "\n" + "\n".join([fence, *lines, fence])


def one_line(text: str) -> str:
    """`text` on one line with no control characters: for a log line, which a person's
    newline or terminal escape must not forge or hijack."""
    return " ".join(CONTROL.sub("", line) for line in str(text).splitlines())


def escape(text: str) -> str:
    """`text` as markdown that shows it literally, whatever it holds: one escaped line per
    line of it (split on every kind of line break), with no control characters."""
    return "\n".join(_escape_line(line) for line in text.splitlines())


def _escape_line(line: str) -> str:
    line = _INLINE.sub(lambda m: "\\" + m.group(), CONTROL.sub("", line).strip())
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
        body = _line(e, style).replace("\n", "\n  ")
        lines.append(f"- `{e.at:%H:%M:%S}` {body}")
    return redact("\n".join(lines) + "\n", secrets)


def line(e: Event) -> str:
    """One event as a markdown-like line, not escaped: for logs, not to be rendered."""
    return _line(e, _LINE)


def plain(e: Event) -> str:
    """One event as plain text: no markup, nothing escaped (the terminal prints it)."""
    return _line(e, _PLAIN)


def text(e: Event, secrets: tuple[str, ...] = ()) -> str:
    """One event in plain words (the markdown's wording, without its markup), secrets
    redacted and control characters dropped: for a page that escapes it itself (the web
    console's timeline, one element per event, so a line break in it cannot start another)."""
    return CONTROL.sub("", redact(_line(e, _PLAIN), secrets))


def _line(e: Event, s: _Style) -> str:
    t, who = s.text, s.name
    bot = who("deploybot")
    match e:
        case UserMessage():
            return f"{who(e.user)} ({t(e.channel)}): {t(e.text)}"
        case HumanResponse(approve=True):
            return f"{who(e.user)} approved"
        case HumanResponse(approve=False):
            return f"{who(e.user)} rejected" + (f": {t(e.text)}" if e.text else "")
        case HumanResponse():
            return f"{who(e.user)}: {t(e.text)}"
        case ListGitTags():
            return f"{bot} lists the git tags" + (f" of {t(e.service)}" if e.service else "")
        case DeployService() | DeployBackend() | DeployFrontend():
            why = f" ({t(e.reason)})" if e.reason else ""
            verb = "roll back to" if isinstance(e, DeployService) and e.rollback_of else "deploy"
            forced = (
                f"; {t(wording.forced_note(e.force, e.forced_by or '?'))}"
                if isinstance(e, DeployService) and e.force else ""
            )
            return f"{bot} proposes: {verb} {t(e.service)} {t(e.tag)} to {t(e.environment)}{why}{forced}"
        case RollBack():
            return f"{bot} looks for what to roll {t(e.service)} in {t(e.environment)} back to"
        case RequestMoreInformation():
            return f"{bot} asks: {t(e.message)}"
        case DoneForNow():
            return f"{bot}: {t(e.message)}"
        case GitTagsResult():
            tags = ", ".join(f"{t(tag.name)} ({t(tag.commit[:7])})" for tag in e.tags[:10])
            more = f" and {len(e.tags) - 10} more" if len(e.tags) > 10 else ""
            whose = f" of {t(e.service)}" if e.service else ""
            return f"tags{whose}: {tags or 'none'}{more}"
        case ApprovalRequested():
            change = "".join(f"; {t(line)}" for line in wording.change_lines(e.change)) if e.change else ""
            return (
                f"{who('approval needed')} to deploy {t(e.service)} {t(e.tag)} ({t(e.commit[:7])}) to "
                f"{t(e.environment)}, asked by {t(e.asker) or 'unknown'}; expires "
                f"{e.expires_at:%Y-%m-%d %H:%M} UTC; approval id {s.code(e.approval_id)}{change}"
            )
        case LockEnvironment():
            return f"{bot} locks {t(wording.lock_target(e.environment, e.service))}: {t(e.reason)}"
        case UnlockEnvironment():
            forced = f" (taking it: {t(e.force)})" if e.force else ""
            return f"{bot} unlocks {t(wording.lock_target(e.environment, e.service))}{forced}"
        case LockTaken():
            target = wording.lock_target(e.environment, e.service)
            return f"{t(wording.lock_taken_from_you(target, e.by, e.reason))}"
        case StopDeploys():
            until = f" until {e.until:%Y-%m-%d %H:%M} UTC" if e.until else ""
            return f"{bot} stops deploys to {t(wording.freeze_scope(e.environment))}{until}: {t(e.reason)}"
        case ResumeDeploys():
            return f"{bot} resumes deploys to {t(wording.freeze_scope(e.environment))}"
        case ShowDeploys():
            return f"{bot} looks up what is on {t(e.environment)}"
        case CommandResult():
            return t(e.text)
        case ApprovalReminded():
            return f"{bot} reminds the approvers (reminder {e.count})"
        case ApprovalEscalated():
            return f"{bot} asks {t(', '.join(e.to))} too: nobody decided in time"
        case ApprovalExpired():
            return f"approval expired at {e.expires_at:%Y-%m-%d %H:%M} UTC: not deployed"
        case SenderConfirmationRequested():
            return f"{bot} asks {t(e.address)} to confirm they sent this; nothing is done until then"
        case SenderConfirmed():
            return f"{t(e.evidence.partition(' ')[0]) or 'the sender'} confirmed sending this"
        case SenderConfirmationExpired():
            return f"nobody confirmed sending this by {e.expires_at:%Y-%m-%d %H:%M} UTC: dropped, nothing was done"
        case DeployQueued():
            return f"waits in line (number {e.position}): {t(e.behind)}"
        case DeployStarted():
            return f"deploying… (deploy id {s.code(e.deploy_id)})"
        case DeployResult():
            done = "rolled back" if e.rollback_of else "deployed"
            head = done if e.ok else f"deploy FAILED (exit code {e.exit_code})"
            out = s.output(e.output) if e.output else ""
            link = f" ({t(e.url)})" if e.url else ""
            return f"{head}: {t(e.service)} {t(e.tag)} to {t(e.environment)}{link}{out}"
        case Error():
            return f"error ({e.kind}): {t(e.message)}"
        case DeliveryFailed():
            return f"could not deliver to {t(e.to)} by {t(e.channel)}: {t(e.reason)}"
        case ToolCalled():
            return t(wording.tool_called(e.tool, e.agent.removeprefix("agent:")))
        case Cancelled():
            return f"cancelled by {t(e.user)}" + (f": {t(e.reason)}" if e.reason else "")
    return e.type  # pragma: no cover
