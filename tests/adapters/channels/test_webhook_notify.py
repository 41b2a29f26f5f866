"""Outgoing webhooks end to end: a thread driven over the real HTTP API, real HTTP receivers
(one of them failing as scripted) checking signatures, retries and what is recorded when a
delivery keeps failing."""

from __future__ import annotations

import hashlib
import hmac
import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

import pytest

from bot.adapters.channels.outgoing_webhooks import sign
from bot.testing.http import serve, stop, url
from tests.helpers import eventually, ledger_lines, reply, settle

pytestmark = [pytest.mark.redis, pytest.mark.network]

SECRET = "webhook-secret-for-tests"


@dataclass
class Receiver:
    """Records every POST; answers with the statuses scripted for a path, then 200."""

    posts: list[dict[str, Any]] = field(default_factory=list)
    script: dict[str, list[int]] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)
    server: Any = None

    def start(self) -> Receiver:
        def route(method: str, path: str, headers: Any, raw: bytes) -> tuple[int, Any, dict[str, str]]:
            with self.lock:
                status = self.script.get(path, []).pop(0) if self.script.get(path) else 200
                self.posts.append({"path": path, "headers": dict(headers), "raw": raw, "status": status})
            return status, {"ok": status == 200}, {}

        self.server = serve(route)
        return self

    def url(self, path: str) -> str:
        return url(self.server) + path

    def got(self, path: str, event: str | None = None) -> list[dict[str, Any]]:
        with self.lock:
            return [p for p in self.posts if p["path"] == path
                    and (event is None or p["headers"].get("X-Deploybot-Event") == event)]


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    r = Receiver().start()
    yield r
    stop(r.server)


@pytest.fixture
def settings(settings, receiver):
    return settings.model_copy(update={
        "notify_webhook_url": f"{receiver.url('/a')}, {receiver.url('/b')}", "notify_webhook_secret": SECRET,
    })


@pytest.fixture
def fast(app):
    app.adapter("outgoing_webhooks").backoff = (0.05, 0.1, 0.2)


async def paused(api) -> str:
    r = await api.post("/threads", json={"message": "deploy backend v1.2.3 to production", "user": "alice"})
    thread = await settle(api, r.json()["id"])
    assert thread["status"] == "waiting_for_approval"
    return thread["id"]


def body(post: dict[str, Any]) -> dict[str, Any]:
    return json.loads(post["raw"])


async def test_every_notable_event_is_posted_signed_to_every_url(api, app, receiver, fast, ledger):
    thread_id = await paused(api)
    [asked] = await eventually(lambda: receiver.got("/a", "approval.requested"))
    await eventually(lambda: receiver.got("/b", "approval.requested"))

    # Signed over the raw body: the receiver recomputes it; a timestamp and a delivery id beside it.
    headers = asked["headers"]
    expected = "sha256=" + hmac.new(SECRET.encode(), asked["raw"], hashlib.sha256).hexdigest()
    assert headers["X-Deploybot-Signature-256"] == expected == sign(SECRET, asked["raw"])
    assert abs(int(headers["X-Deploybot-Timestamp"]) - time.time()) < 30
    payload = body(asked)
    assert headers["X-Deploybot-Delivery"] == payload["id"]
    assert headers["Content-Type"] == "application/json"
    assert payload["event"] == "approval.requested" and payload["version"] == 1
    assert payload["thread"] == {"id": thread_id, "channel": "api"}
    assert payload["deploy"]["service"] == "backend" and payload["deploy"]["tag"] == "v1.2.3"
    assert payload["deploy"]["environment"] == "production" and len(payload["deploy"]["commit"]) == 40
    assert payload["approval"]["requested_by"] == "alice" and payload["approval"]["expires_at"].endswith("Z")

    approval_id = payload["approval"]["id"]
    r = await api.post(f"/threads/{thread_id}/responses",
                       json={"user": "bob", "approval_id": approval_id, "approve": True})
    assert r.status_code == 202, r.text
    assert (await settle(api, thread_id))["status"] == "done"
    assert len(ledger_lines(ledger)) == 1

    for path in ("/a", "/b"):
        [decided] = await eventually(lambda path=path: receiver.got(path, "approval.decided"))
        assert body(decided)["approval"] | {"decision": "approved", "decided_by": "bob", "id": approval_id} \
            == body(decided)["approval"]
        [started] = await eventually(lambda path=path: receiver.got(path, "deploy.started"))
        assert body(started)["deploy"]["deploy_id"].startswith(thread_id)
        [finished] = await eventually(lambda path=path: receiver.got(path, "deploy.finished"))
        assert body(finished)["result"]["ok"] is True and body(finished)["result"]["approved_by"] == "bob"
        assert body(finished)["deploy"]["deploy_id"] == body(started)["deploy"]["deploy_id"]
    # Nothing else: user messages and model steps are not webhook events.
    assert {p["headers"]["X-Deploybot-Event"] for p in receiver.posts} == {
        "approval.requested", "approval.decided", "deploy.started", "deploy.finished"}


async def test_a_failing_receiver_is_retried_with_backoff_and_one_that_keeps_failing_is_recorded(
    api, app, receiver, fast
):
    receiver.script["/a"] = [503, 500]  # fails twice, then takes it
    receiver.script["/b"] = [503] * 10  # never takes it
    thread_id = await paused(api)

    tries = await eventually(lambda: [p for p in receiver.got("/a", "approval.requested")] if len(
        receiver.got("/a", "approval.requested")) == 3 else None)
    assert [p["status"] for p in tries] == [503, 500, 200]
    assert len({p["headers"]["X-Deploybot-Delivery"] for p in tries}) == 1  # one delivery, tried again
    assert len({p["raw"] for p in tries}) == 1

    async def recorded() -> list[Any]:
        thread = await app.service.get(thread_id)
        return [e for e in thread.events if e.type == "delivery_failed"]

    [failed] = await eventually(recorded, within=10)
    assert failed.channel == "webhook"
    assert failed.to == receiver.url("")  # scheme and host only: a path can be a credential
    assert "4 times" in failed.reason and "HTTP 503" in failed.reason
    assert len(receiver.got("/b", "approval.requested")) == 4  # tried once, retried three times
    assert (await api.get(f"/threads/{thread_id}")).json()["status"] == "waiting_for_approval"


async def test_a_refusing_receiver_is_not_retried(api, app, receiver, fast):
    receiver.script["/a"] = [410]
    thread_id = await paused(api)

    async def recorded() -> list[Any]:
        return [e for e in (await app.service.get(thread_id)).events if e.type == "delivery_failed"]

    [failed] = await eventually(recorded, within=10)
    assert "1 times" in failed.reason and "HTTP 410" in failed.reason
    assert len(receiver.got("/a", "approval.requested")) == 1


async def test_an_approval_that_lapses_is_posted_as_expired_once(api, app, receiver, fast):
    thread_id = await paused(api)
    request = (await app.service.get(thread_id)).pending_approval()
    later = request.expires_at + timedelta(seconds=1)
    app.runner.clock = lambda: later  # its timer fires: the run records approval_expired
    await app.runner.run(thread_id)
    [lapsed] = await eventually(lambda: receiver.got("/a", "approval.expired"))
    assert body(lapsed)["approval"]["decision"] == "expired" and body(lapsed)["approval"]["id"] == request.approval_id
    await app.runner.run(thread_id)  # fired again (a worker died after taking it): nothing more
    await app.adapter("outgoing_webhooks").drain()
    assert len(receiver.got("/a", "approval.expired")) == 1

async def test_secrets_in_text_are_redacted_in_payloads_as_in_the_transcript(api, app, settings, receiver, fast,
                                                                            fake_llm):
    """A secret a person pasted into feedback (or the model wrote into a reason) reached every
    receiver in `approval.decided.text`, though the transcript redacts it."""
    llm_key = settings.llm_api_key.get_secret_value()  # a configured secret
    pasted = f"GITHUB_TOKEN=ghp_{'a1' * 18}"  # looks like one
    fake_llm.script(
        reply(intent="list_git_tags"),
        reply(intent="deploy", service="backend", tag="v1.2.3", environment="production",
              reason=f"newest tag; deploy with {llm_key}"),
    )
    r = await api.post("/threads", json={"message": "ship the newest backend to production", "user": "alice"})
    thread_id = r.json()["id"]
    assert (await settle(api, thread_id))["status"] == "waiting_for_approval"
    [asked] = await eventually(lambda: receiver.got("/a", "approval.requested"))
    fake_llm.script(reply(intent="done_for_now", message="Not deploying."))
    r = await api.post(f"/threads/{thread_id}/responses", json={
        "user": "bob", "approval_id": body(asked)["approval"]["id"], "approve": False,
        "text": f"no: rotate {llm_key} first, and {pasted}",
    })
    assert r.status_code == 202, r.text
    [decided] = await eventually(lambda: receiver.got("/a", "approval.decided"))
    assert body(asked)["approval"]["reason"] == "newest tag; deploy with [redacted]"
    assert body(decided)["approval"]["text"] == "no: rotate [redacted] first, and GITHUB_TOKEN=[redacted]"
    transcript = (await api.get(f"/threads/{thread_id}.md")).text
    assert "no: rotate [redacted] first, and GITHUB\\_TOKEN=[redacted]" in transcript  # the same redaction
    for post in receiver.posts:
        assert llm_key.encode() not in post["raw"] and pasted.encode() not in post["raw"]
        assert post["headers"]["X-Deploybot-Signature-256"] == sign(SECRET, post["raw"])  # signed as sent


async def test_format_characters_are_left_out_of_payloads(api, app, receiver, fast, fake_llm):
    # A receiver often shows the text to people (a chat room, a dashboard): a U+202E in a
    # reason would reverse it there, zero-width characters hide words.
    hidden = "\u202e\u2066\u2069\u200b\u200d\u2060\ufeff"
    fake_llm.script(
        reply(intent="list_git_tags"),
        reply(intent="deploy", service="backend", tag="v1.2.3", environment="production", reason=f"newest{hidden} tag"),
    )
    r = await api.post("/threads", json={"message": "ship the newest backend to production", "user": "alice"})
    thread_id = r.json()["id"]
    assert (await settle(api, thread_id))["status"] == "waiting_for_approval"
    [asked] = await eventually(lambda: receiver.got("/a", "approval.requested"))
    fake_llm.script(reply(intent="done_for_now", message="Not deploying."))
    await api.post(f"/threads/{thread_id}/responses", json={
        "user": f"bob{hidden}", "approval_id": body(asked)["approval"]["id"], "approve": False,
        "text": f"not{hidden} now",
    })
    [decided] = await eventually(lambda: receiver.got("/a", "approval.decided"))
    assert body(asked)["approval"]["reason"] == "newest tag"
    assert (body(decided)["approval"]["text"], body(decided)["approval"]["decided_by"]) == ("not now", "bob")
