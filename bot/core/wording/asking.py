"""Asking: when the bot needs a human, because it cannot go on by itself."""

from __future__ import annotations

from collections.abc import Iterable

__all__ = [
    "finished_after_all", "interrupted_ask", "no_llm", "too_many_errors", "too_many_steps",
]


def no_llm(examples: Iterable[str]) -> str:
    return (
        "I can only follow exact commands because no LLM is configured. "
        "Try: " + "; ".join(f'"{c}"' for c in examples) + " (say one here, or in a new thread). "
        "To let me understand free text, set LLM_PROVIDER (openai, anthropic or openai-generic), "
        "LLM_MODEL and LLM_API_KEY (or OPENAI_API_KEY / ANTHROPIC_API_KEY), "
        "plus LLM_BASE_URL for an OpenAI-compatible server."
    )


def too_many_steps(max_steps: int) -> str:
    return (
        f"I have taken {max_steps} steps without finishing, so I am stopping here. "
        "What would you like me to do?"
    )


def too_many_errors(count: int, last: str) -> str:
    return (
        f"I ran into {count} errors in a row and stopped instead of trying again. "
        f"The last one: {last} How should I proceed?"
    )


def interrupted_ask(what: str, deploy_id: str) -> str:
    return (
        f"I was interrupted while deploying {what} (deploy id {deploy_id}) and do "
        "not know whether it finished. Please check, then tell me whether to try again."
    )


def finished_after_all(deploy_id: str, said: str) -> str:
    """The result of a deploy the bot had called interrupted, recorded after all: `said` is
    what it says of any deploy's end."""
    return f"The deploy I could not follow (deploy id {deploy_id}) finished after all. {said}"
