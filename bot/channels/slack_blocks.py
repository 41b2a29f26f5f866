"""Block Kit for deploybot's Slack messages. Pure: events in, JSON-able dicts out."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from bot.events import ApprovalRequested, Event, HumanResponse
from bot.notices import notice
from bot.thread import Thread

APPROVE = "deploybot_approve"
REJECT = "deploybot_reject"
REJECT_VIEW = "deploybot_reject_feedback"
FEEDBACK_BLOCK = "feedback"


def button_value(thread_id: str, approval_id: str) -> str:
    return f"{thread_id}:{approval_id}"


def parse_button_value(value: str) -> tuple[str, str]:
    thread_id, _, approval_id = value.partition(":")
    if not thread_id or not approval_id:
        raise ValueError(f"not a deploybot button value: {value!r}")
    return thread_id, approval_id


def _when(at: datetime) -> str:
    # Slack shows <!date^…> in each reader's time zone; the text after | is the fallback.
    return f"<!date^{int(at.timestamp())}^{{date_short_pretty}} {{time}}|{at:%Y-%m-%d %H:%M} UTC>"


def _who(user: str) -> str:
    return f"<@{user}>" if user[:1] in ("U", "W") and user.isalnum() else user


def _summary(r: ApprovalRequested) -> dict[str, Any]:
    lines = [
        f"*Deploy {r.service} `{r.tag}` to {r.environment}?*",
        f"*Service:* {r.service}   *Tag:* `{r.tag}`   *Commit:* `{r.commit[:7]}`",
        f"*Environment:* {r.environment}",
        f"*Asked by:* {_who(r.requested_by) if r.requested_by else 'unknown'}",
    ]
    if r.reason:
        lines.append(f"*Why:* {r.reason}")
    lines.append(f"*Expires:* {_when(r.expires_at)}")
    return {"type": "section", "text": {"type": "mrkdwn", "text": "\n".join(lines)}}


def approval_request(thread_id: str, r: ApprovalRequested) -> list[dict[str, Any]]:
    value = button_value(thread_id, r.approval_id)
    return [
        _summary(r),
        {
            "type": "actions",
            "block_id": f"approval:{r.approval_id}",
            "elements": [
                {"type": "button", "action_id": APPROVE, "style": "primary", "value": value,
                 "text": {"type": "plain_text", "text": "Approve"}},
                {"type": "button", "action_id": REJECT, "style": "danger", "value": value,
                 "text": {"type": "plain_text", "text": "Reject"}},
            ],
        },
    ]


def decided(r: ApprovalRequested, decision: HumanResponse) -> list[dict[str, Any]]:
    if decision.approve:
        outcome = f":white_check_mark: Approved by {_who(decision.user)} at {_when(decision.at)}"
    else:
        feedback = f": {decision.text}" if decision.text else ""
        outcome = f":x: Rejected by {_who(decision.user)}{feedback}"
    return [_summary(r), {"type": "context", "elements": [{"type": "mrkdwn", "text": outcome}]}]


def fallback_text(r: ApprovalRequested) -> str:
    return f"Approval needed: deploy {r.service} {r.tag} ({r.commit[:7]}) to {r.environment}"


def reject_modal(thread_id: str, approval_id: str, channel: str, thread_ts: str) -> dict[str, Any]:
    return {
        "type": "modal",
        "callback_id": REJECT_VIEW,
        "private_metadata": f"{thread_id}:{approval_id}:{channel}:{thread_ts}",
        "title": {"type": "plain_text", "text": "Reject deploy"},
        "submit": {"type": "plain_text", "text": "Reject"},
        "close": {"type": "plain_text", "text": "Cancel"},
        "blocks": [
            {
                "type": "input",
                "block_id": FEEDBACK_BLOCK,
                "label": {"type": "plain_text", "text": "What should change?"},
                "element": {"type": "plain_text_input", "action_id": FEEDBACK_BLOCK, "multiline": True},
            }
        ],
    }


def parse_modal_metadata(metadata: str) -> tuple[str, str, str, str]:
    thread_id, approval_id, channel, thread_ts = metadata.split(":", 3)
    return thread_id, approval_id, channel, thread_ts


EMOJI = {
    "started": ":rocket:", "deployed": ":white_check_mark:", "failed": ":x:", "message": "",
    "warning": ":warning:", "cancelled": ":no_entry:",
}


def progress_text(thread: Thread, event: Event) -> str | None:
    """What the bot says in the Slack thread when `event` is recorded; None: nothing."""
    n = notice(thread, event)
    if n is None:
        return None
    text = f"{EMOJI[n.kind]} {n.render(_who)}".strip()
    if n.url:
        text += f" <{n.url}|run>"
    if n.detail:
        text += f"\n```{n.detail[-1500:]}```"
    return text
