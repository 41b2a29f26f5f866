"""Outgoing webhooks: a signed JSON POST to every NOTIFY_WEBHOOK_URL when an approval is
requested, decided or expires, and when a deploy starts and finishes.

One Notifier among the others (bot/wiring/app.py's fan-out). Each POST runs in the background (a
slow receiver never holds up a run), signed with HMAC-SHA256 of the raw body under
NOTIFY_WEBHOOK_SECRET (`X-Deploybot-Signature-256: sha256=<hex>`, GitHub's scheme), with
`X-Deploybot-Timestamp` (Unix seconds of this attempt), `X-Deploybot-Event` and
`X-Deploybot-Delivery` (the same on every retry of one payload: receivers dedupe on it).
Connection failures, timeouts, 408, 429 and 5xx are retried with backoff (bot/adapters/outbound.py:
a 429's Retry-After is believed, up to a minute); any other answer,
or retries running out, is recorded on the thread as a delivery_failed event and logged.
Every text in a payload is redacted as the transcript is (bot.core.prompt.redact): a secret a
person pasted or the model wrote never leaves; and it has no format characters (U+202E,
zero-width ones: bot.core.characters), since a receiver often shows it to people. The
payload is documented in docs/channels.md (Outgoing webhooks).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import time
from collections.abc import Sequence
from datetime import datetime
from typing import Any

import httpx

from bot.adapters import outbound
from bot.adapters.channels.deliveries import Deliveries, Record
from bot.core import wording
from bot.core.characters import visible
from bot.core.events import (
    ApprovalExpired,
    ApprovalRequested,
    DeployResult,
    DeployStarted,
    Event,
    HumanResponse,
)
from bot.core.prompt import redact
from bot.core.thread import Thread

log = logging.getLogger(__name__)

VERSION = 1
SIGNATURE_HEADER = "X-Deploybot-Signature-256"
TIMESTAMP_HEADER = "X-Deploybot-Timestamp"
EVENT_HEADER = "X-Deploybot-Event"
DELIVERY_HEADER = "X-Deploybot-Delivery"
BACKOFF = (1.0, 2.0, 4.0, 8.0, 16.0)  # five retries, about half a minute in all
TIMEOUT = 10.0  # seconds per attempt


def sign(secret: str, body: bytes) -> str:
    """The signature header's value for `body`: `sha256=` and the hex HMAC-SHA256."""
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def _iso(at: datetime) -> str:
    return at.isoformat().replace("+00:00", "Z")


def payload(thread: Thread, event: Event) -> dict[str, Any] | None:
    """The JSON for `event` (docs/channels.md#outgoing-webhooks); None: not one webhooks hear about."""
    base: dict[str, Any] = {
        "version": VERSION, "id": event.id, "at": _iso(event.at),
        "thread": {"id": thread.id, "channel": thread.origin.channel},
    }
    match event:
        case ApprovalRequested():
            return {**base, "event": "approval.requested", "approval": _approval(event), "deploy": _deploy(event)}
        case HumanResponse(approval_id=str(approval_id), approve=bool(approve)):
            request = thread.approval(approval_id)
            if request is None:
                return None
            lapsed = not approve and event.at > request.expires_at
            if lapsed:  # a reply closed an approval nobody decided: the same payload the watcher sends
                return expired(thread, request)
            return {
                **base, "event": "approval.decided",
                "approval": {
                    **_approval(request), "decision": "approved" if approve else "rejected",
                    "decided_by": event.person or event.user, "text": event.text,
                },
                "deploy": _deploy(request),
            }
        case DeployStarted():
            request = next((r for r in thread.of(ApprovalRequested) if r.step_id == event.step_id), None)
            step = next((e for e in thread.events if e.id == event.step_id), None)
            deploy = _deploy(request) if request else {
                "service": getattr(step, "service", None), "tag": getattr(step, "tag", None),
                "environment": getattr(step, "environment", None), "commit": event.commit,
            }
            return {**base, "event": "deploy.started", "deploy": {**deploy, "deploy_id": event.deploy_id}}
        case ApprovalExpired():
            request = thread.approval(event.approval_id)
            return expired(thread, request) if request else None
        case DeployResult():
            return {
                **base, "event": "deploy.finished",
                "deploy": {
                    "service": event.service, "tag": event.tag, "environment": event.environment,
                    "commit": event.commit, "deploy_id": event.deploy_id,
                },
                "result": {
                    "ok": event.ok, "exit_code": event.exit_code, "approved_by": event.approved_by,
                    "url": event.url or None,
                },
            }
    return None


def expired(thread: Thread, request: ApprovalRequested) -> dict[str, Any]:
    """The payload for an approval that lapsed with nobody deciding (its approval_expired
    event; the id is the approval's, so receivers can dedupe)."""
    return {
        "version": VERSION, "id": f"{request.approval_id}-expired", "at": _iso(request.expires_at),
        "thread": {"id": thread.id, "channel": thread.origin.channel}, "event": "approval.expired",
        "approval": {**_approval(request), "decision": "expired", "decided_by": None, "text": ""},
        "deploy": _deploy(request),
    }


def cleaned(value: Any, secrets: Sequence[str]) -> Any:
    """`value` (a payload) with every string in it redacted and without format characters."""
    if isinstance(value, str):
        return visible(redact(value, secrets))
    if isinstance(value, dict):
        return {key: cleaned(item, secrets) for key, item in value.items()}
    if isinstance(value, list):
        return [cleaned(item, secrets) for item in value]
    return value


def _approval(r: ApprovalRequested) -> dict[str, Any]:
    return {"id": r.approval_id, "requested_by": r.requested_by, "reason": r.reason, "expires_at": _iso(r.expires_at)}


def _deploy(r: ApprovalRequested) -> dict[str, Any]:
    return {"service": r.service, "tag": r.tag, "environment": r.environment, "commit": r.commit}


class WebhookNotifier:
    def __init__(
        self,
        urls: Sequence[str],
        secret: str,
        record: Record,
        backoff: Sequence[float] = BACKOFF,
        timeout: float = TIMEOUT,
        secrets: Sequence[str] = (),
    ) -> None:
        """`secrets`: the values redacted from every payload (Settings.secrets)."""
        self.urls, self.secret = tuple(urls), secret
        self.secrets = tuple(secrets)
        self.backoff, self.timeout = tuple(backoff), timeout
        self._client: httpx.AsyncClient | None = None
        self._deliveries = Deliveries("webhook", record)

    async def publish(self, thread: Thread, new: Sequence[Event]) -> None:
        for event in new:
            body = payload(thread, event)
            if body is not None:
                self.send(thread.id, body)

    def send(self, thread_id: str, body: dict[str, Any]) -> None:
        """POST `body`, redacted, to every URL, each in the background."""
        body = cleaned(body, self.secrets)
        raw = json.dumps(body, separators=(",", ":"), sort_keys=True).encode()
        for url in self.urls:
            self._deliveries.spawn(self._deliver(thread_id, url, raw, body["event"], body["id"]))

    async def _deliver(self, thread_id: str, url: str, raw: bytes, event: str, delivery: str) -> None:
        to = outbound.where(url)
        await self._deliveries.retried(
            thread_id, to, f"webhook {event} to {to}", lambda: self._post(url, raw, event, delivery), self.backoff,
            lambda attempts, why: wording.delivery_kept_failing(to, attempts, why),
        )

    async def _post(self, url: str, raw: bytes, event: str, delivery: str) -> None:
        if self._client is None:
            self._client = httpx.AsyncClient(timeout=self.timeout, follow_redirects=False)
        await outbound.request(self._client, "POST", url, content=raw, headers={
            "Content-Type": "application/json",
            "User-Agent": "deploybot-webhook/1",
            SIGNATURE_HEADER: sign(self.secret, raw),
            TIMESTAMP_HEADER: str(int(time.time())),  # of this attempt
            EVENT_HEADER: event,
            DELIVERY_HEADER: delivery,
        })

    async def drain(self) -> None:
        await self._deliveries.drain()

    async def aclose(self) -> None:
        await self.drain()
        if self._client is not None:
            await self._client.aclose()
            self._client = None
