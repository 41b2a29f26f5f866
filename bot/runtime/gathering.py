"""The facts the deploy rules (bot/core/deploy_rules.py) are asked about, read once: the
freezes in force, the environment before's history (the promotion order), the commit's CI
checks where the environment requires them, and what is on now (for a rollback). The deploy
path gathers them when it asks for an approval and again right before the deploy; the
console's preview gathers the same, so it says what the deploy path would.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Protocol

from bot.core import promotion
from bot.core.deploy_rules import Facts
from bot.core.events import Deploy
from bot.core.people import Identity
from bot.core.policy import Policy
from bot.core.thread import NOBODY, Thread
from bot.runtime.ports import Check, DeployerError, DeployRecord, FreezeStore, History, Versions

HISTORY_LOOKED_AT = 1000  # of an environment's deploys of the service, newest first


class Sources(Protocol):
    """Where the facts come from (bot.runtime.deploying.Deploying has them all)."""

    @property
    def policy(self) -> Policy: ...
    @property
    def deployers(self) -> Mapping[str, Versions]: ...
    @property
    def history(self) -> History: ...
    @property
    def freezes(self) -> FreezeStore | None: ...


async def gather(
    sources: Sources, step: Deploy, commit: str, now: datetime, thread: Thread | None = None,
    asking: Identity | None = None,
) -> Facts:
    """What the rules need to know about deploying `commit` as `step` at `now`. `thread`: the
    thread the step is in (what asked for it, and who acts on that); `asking`: who asks
    where there is no thread yet (a preview)."""
    policy = sources.policy
    instruction = thread.instruction_for(step.id) if thread is not None else None
    if thread is not None:
        asking = thread.authority(instruction)
    held = list(policy.freezes)
    if sources.freezes is not None:
        held += await sources.freezes.current()
    checks, unreadable = await _checks(sources, step, commit)
    return Facts(
        policy=policy, step=step, commit=commit, now=now, freezes=tuple(held),
        previous=await _previous(sources, step), checks=checks, checks_unreadable=unreadable,
        current=await current(sources.history, step) if _rollback(step) else None,
        instruction=instruction, asking=asking or NOBODY,
    )


async def current(history: History, step: Deploy) -> DeployRecord | None:
    """What is deployed now for the step's service in its environment: its newest deploy
    there that succeeded."""
    records = await history.recent(step.environment, HISTORY_LOOKED_AT, service=step.service)
    return next((r for r in records if r.ok), None)


async def _previous(sources: Sources, step: Deploy) -> list[DeployRecord]:
    """The environment before's deploys of the service, where the promotion order asks (a
    rollback is exempt: nothing to read)."""
    previous = sources.policy.promotion.previous(step.service, step.environment)
    if previous is None or promotion.exempt(step):
        return []
    return await sources.history.recent(previous, HISTORY_LOOKED_AT, service=step.service)


async def _checks(sources: Sources, step: Deploy, commit: str) -> tuple[list[Check] | None, str]:
    """The commit's CI checks where the environment requires them (else None), and why they
    could not be read ("" when they were)."""
    if step.environment not in sources.policy.required_checks:
        return None, ""
    try:
        return await sources.deployers[step.service].checks(commit), ""
    except DeployerError as e:
        return None, str(e)


def _rollback(step: Deploy) -> bool:
    """A rollback: what it replaces must still be on (deploy_rules.rollback_still_on)."""
    return bool(getattr(step, "rollback_of", None))
