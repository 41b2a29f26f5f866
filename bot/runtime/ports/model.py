"""The model that proposes the next step."""

from __future__ import annotations

from typing import Protocol

from bot.core.events import Step


class LlmError(Exception):
    """The model could not give a usable step: unreachable, refused, or unparseable."""


class NextStepModel(Protocol):
    async def next_step(self, context: str) -> Step: ...
