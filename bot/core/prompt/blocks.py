"""One tagged block per event type (`tokens`: what its free text may take), and the tag itself:
free text escaped so a message cannot close its own block and forge another."""

from __future__ import annotations

import html
from collections.abc import Callable
from datetime import datetime
from typing import Any, Protocol

from bot.core import wording
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
)

MAX_TAGS = 20


class Tags(Protocol):
    """What a block is rendered with: the context's `tag`, which fits the body and every
    attribute to their share of the budget, redacted, and escapes them (context.py)."""

    def tag(self, name: str, body: str = "", tokens: int = 0, **attrs: object) -> str: ...


def _minute(at: datetime) -> str:
    return f"{at:%Y-%m-%d %H:%M}Z"


def _user_message(c: Tags, e: UserMessage, tokens: int) -> str:
    return c.tag("user_message", e.text, tokens, user=e.user, channel=e.channel)


def _human_response(c: Tags, e: HumanResponse, tokens: int) -> str:
    decision = {True: "approved", False: "rejected", None: None}[e.approve]
    return c.tag("human_response", e.text, tokens, user=e.user, decision=decision)


def _cancelled(c: Tags, e: Cancelled, tokens: int) -> str:
    return c.tag("cancelled", e.reason, tokens, user=e.user)


def _list_git_tags(c: Tags, e: ListGitTags, tokens: int) -> str:
    return c.tag("list_git_tags", service=e.service)


def _deploy_service(c: Tags, e: DeployService, tokens: int) -> str:
    return c.tag(
        "deploy", service=e.service, tag=e.tag, environment=e.environment, reason=e.reason,
        rollback_of=e.rollback_of, force=e.force,
    )


def _deploy_one(c: Tags, e: DeployBackend | DeployFrontend, tokens: int) -> str:
    return c.tag(e.type, tag=e.tag, environment=e.environment, reason=e.reason)


def _roll_back(c: Tags, e: RollBack, tokens: int) -> str:
    return c.tag(e.type, service=e.service, environment=e.environment)


def _promote(c: Tags, e: Promote, tokens: int) -> str:
    return c.tag(e.type, service=e.service, environment=e.environment)


def _message(c: Tags, e: RequestMoreInformation | DoneForNow, tokens: int) -> str:
    return c.tag(e.type, e.message, tokens)


def _lock_environment(c: Tags, e: LockEnvironment, tokens: int) -> str:
    return c.tag(e.type, environment=e.environment, service=e.service or None, reason=e.reason)


def _unlock_environment(c: Tags, e: UnlockEnvironment, tokens: int) -> str:
    return c.tag(e.type, environment=e.environment, service=e.service or None, force=e.force)


def _lock_taken(c: Tags, e: LockTaken, tokens: int) -> str:
    return c.tag(e.type, e.reason, tokens, environment=e.environment, service=e.service or None, by=e.by)


def _environment_only(c: Tags, e: ShowDeploys | ResumeDeploys, tokens: int) -> str:
    return c.tag(e.type, environment=e.environment)


def _stop_deploys(c: Tags, e: StopDeploys, tokens: int) -> str:
    until = _minute(e.until) if e.until else None
    return c.tag(e.type, e.reason, tokens, environment=e.environment, until=until)


def _git_tags_result(c: Tags, e: GitTagsResult, tokens: int) -> str:
    lines = [f"{t.name} {t.commit[:7]} {t.date[:10]}".strip() for t in e.tags[:MAX_TAGS]]
    if len(e.tags) > MAX_TAGS:
        lines.append(f"... and {len(e.tags) - MAX_TAGS} older tags")
    return c.tag("list_git_tags_result", "\n".join(lines) or "(no tags)", tokens, service=e.service or None)


def _approval_requested(c: Tags, e: ApprovalRequested, tokens: int) -> str:
    return c.tag(
        "approval_requested",
        service=e.service,
        tag=e.tag,
        commit=e.commit[:7],
        environment=e.environment,
        expires=_minute(e.expires_at),
        change=" ".join(wording.change_lines(e.change)[:1]) if e.change else None,
    )


def _command_result(c: Tags, e: CommandResult, tokens: int) -> str:
    return c.tag("command_result", e.text, tokens, ok=str(e.ok).lower())


def _approval_reminded(c: Tags, e: ApprovalReminded, tokens: int) -> str:
    return c.tag(e.type, count=e.count)


def _approval_escalated(c: Tags, e: ApprovalEscalated, tokens: int) -> str:
    return c.tag(e.type, to=", ".join(e.to))


def _approval_rules_changed(c: Tags, e: ApprovalRulesChanged, tokens: int) -> str:
    return c.tag(e.type, required=e.required, approvers=", ".join(e.approvers))


def _approval_expired(c: Tags, e: ApprovalExpired, tokens: int) -> str:
    # Not a rejection: nobody decided in time, and nothing was deployed.
    return c.tag(e.type, "nobody decided in time; not deployed", expired=_minute(e.expires_at))


def _deploy_queued(c: Tags, e: DeployQueued, tokens: int) -> str:
    return c.tag(e.type, e.behind, tokens, position=e.position)


def _deploy_started(c: Tags, e: DeployStarted, tokens: int) -> str:
    return c.tag("deploy_started")


def _deploy_result(c: Tags, e: DeployResult, tokens: int) -> str:
    return c.tag("deploy_result", e.output, tokens, ok=str(e.ok).lower(), exit_code=e.exit_code, url=e.url)


def _error(c: Tags, e: Error, tokens: int) -> str:
    return c.tag("error", e.message, tokens, kind=e.kind)


def _github_answered(c: Tags, e: GitHubAnswered, tokens: int) -> str:
    return c.tag("github_answered", e.comment, tokens, state=e.state)


def _delivery_failed(c: Tags, e: DeliveryFailed, tokens: int) -> str:
    return c.tag("delivery_failed", e.reason, tokens, channel=e.channel, to=e.to)


def _tool_called(c: Tags, e: ToolCalled, tokens: int) -> str:
    return c.tag("tool_called", tool=e.tool, agent=e.agent)


def _sender_confirmation_requested(c: Tags, e: SenderConfirmationRequested, tokens: int) -> str:
    # The request itself is its user_message; the model only learns that it waited for its sender.
    return c.tag(e.type, claimed=e.claimed, expires=_minute(e.expires_at))


def _sender_confirmed(c: Tags, e: SenderConfirmed, tokens: int) -> str:
    return c.tag(e.type)


def _sender_confirmation_expired(c: Tags, e: SenderConfirmationExpired, tokens: int) -> str:
    return c.tag(e.type, "nobody confirmed the sender in time; nothing was done", expired=_minute(e.expires_at))


def _verification_started(c: Tags, e: VerificationStarted, tokens: int) -> str:
    return c.tag(e.type, deploy_id=e.deploy_id, ends=_minute(e.ends_at), checks=str(len(e.checks)))


def _check_observed(c: Tags, e: CheckObserved, tokens: int) -> str:
    state = "holds" if e.ok else ("no answer" if e.ok is None else "fails")
    return c.tag(e.type, e.value, tokens, check=e.check, state=state)


def _verification_ended(c: Tags, e: VerificationEnded, tokens: int) -> str:
    return c.tag(e.type, e.reason, tokens, outcome=e.outcome, check=e.check or None,
                 value=e.value or None, by=e.by or None)


def _verification_refused(c: Tags, e: VerificationRefused, tokens: int) -> str:
    return c.tag(e.type, e.text, tokens)


# Every event type the model reads; the context (context.py) looks an event up by its class.
BLOCKS: dict[type, Callable[[Tags, Any, int], str]] = {
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


def _attrs(**values: object) -> str:
    return "".join(
        f' {k}="{html.escape(str(v))}"' for k, v in values.items() if v not in (None, "")
    )


def tag(name: str, body: str = "", **attrs: object) -> str:
    if not body:
        return f"<{name}{_attrs(**attrs)}/>"
    return f"<{name}{_attrs(**attrs)}>\n{html.escape(body.strip(), quote=False)}\n</{name}>"
