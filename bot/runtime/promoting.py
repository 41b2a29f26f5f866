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
from bot.runtime.ports import DeployerError, History, Versions


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
    rules = policy.promotion
    previous = rules.previous(service, env)
    if previous is None:
        return CommandResult(step_id=step.id, ok=False, text=wording.no_promotion_order(service, env))
    records = await history.recent(previous, HISTORY_LOOKED_AT, service=service)
    soak, verify = rules.soak(service), rules.needs_verification(service, previous)
    faulty = {r.commit for r in records if r.faulty}
    seen: set[str] = set()
    for record in records:
        if record.commit in faulty or record.commit in seen or not promotion.passed(record, now, soak, verify):
            continue
        seen.add(record.commit)
        if await _still_points(deployers.get(service), record.tag, record.commit):
            return DeployService(
                service=service, tag=record.tag, environment=env, source="command",
                reason=wording.promoted_from(previous, record.tag, record.at, now),
            )
    return CommandResult(step_id=step.id, ok=False, text=wording.nothing_to_promote(service, env, previous))


async def _still_points(versions: Versions | None, tag: str, commit: str) -> bool:
    """Whether `tag` still names `commit` (a moved tag would deploy something else)."""
    if versions is None:
        return False
    try:
        return await versions.resolve(tag) == commit
    except DeployerError:
        return False
