"""NextStepModel: the model's answers, scripted."""

from __future__ import annotations

import inspect
from collections import deque
from collections.abc import Awaitable, Callable

from bot.core.events import Step
from bot.runtime.ports import LlmError
from bot.testing.memory.server import round_trip

Reply = Step | LlmError | Callable[[str], Step | Awaitable[Step]]


class ScriptedModel:
    """NextStepModel answering from a queue: a step, an LlmError (raised), or a function of
    the context, plain or async (to act at the moment the model is asked, e.g. while a run
    holds a thread; it may raise LlmError too).
    Every context it was asked with is kept in `contexts`; an empty queue is an LlmError."""

    def __init__(self, *replies: Reply) -> None:
        self.replies: deque[Reply] = deque(replies)
        self.contexts: list[str] = []

    def script(self, *replies: Reply) -> None:
        self.replies.extend(replies)

    async def next_step(self, context: str) -> Step:
        self.contexts.append(context)
        await round_trip()
        if not self.replies:
            raise LlmError("ScriptedModel: no reply scripted for this call")
        reply = self.replies.popleft()
        if isinstance(reply, LlmError):
            raise reply
        if callable(reply):
            answer = reply(context)
            return await answer if inspect.isawaitable(answer) else answer
        return reply
