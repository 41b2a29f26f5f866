"""Promotion in order, over the deploy history: which commit `promote SERVICE to ENV` deploys.
The rule itself is bot/core/promotion.py; the deploy path asks it among the deploy rules
(bot/core/deploy_rules.py `promotion_order`)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime

from bot.core import promotion, wording
from bot.core.events import CommandResult, DeployService, Event, Promote
from bot.core.policy import Policy
from bot.runtime.gathering import HISTORY_LOOKED_AT
from bot.runtime.ports import DeployerError, DeployRecord, History, Versions


async def plan(step: Promote, history: History, deployers: Mapping[str, Versions], policy: Policy,
               now: datetime) -> Event:
    """The deploy `promote` asks for: the newest commit of the service that passed the
    environment before, by its tag, if the tag still points to it (else the next one that
    does). Else a CommandResult saying why there is none."""
    service, env = step.service, step.environment
    invalid = policy.catalog.invalid(service, env) or (
        None if env in policy.environments else wording.unknown_environment(env, policy.environments)
    )
    if invalid:
        return CommandResult(step_id=step.id, ok=False, text=invalid)
    previous = policy.promotion.previous(service, env)
    if previous is None:
        return CommandResult(step_id=step.id, ok=False, text=wording.no_promotion_order(service, env))
    record = await pick(service, env, history, deployers, policy, now)
    if record is not None:
        return DeployService(service=service, tag=record.tag, environment=env, source="command",
                             reason=wording.promoted_from(previous, record.tag, record.at, now))
    return CommandResult(step_id=step.id, ok=False, text=wording.nothing_to_promote(service, env, previous))


async def candidates(history: History, policy: Policy, service: str, environment: str,
                     now: datetime) -> list[DeployRecord]:
    """What `promote SERVICE to ENVIRONMENT` may deploy, best first (promotion.candidates,
    over the environment before's deploys of the service); none outside a promotion order.
    `plan` takes the first whose tag still names its commit; the console's board shows it."""
    rules = policy.promotion
    previous = rules.previous(service, environment)
    if previous is None:
        return []
    records = await history.recent(previous, HISTORY_LOOKED_AT, service=service)
    return promotion.candidates(records, now, rules.soak(service), rules.needs_verification(service, previous))


async def pick(service: str, environment: str, history: History, deployers: Mapping[str, Versions],
               policy: Policy, now: datetime) -> DeployRecord | None:
    """The deploy `plan` promotes: the best candidate whose tag still names its commit."""
    for record in await candidates(history, policy, service, environment, now):
        if await _still_points(deployers.get(service), record.tag, record.commit):
            return record
    return None


async def _still_points(versions: Versions | None, tag: str, commit: str) -> bool:
    """Whether `tag` still names `commit` (a moved tag would deploy something else)."""
    if versions is None:
        return False
    try:
        return await versions.resolve(tag) == commit
    except DeployerError:
        return False
