"""GitHub webhooks in: `POST /github/webhook` starts the threads `[[triggers]]` ask for.

In this order, nothing stored before the signature holds:
- `X-Hub-Signature-256` must be there and well formed before the body is read (the body
  itself is capped by bot.adapters.http.front_door), then match HMAC-SHA256 of the raw body under
  GITHUB_WEBHOOK_SECRET, compared in constant time: 401 otherwise;
- `ping` (sent when the webhook is created) is answered;
- what the delivery says happened (bot/core/triggers.py) and the triggers it matches; anything
  else is acknowledged and ignored;
- each delivery is taken in once (`X-GitHub-Delivery`, through the Inbox): a redelivery is
  acknowledged and starts nothing. So is a body already taken (its SHA-256, through the
  Inbox too): the signature covers only the body, so a captured delivery replayed under a
  new X-GitHub-Delivery is a duplicate, not a second thread. The threads of one delivery have ids derived from it, so
  a delivery retried after a failure half-way never starts a thread twice.

A matching event starts a thread as if its sender had asked ("deploy api v1.4.0 to staging
(release v1.4.0 published by octocat)"), said by `github:<login>`, someone deploybot.toml
does not name: a trigger only asks, it never approves. The thread is posted where the
trigger's `notify` says (Origin.notify).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from bot.adapters.channels.github import names
from bot.adapters.channels.github.gate import GitHubGate
from bot.adapters.channels.github.kind import KIND as GITHUB
from bot.adapters.channels.outgoing_webhooks import sign
from bot.core.gate import requested
from bot.core.people import Identity
from bot.core.thread import Origin
from bot.core.triggers import Trigger, happened, starts
from bot.runtime.ports import Inbox, ThreadExists
from bot.runtime.service import ThreadService

log = logging.getLogger(__name__)
DELIVERY_TTL = 30 * 24 * 3600  # GitHub lets people redeliver for days
_SIGNATURE = re.compile(r"sha256=[0-9a-f]{64}")  # each matched whole (fullmatch)
_DELIVERY = re.compile(r"[A-Za-z0-9-]{1,100}")
GATE_EVENT = "deployment_protection_rule"
_EVENT = re.compile(r"[a-z_]{1,50}")


def signature(secret: str, body: bytes) -> str:
    """What GitHub sends in X-Hub-Signature-256 for `body`: the same HMAC-SHA256 header our
    own outgoing webhooks are signed with."""
    return sign(secret, body)


def thread_id_for(delivery: str, index: int) -> str:
    """The one thread id the `index`-th trigger a delivery matched may start."""
    return hashlib.sha256(f"github:{delivery}:{index}".encode()).hexdigest()[:16]


@dataclass
class GitHubWebhook:
    secret: str
    triggers: tuple[Trigger, ...]
    service: ThreadService
    inbox: Inbox
    kick: Callable[[str], Awaitable[None]]
    gate: GitHubGate | None = None  # deploybot as a GitHub App (docs/github-gate.md)

    async def endpoint(self, request: Request) -> Response:
        offered = request.headers.get("x-hub-signature-256", "")
        if not _SIGNATURE.fullmatch(offered):
            log.warning("github: refused a delivery without a well-formed X-Hub-Signature-256")
            return JSONResponse({"detail": "missing or malformed X-Hub-Signature-256"}, status_code=401)
        body = await request.body()
        if not hmac.compare_digest(signature(self.secret, body).encode(), offered.encode()):
            log.warning("github: refused a delivery with a wrong signature (%d bytes)", len(body))
            return JSONResponse({"detail": "signature does not match"}, status_code=401)
        event = request.headers.get("x-github-event", "")
        delivery = request.headers.get("x-github-delivery", "")
        if not _EVENT.fullmatch(event) or not _DELIVERY.fullmatch(delivery):
            return JSONResponse({"detail": "missing or malformed X-GitHub-Event or X-GitHub-Delivery"}, status_code=400)
        if event == "ping":
            return JSONResponse({"status": "pong"})
        payload = _payload(body, request.headers.get("content-type", ""))
        if payload is None:
            return JSONResponse({"detail": "the body is not a JSON object"}, status_code=400)
        if event == GATE_EVENT and self.gate is not None:
            return await self._gate(delivery, body, payload, self.gate)
        what = happened(event, payload)
        matched = starts(what, self.triggers) if what is not None else []
        if not matched:
            log.info("github: delivery %s (%s) matches no trigger; ignored", delivery, event)
            return JSONResponse({"status": "ignored"})
        if not await self._fresh(delivery, body):
            return JSONResponse({"status": "duplicate"})
        started = []
        try:
            for i, start in enumerate(matched):
                thread_id = thread_id_for(delivery, i)
                who = Identity(None, GITHUB, start.sender)
                try:
                    await self.service.launch(start.text, who, GITHUB, Origin(channel=GITHUB, notify=start.notify),
                                              thread_id, evidence=f"delivery {delivery}")
                except ThreadExists:
                    pass  # started by an earlier try of this delivery
                await self.kick(thread_id)
                started.append(thread_id)
        except Exception:  # GitHub's redelivery (same id, same body) counts
            await self.inbox.forget(names.GITHUB_BODIES, _body_hash(body))
            await self.inbox.forget(names.GITHUB_DELIVERIES, delivery)
            raise
        log.info("github: delivery %s (%s) started %s", delivery, event, ", ".join(started))
        return JSONResponse({"status": "started", "threads": started})

    async def _gate(self, delivery: str, body: bytes, payload: dict[str, Any], gate: GitHubGate) -> Response:
        """A deployment_protection_rule delivery: GitHub asks whether a job may deploy."""
        request = requested(payload)
        if isinstance(request, str):
            if payload.get("action") != "requested":
                return JSONResponse({"status": "ignored"})
            log.warning("github: refused deployment_protection_rule delivery %s: %s", delivery, request)
            return JSONResponse({"detail": request}, status_code=400)
        if not await self._fresh(delivery, body):
            return JSONResponse({"status": "duplicate"})
        try:
            return JSONResponse(await gate.requested(delivery, request))
        except Exception:  # GitHub's redelivery (same id, same body) counts
            await self.inbox.forget(names.GITHUB_BODIES, _body_hash(body))
            await self.inbox.forget(names.GITHUB_DELIVERIES, delivery)
            raise

    async def _fresh(self, delivery: str, body: bytes) -> bool:
        """Whether neither this delivery id nor this body was taken before (and now both are)."""
        fresh, _, _ = await self.inbox.receive(names.GITHUB_DELIVERIES, delivery, DELIVERY_TTL, None)
        if not fresh:
            log.info("github: delivery %s came again; not started twice", delivery)
            return False
        try:
            fresh, _, _ = await self.inbox.receive(names.GITHUB_BODIES, _body_hash(body), DELIVERY_TTL, None)
        except Exception:  # the id is not taken either, so GitHub's redelivery counts
            await self.inbox.forget(names.GITHUB_DELIVERIES, delivery)
            raise
        if not fresh:
            log.warning("github: delivery %s repeats the body of an earlier one (a replay?); not started twice",
                        delivery)
        return fresh


def _body_hash(body: bytes) -> str:
    return hashlib.sha256(body).hexdigest()


def _payload(body: bytes, content_type: str) -> dict[str, Any] | None:
    """The delivery's JSON: the body itself, or its `payload` field when the webhook was set
    to application/x-www-form-urlencoded."""
    try:
        if "x-www-form-urlencoded" in content_type:
            data = json.loads(parse_qs(body.decode())["payload"][0])
        else:
            data = json.loads(body)
    except (ValueError, KeyError, IndexError, RecursionError):
        return None
    return data if isinstance(data, dict) else None
