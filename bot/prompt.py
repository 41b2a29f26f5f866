"""Thread -> the context text the model reads (factor 3: own your context window).

Compact tagged blocks, one per event. Free text is escaped so a message cannot close its
own block and forge another, and anything that looks like a secret is redacted.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterable

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
from bot.thread import Thread

MAX_TAGS = 20
REDACTED = "[redacted]"

_SECRET_PATTERNS = [
    (re.compile(r"(?i)\b(authorization\s*[:=]\s*)(?:\w+\s+)?\S+"), r"\1" + REDACTED),
    (re.compile(r"(?i)\b(bearer|basic)\s+[A-Za-z0-9._~+/=-]{12,}"), r"\1 " + REDACTED),
    (
        re.compile(
            r"(?i)\b((?:api[_-]?key|access[_-]?key|secret|token|passw(?:or)?d|pwd)[\w-]*"
            r"[\"']?\s*[:=]\s*[\"']?)[^\s\"',;]+"
        ),
        r"\1" + REDACTED,
    ),
    (re.compile(r"\b(xox[abposr]|xapp)-[A-Za-z0-9-]{8,}"), REDACTED),
    (re.compile(r"\b(gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})"), REDACTED),
    (re.compile(r"\bsk-(?:ant-)?[A-Za-z0-9_-]{16,}"), REDACTED),
    (re.compile(r"\bAKIA[0-9A-Z]{16}\b"), REDACTED),
    (re.compile(r"(://[^/\s:@]+:)[^/\s@]+@"), r"\1" + REDACTED + "@"),
    (
        re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----.*?-----END [A-Z ]*PRIVATE KEY-----", re.S),
        REDACTED,
    ),
]


def redact(text: str, secrets: Iterable[str] = ()) -> str:
    for secret in secrets:
        if secret and len(secret) >= 6:
            text = text.replace(secret, REDACTED)
    for pattern, replacement in _SECRET_PATTERNS:
        text = pattern.sub(replacement, text)
    return text


def render(thread: Thread, secrets: Iterable[str] = ()) -> str:
    secrets = tuple(secrets)
    return "\n".join(redact(_block(e), secrets) for e in thread.events)


def _attrs(**values: object) -> str:
    return "".join(
        f' {k}="{html.escape(str(v))}"' for k, v in values.items() if v not in (None, "")
    )


def _tag(name: str, body: str = "", **attrs: object) -> str:
    if not body:
        return f"<{name}{_attrs(**attrs)}/>"
    return f"<{name}{_attrs(**attrs)}>\n{html.escape(body.strip(), quote=False)}\n</{name}>"


def _block(e: Event) -> str:
    match e:
        case UserMessage():
            return _tag("user_message", e.text, user=e.user, channel=e.channel)
        case HumanResponse():
            decision = {True: "approved", False: "rejected", None: None}[e.approve]
            return _tag("human_response", e.text, user=e.user, decision=decision)
        case ListGitTags():
            return _tag("list_git_tags")
        case DeployBackend() | DeployFrontend():
            return _tag(e.type, tag=e.tag, environment=e.environment, reason=e.reason)
        case RequestMoreInformation() | DoneForNow():
            return _tag(e.type, e.message)
        case GitTagsResult():
            lines = [f"{t.name} {t.commit[:7]} {t.date[:10]}".strip() for t in e.tags[:MAX_TAGS]]
            if len(e.tags) > MAX_TAGS:
                lines.append(f"... and {len(e.tags) - MAX_TAGS} older tags")
            return _tag("list_git_tags_result", "\n".join(lines) or "(no tags)")
        case ApprovalRequested():
            return _tag(
                "approval_requested",
                service=e.service,
                tag=e.tag,
                commit=e.commit[:7],
                environment=e.environment,
                expires=f"{e.expires_at:%Y-%m-%d %H:%M}Z",
            )
        case LockEnvironment():
            return _tag(e.type, environment=e.environment, reason=e.reason)
        case UnlockEnvironment() | ShowDeploys():
            return _tag(e.type, environment=e.environment)
        case CommandResult():
            return _tag("command_result", e.text, ok=str(e.ok).lower())
        case DeployStarted():
            return _tag("deploy_started")
        case DeployResult():
            return _tag("deploy_result", e.output, ok=str(e.ok).lower(), exit_code=e.exit_code, url=e.url)
        case Error():
            return _tag("error", e.message, kind=e.kind)
        case DeliveryFailed():
            return _tag("delivery_failed", e.reason, channel=e.channel, to=e.to)
        case Cancelled():
            return _tag("cancelled", e.reason, user=e.user)
    raise TypeError(f"no rendering for {type(e).__name__}")  # pragma: no cover
