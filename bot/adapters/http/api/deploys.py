"""/deploys: an environment's deploy history with its locks, POST /deploys/rollback and
POST /deploys/promote."""

from __future__ import annotations

from dataclasses import asdict
from datetime import datetime
from typing import Any

from fastapi import APIRouter, Depends, Query, Request
from pydantic import BaseModel, Field

from bot.adapters.http.api import json_text
from bot.adapters.http.api.who import MAX_LIMIT, acting, authorized, the_parts
from bot.adapters.http.shared import Parts
from bot.core import commands, wording
from bot.runtime.ports import DeployRecord, Lock
from bot.runtime.service import Invalid


class RollbackBody(BaseModel):
    service: str = Field(min_length=1, max_length=100)
    environment: str = Field(min_length=1, max_length=100)
    user: str | None = Field(None, min_length=1)


router = APIRouter(dependencies=[Depends(authorized), Depends(json_text.checked)])


@router.get("/deploys")
async def deploys(
    environment: str, service: str | None = None, limit: int = Query(20, ge=1, le=MAX_LIMIT),
    cursor: str | None = Query(None, max_length=500), a: Parts = Depends(the_parts),
) -> dict[str, Any]:
    """Newest first, a page at a time (`next_cursor`, as GET /threads)."""
    if environment not in a.policy.environments:
        raise Invalid(f"unknown environment {environment!r}")
    if service is not None and service not in a.policy.catalog.services:
        raise Invalid(wording.unknown_service(service, a.policy.catalog.names))
    try:
        records, next_cursor = await a.history.page(environment, limit, cursor, service=service)
    except ValueError:
        raise Invalid(wording.bad_cursor()) from None
    held = await a.locks.held(environment, [service] if service else a.policy.catalog.names)
    holder = next((lock for lock in held if not lock.service), None)
    answer = {
        "environment": environment,
        "lock": lock_json(holder) if holder else None,  # on the whole environment
        "locks": [lock_json(lock) for lock in held],  # that one, then each service's
        "deploys": [record_json(r) for r in records],
    }
    if next_cursor:
        answer["next_cursor"] = next_cursor
    return answer


@router.post("/deploys/rollback", status_code=201)
async def rollback(request: Request, body: RollbackBody, a: Parts = Depends(the_parts)) -> dict[str, Any]:
    """Starts a thread that rolls the service back, as if the person had asked in chat:
    the same rules (approval, locks, the re-check) apply; the thread says what it found."""
    if body.environment not in a.policy.environments:
        raise Invalid(wording.unknown_environment(body.environment, a.policy.environments))
    service = a.policy.catalog.find(body.service) or body.service  # as chat: `API` is api
    invalid = a.policy.catalog.invalid(service, body.environment)
    if invalid:
        raise Invalid(invalid)
    text = commands.rollback_text(service, body.environment)
    who = acting(request, a, body.user, text=text)
    thread = await a.service.launch(text, who, channel="api", handoff=a.queue)
    return {"id": thread.id}


@router.post("/deploys/promote", status_code=201)
async def promote(request: Request, body: RollbackBody, a: Parts = Depends(the_parts)) -> dict[str, Any]:
    """Starts a thread that deploys to the environment the newest commit of the service that
    passed the one before it, as `promote SERVICE to ENV` in chat: the same rules (approval,
    locks, the re-check) apply; the thread says what it found, or that nothing has passed."""
    if body.environment not in a.policy.environments:
        raise Invalid(wording.unknown_environment(body.environment, a.policy.environments))
    service = a.policy.catalog.find(body.service) or body.service
    invalid = a.policy.catalog.invalid(service, body.environment)
    if invalid:
        raise Invalid(invalid)
    if a.policy.promotion.previous(service, body.environment) is None:
        raise Invalid(wording.no_promotion_order(service, body.environment))
    text = commands.promote_text(service, body.environment)
    who = acting(request, a, body.user, text=text)
    thread = await a.service.launch(text, who, channel="api", handoff=a.queue)
    return {"id": thread.id}


def lock_json(lock: Lock) -> dict[str, Any]:
    return {**asdict(lock), "since": lock.since.isoformat()}


def record_json(record: DeployRecord) -> dict[str, Any]:
    return {k: v.isoformat() if isinstance(v, datetime) else v for k, v in asdict(record).items()}
