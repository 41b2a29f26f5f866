"""decide(thread) -> the next step: exact commands first, then the LLM.

An exact command is carried out deterministically to the end: its step, then a summary.
"""

from __future__ import annotations

from collections.abc import Iterable

from bot.core import commands, deploy_rules, prompt, transcript, wording
from bot.core.catalog import Catalog
from bot.core.events import (
    DEPLOY_STEPS,
    ApprovalExpired,
    CommandResult,
    Deploy,
    DeployResult,
    DeployService,
    DoneForNow,
    Error,
    Event,
    GitTagsResult,
    HumanResponse,
)
from bot.core.thread import Instruction, Thread
from bot.runtime.ports import LlmError, NextStepModel


async def decide(
    thread: Thread,
    llm: NextStepModel | None,
    secrets: Iterable[str] = (),
    budget: int = prompt.CONTEXT_BUDGET,
    catalog: Catalog | None = None,
) -> Event:
    """`budget`: estimated tokens of context the model is shown (CONTEXT_BUDGET)."""
    catalog = catalog or Catalog()
    instruction = thread.latest_instruction()
    if instruction:
        step = _command(thread, instruction, catalog)
        if step is not None:
            if not any(_same_kind(e, step) for e in thread.events[instruction.position + 1 :]):
                return step
            return DoneForNow(message=summary(thread, instruction.position), source="command")
    if llm is None:
        said = thread.events[instruction.position] if instruction else None
        if isinstance(said, HumanResponse) and said.approve is False:
            return DoneForNow(message=wording.rejected(said.user, said.text), source="bot")
        # Nothing here can understand free text, so the thread ends with the answer (and how to
        # go on) instead of waiting for a reply nobody could act on either.
        return DoneForNow(message=wording.no_llm(commands.examples(catalog)), source="bot")
    try:
        step = await llm.next_step(prompt.render(thread, secrets, budget))
    except LlmError as e:
        return Error(kind="llm", message=str(e))
    if isinstance(step, DeployService) and (spec := catalog.get(step.service)):
        return step.model_copy(update={"tag": spec.full_tag(step.tag)})
    return step


def _command(thread: Thread, instruction: Instruction, catalog: Catalog) -> Event | None:
    """The step an exact command asks for. "deploy anyway: REASON" repeats the deploy that
    CI checks or a freeze stopped, with the reason and who gave it (Deploying checks they may)."""
    reason = commands.deploy_anyway(instruction.text)
    if reason is None:
        return commands.parse(instruction.text, catalog)
    blocked = _blocked_deploy(thread, instruction.position)
    if blocked is None:
        return DoneForNow(message=wording.nothing_to_force(), source="command")
    return DeployService(
        service=blocked.service, tag=blocked.tag, environment=blocked.environment, reason=blocked.reason,
        rollback_of=getattr(blocked, "rollback_of", None), rollback_from=getattr(blocked, "rollback_from", ""),
        force=reason, forced_by=instruction.principal, source="command",
    )


def _same_kind(event: Event, step: Event) -> bool:
    """Whether `event` is the step a command asked for, already taken: any deploy step for a
    deploy (a thread older than the catalog holds `deploy_backend`, which the command now
    parses to `deploy`: it must not be proposed, and run, a second time)."""
    return event.type == step.type or (isinstance(event, DEPLOY_STEPS) and isinstance(step, DEPLOY_STEPS))


def _blocked_deploy(thread: Thread, before: int) -> Deploy | None:
    """The newest deploy step before `before` that CI checks, a freeze or the promotion
    order stopped. A "deploy anyway" that was refused (not an approver) is passed over: the
    deploy it tried to force is still blocked, for an approver to force."""
    for e in reversed(thread.events[:before]):
        if isinstance(e, DEPLOY_STEPS):
            outcome = thread.outcome(e)
            if getattr(e, "force", None) and isinstance(outcome, Error) and outcome.kind == "validation":
                continue
            return e if isinstance(outcome, Error) and outcome.kind in deploy_rules.ANYWAY_KINDS else None
    return None


def summary(thread: Thread, since: int) -> str:
    """What came of the command given at `since`, for the human, without an LLM."""
    for e in reversed(thread.events[since + 1 :]):
        match e:
            case GitTagsResult():
                return wording.newest_tags(e.tags[:10]) if e.tags else wording.no_tags()
            case DeployResult():
                return transcript.closing_word(e)
            case CommandResult():
                return e.text
            case ApprovalExpired():
                request = thread.approval(e.approval_id)
                what = wording.what_to_deploy(request.service, request.tag, request.environment) if request else "it"
                return wording.approval_expired_notice(what, e.expires_at)
            case Error():
                return wording.stopped(e.message)
    return wording.done()

