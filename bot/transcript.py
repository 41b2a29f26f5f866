"""Thread -> markdown a human can read (also the CLI's one-line-per-event view)."""

from __future__ import annotations

from bot.events import (
    ApprovalRequested,
    Cancelled,
    CommandResult,
    DeliveryFailed,
    DeployBackend,
    DeployFrontend,
    DeployResult,
    DeployStarted,
    DoneForNow,
    Error,
    Event,
    GitTagsResult,
    HumanResponse,
    ListGitTags,
    LockEnvironment,
    RequestMoreInformation,
    ShowDeploys,
    UnlockEnvironment,
    UserMessage,
)
from bot.prompt import redact
from bot.thread import Thread


def markdown(thread: Thread, secrets: tuple[str, ...] = ()) -> str:
    lines = [f"# Thread {thread.id}", "", f"Status: **{thread.status()}**", ""]
    if thread.origin.forked_from:
        lines[3:3] = [f"Forked from {thread.origin.forked_from} at event {thread.origin.forked_at}", ""]
    for e in thread.events:
        body = line(e).replace("\n", "\n  ")
        lines.append(f"- `{e.at:%H:%M:%S}` {body}")
    return redact("\n".join(lines) + "\n", secrets)


def line(e: Event) -> str:
    match e:
        case UserMessage():
            return f"**{e.user}** ({e.channel}): {e.text}"
        case HumanResponse(approve=True):
            return f"**{e.user}** approved"
        case HumanResponse(approve=False):
            return f"**{e.user}** rejected" + (f": {e.text}" if e.text else "")
        case HumanResponse():
            return f"**{e.user}**: {e.text}"
        case ListGitTags():
            return "**deploybot** lists the git tags"
        case DeployBackend() | DeployFrontend():
            why = f" ({e.reason})" if e.reason else ""
            return f"**deploybot** proposes: deploy {e.service} {e.tag} to {e.environment}{why}"
        case RequestMoreInformation():
            return f"**deploybot** asks: {e.message}"
        case DoneForNow():
            return f"**deploybot**: {e.message}"
        case GitTagsResult():
            tags = ", ".join(f"{t.name} ({t.commit[:7]})" for t in e.tags[:10])
            more = f" and {len(e.tags) - 10} more" if len(e.tags) > 10 else ""
            return f"tags: {tags or 'none'}{more}"
        case ApprovalRequested():
            return (
                f"**approval needed** to deploy {e.service} {e.tag} ({e.commit[:7]}) to "
                f"{e.environment}, asked by {e.requested_by or 'unknown'}; expires "
                f"{e.expires_at:%Y-%m-%d %H:%M} UTC; approval id `{e.approval_id}`"
            )
        case LockEnvironment():
            return f"**deploybot** locks {e.environment}: {e.reason}"
        case UnlockEnvironment():
            return f"**deploybot** unlocks {e.environment}"
        case ShowDeploys():
            return f"**deploybot** looks up what is on {e.environment}"
        case CommandResult():
            return e.text
        case DeployStarted():
            return f"deploying… (deploy id `{e.deploy_id}`)"
        case DeployResult():
            head = "deployed" if e.ok else f"deploy FAILED (exit code {e.exit_code})"
            out = f"\n```\n{e.output}\n```" if e.output else ""
            link = f" ({e.url})" if e.url else ""
            return f"{head}: {e.service} {e.tag} to {e.environment}{link}{out}"
        case Error():
            return f"error ({e.kind}): {e.message}"
        case DeliveryFailed():
            return f"could not deliver to {e.to} by {e.channel}: {e.reason}"
        case Cancelled():
            return f"cancelled by {e.user}" + (f": {e.reason}" if e.reason else "")
    return e.type  # pragma: no cover
