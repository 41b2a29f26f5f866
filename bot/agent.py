"""decide(thread) -> the next step: exact commands first, then the LLM.

An exact command is carried out deterministically to the end: its step, then a summary.
"""

from __future__ import annotations

from collections.abc import Iterable

from bot import commands, prompt, wording
from bot.events import (
    CommandResult,
    DeployResult,
    DoneForNow,
    Error,
    Event,
    GitTagsResult,
    HumanResponse,
    RequestMoreInformation,
)
from bot.ports import LlmError, NextStepModel
from bot.thread import Thread

NO_LLM = wording.no_llm(commands.EXAMPLES)


async def decide(
    thread: Thread, llm: NextStepModel | None, secrets: Iterable[str] = (), budget: int = prompt.CONTEXT_BUDGET
) -> Event:
    """`budget`: estimated tokens of context the model is shown (CONTEXT_BUDGET)."""
    instruction = thread.latest_instruction()
    if instruction:
        step = commands.parse(instruction.text)
        if step is not None:
            if not any(e.type == step.type for e in thread.events[instruction.position + 1 :]):
                return step
            return DoneForNow(message=summary(thread, instruction.position), source="command")
    if llm is None:
        if instruction and _is_rejection(thread.events[instruction.position]):
            return DoneForNow(message=wording.rejected(instruction.user, instruction.text), source="bot")
        return RequestMoreInformation(message=NO_LLM, source="bot")
    try:
        return await llm.next_step(prompt.render(thread, secrets, budget))
    except LlmError as e:
        return Error(kind="llm", message=str(e))


def summary(thread: Thread, since: int) -> str:
    """What came of the command given at `since`, for the human, without an LLM."""
    for e in reversed(thread.events[since + 1 :]):
        match e:
            case GitTagsResult():
                return wording.newest_tags(e.tags[:10]) if e.tags else wording.no_tags()
            case DeployResult(ok=True):
                return wording.deployed(wording.what_to_deploy(e.service, e.tag, e.environment), e.url)
            case DeployResult():
                what = wording.what_to_deploy(e.service, e.tag, e.environment)
                return wording.deploy_failed_saying(what, e.exit_code, e.output[-300:])
            case CommandResult():
                return e.text
            case Error():
                return wording.stopped(e.message)
    return wording.done()


def _is_rejection(event: Event) -> bool:
    return isinstance(event, HumanResponse) and event.approve is False
