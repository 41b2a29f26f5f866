"""decide(thread) -> the next step: exact commands first, then the LLM.

An exact command is carried out deterministically to the end: its step, then a summary.
"""

from __future__ import annotations

from typing import Iterable

from bot import commands, prompt
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

NO_LLM = (
    "I can only follow exact commands because no LLM is configured. "
    "Try: " + "; ".join(f'"{c}"' for c in commands.EXAMPLES) + ". "
    "To let me understand free text, set LLM_PROVIDER (openai, anthropic or openai-generic), "
    "LLM_MODEL and LLM_API_KEY (or OPENAI_API_KEY / ANTHROPIC_API_KEY), "
    "plus LLM_BASE_URL for an OpenAI-compatible server."
)


async def decide(
    thread: Thread, llm: NextStepModel | None, secrets: Iterable[str] = ()
) -> Event:
    instruction = thread.latest_instruction()
    if instruction:
        index, text, _ = instruction
        step = commands.parse(text)
        if step is not None:
            if not any(e.type == step.type for e in thread.events[index + 1 :]):
                return step
            return DoneForNow(message=summary(thread, index), source="command")
    if llm is None:
        if instruction and _is_rejection(thread.events[instruction[0]]):
            _, feedback, user = instruction
            return DoneForNow(message=f"Not deployed: {user} rejected it ({feedback}).", source="bot")
        return RequestMoreInformation(message=NO_LLM, source="bot")
    try:
        return await llm.next_step(prompt.render(thread, secrets))
    except LlmError as e:
        return Error(kind="llm", message=str(e))


def summary(thread: Thread, since: int) -> str:
    """What came of the command given at `since`, for the human, without an LLM."""
    for e in reversed(thread.events[since + 1 :]):
        match e:
            case GitTagsResult():
                shown = ", ".join(f"{t.name} ({t.commit[:7]})" for t in e.tags[:10])
                return f"Tags, newest first: {shown}" if shown else "This repository has no tags."
            case DeployResult(ok=True):
                return f"Deployed {e.service} {e.tag} to {e.environment}." + (f" {e.url}" if e.url else "")
            case DeployResult():
                code = f" (exit code {e.exit_code})" if e.exit_code is not None else ""
                return f"Deploying {e.service} {e.tag} to {e.environment} failed{code}: {e.output[-300:]}"
            case CommandResult():
                return e.text
            case Error():
                return f"Stopped: {e.message}"
    return "Done."


def _is_rejection(event: Event) -> bool:
    return isinstance(event, HumanResponse) and event.approve is False
