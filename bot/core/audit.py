"""A deploy's audit trail: what its history record keeps of its thread, which goes after
THREAD_RETENTION while the record stays. Pure."""

from __future__ import annotations

from typing import Any

from bot.core import people
from bot.core.events import DeployResult, HumanResponse, UserMessage
from bot.core.prompt import redact
from bot.core.thread import Thread

OUTPUT_TAIL_LINES = 20  # of a deploy's output, kept in its history record


def audit_trail(thread: Thread, result: DeployResult, secrets: tuple[str, ...] = ()) -> dict[str, Any]:
    """What the deploy's history record keeps of its thread, which goes after
    THREAD_RETENTION while the record stays: the request (what was asked, by whom, how, with
    what evidence), the proposal, the approval and its decision, the run and its output's tail.
    DeployRecord's audit fields, by name."""
    position, step = next(((i, e) for i, e in enumerate(thread.events) if e.id == result.step_id), (0, None))
    request = next(
        (e for e in reversed(thread.events[:position])
         if isinstance(e, UserMessage) or (isinstance(e, HumanResponse) and e.approve is not True and e.text)),
        None,
    )
    trail: dict[str, Any] = {}
    approval = thread.approval_for(result.step_id)
    if isinstance(request, UserMessage | HumanResponse):
        # An agent's request is named with whose agent it is, as its approval request says.
        asker = approval.asker if approval is not None and request.via == people.AGENT else ""
        trail.update(
            requested_by=asker or request.person or request.user, request=request.text, requested_via=request.via,
            requested_channel=request.channel, request_evidence=request.evidence, requested_at=request.at,
        )
    if step is not None:
        trail.update(proposed_by=getattr(step, "source", ""), proposal_reason=getattr(step, "reason", None) or "",
                     proposed_at=step.at)
    if approval is not None:
        trail.update(approval_id=approval.approval_id, approval_asked_at=approval.at,
                     approval_expires_at=approval.expires_at)
        made = thread.decision_for(approval.approval_id)
        if made is not None:
            trail.update(decided_by=made.person or made.user, decided_via=made.via, decided_channel=made.channel,
                         decision_evidence=made.evidence, decided_at=made.at)
    started = thread.started(result.step_id)
    tail = "\n".join(result.output.splitlines()[-OUTPUT_TAIL_LINES:])
    trail.update(started_at=started.at if started else None, exit_code=result.exit_code,
                 output_tail=redact(tail, secrets))
    return trail
