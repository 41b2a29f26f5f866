"""GitHub webhooks end to end: signed deliveries over real HTTP to the running app (behind
the real front door), threads started by [[triggers]] of a real deploybot.toml, posted to
a Slack stand-in and a real SMTP server, deploys run by the real deploy command."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from aiosmtpd.controller import Controller

from bot.adapters.channels.github.webhook import signature
from bot.adapters.channels.slack.blocks import APPROVE
from bot.testing.fake_slack import FakeSlack
from tests.adapters.channels.email.test_email import Inbox
from tests.conftest import free_port
from tests.helpers import eventually, ledger_lines, settle

pytestmark = [pytest.mark.redis, pytest.mark.network]

SECRET = "github-webhook-secret"
API_TOKEN = "api-token-for-tests"
NOTIFY_CHANNEL = "C0123DEPLOY"
BOB = "UBOB"

CONFIG = f"""
[people.bob]
slack = "{BOB}"
email = "bob@example.com"

[environments.staging]

[environments.production]
protected = true
approvers = ["bob"]

[[triggers]]
on = "release"
service = "backend"
environment = "production"
notify = ["slack:{NOTIFY_CHANNEL}", "email:team@example.com"]

[[triggers]]
on = "tag"
service = "backend"
environment = "staging"
notify = ["slack:{NOTIFY_CHANNEL}"]
"""


@pytest.fixture
def fake_slack() -> Iterator[FakeSlack]:
    slack = FakeSlack().start()
    yield slack
    slack.stop()


@pytest.fixture
def mail() -> Iterator[Inbox]:
    box = Inbox()
    controller = Controller(box, hostname="127.0.0.1", port=free_port())
    controller.start()
    box.port = controller.port  # type: ignore[attr-defined]
    yield box
    controller.stop()


@pytest.fixture
def settings(settings, fake_slack, mail, tmp_path: Path):
    config = tmp_path / "deploybot.toml"
    config.write_text(CONFIG)
    return settings.model_copy(update={
        "deploybot_config": config, "api_token": API_TOKEN, "github_webhook_secret": SECRET,
        "slack_bot_token": "xoxb-test", "slack_signing_secret": "slack-secret", "slack_api_url": fake_slack.base_url,
        "smtp_host": "127.0.0.1", "smtp_port": mail.port, "smtp_tls": "none",
        "email_from": "deploybot@example.com", "inbound_email_secret": "in", "email_reply_secret": "reply",
    })


def release(tag: str = "v1.2.3", action: str = "published", sender: str = "octocat") -> dict:
    return {"action": action, "release": {"tag_name": tag, "draft": False}, "sender": {"login": sender},
            "repository": {"full_name": "acme/shop", "default_branch": "main"}}


def tag_push(tag: str = "v1.2.3", sender: str = "octocat") -> dict:
    return {"ref": f"refs/tags/{tag}", "created": True, "deleted": False, "sender": {"login": sender},
            "repository": {"full_name": "acme/shop", "default_branch": "main"}}


async def deliver(api, event: str, payload: dict, delivery: str | None = None, secret: str = SECRET,
                  **headers: str):
    body = json.dumps(payload).encode()
    return await api.post("/github/webhook", content=body, headers={
        "Authorization": "",  # GitHub sends no API token: the path is exempt from it
        "Content-Type": "application/json",
        "X-GitHub-Event": event,
        "X-GitHub-Delivery": delivery or str(uuid.uuid4()),
        "X-Hub-Signature-256": signature(secret, body),
        **headers,
    })


async def thread_count(app) -> int:
    return len(await app.store.recent(100))


async def test_forged_unsigned_and_malformed_deliveries_are_refused_and_store_nothing(api, app):
    forged = await deliver(api, "release", release(), secret="not-the-secret")
    assert forged.status_code == 401
    unsigned = await api.post("/github/webhook", content=json.dumps(release()), headers={
        "Authorization": "", "X-GitHub-Event": "release", "X-GitHub-Delivery": "d1"})
    assert unsigned.status_code == 401
    body = json.dumps(release()).encode()
    tampered = await api.post("/github/webhook", content=body + b" ", headers={
        "Authorization": "", "X-GitHub-Event": "release", "X-GitHub-Delivery": "d2",
        "X-Hub-Signature-256": signature(SECRET, body)})
    assert tampered.status_code == 401
    assert (await deliver(api, "release", release(), delivery="no spaces allowed")).status_code == 400
    assert await thread_count(app) == 0
    # The API token still guards every other path.
    assert (await api.get("/threads", headers={"Authorization": ""})).status_code == 401


async def test_ping_is_answered_and_other_events_are_acknowledged_and_ignored(api, app):
    ping = await deliver(api, "ping", {"zen": "Keep it logically awesome.", "hook_id": 1})
    assert ping.status_code == 200 and ping.json()["status"] == "pong"
    for event, payload in (
        ("issues", {"action": "opened", "sender": {"login": "octocat"}}),
        ("release", release(action="created")),  # not published yet
        ("push", {"ref": "refs/heads/main", "created": False, "sender": {"login": "octocat"}}),
        ("workflow_run", {"action": "completed", "workflow_run": {"conclusion": "success",
                          "head_branch": "main", "head_sha": "a" * 40}}),  # no workflow_run trigger
    ):
        answer = await deliver(api, event, payload)
        assert answer.status_code == 200 and answer.json()["status"] == "ignored", (event, answer.text)
    assert await thread_count(app) == 0


async def test_a_release_on_a_protected_environment_asks_in_the_configured_channel_and_email_once(
    api, app, fake_slack, mail, ledger
):
    delivery = str(uuid.uuid4())
    first = await deliver(api, "release", release(), delivery=delivery)
    assert first.status_code == 200 and first.json()["status"] == "started", first.text
    [thread_id] = first.json()["threads"]
    again = await deliver(api, "release", release(), delivery=delivery)  # GitHub redelivers
    assert again.json()["status"] == "duplicate"
    assert await thread_count(app) == 1

    thread = await settle(api, thread_id)
    assert thread["status"] == "waiting_for_approval"
    said = thread["events"][0]
    assert said["text"] == "deploy backend v1.2.3 to production (release v1.2.3 published by octocat)"
    assert (said["channel"], said["user"], said["person"]) == ("github", "octocat", None)
    assert thread["pending_approval"]["reason"] == "release v1.2.3 published by octocat"

    # Slack: a message in the configured channel, the approval with its buttons in its thread.
    [root] = await fake_slack.wait_for("chat.postMessage", channel=NOTIFY_CHANNEL, text="octocat (github)")
    root_ts = fake_slack.answer(root)["ts"]
    [asked] = await fake_slack.wait_for("chat.postMessage", channel=NOTIFY_CHANNEL, thread_ts=root_ts,
                                        text="Approval needed")
    # Email: the team hears of it (in one mail thread), the approver gets the approval mail.
    [started] = await mail.wait_for(to="team@example.com", body="octocat (github): deploy backend v1.2.3")
    await mail.wait_for(to="team@example.com", body="needs approval", in_reply_to=str(started["Message-ID"]))
    await mail.wait_for(to="bob@example.com", body="Reply APPROVE to deploy")
    assert ledger_lines(ledger) == []  # the trigger only asked

    # Bob approves with the button in the configured channel: the deploy runs.
    blocks = asked["blocks"] if isinstance(asked["blocks"], list) else json.loads(asked["blocks"])
    button = next(e for b in blocks if b["type"] == "actions" for e in b["elements"] if e["action_id"] == APPROVE)
    await app.service.respond(thread_id, "", app.service.directory.by("slack", BOB), *_parse(button["value"]),
                              approve=True, channel="slack")
    await app.kick(thread_id)
    assert (await settle(api, thread_id))["status"] == "done"
    assert len(ledger_lines(ledger)) == 1
    await fake_slack.wait_for("chat.postMessage", channel=NOTIFY_CHANNEL, thread_ts=root_ts, text="Deployed backend")


def _parse(value: str) -> tuple[str]:
    from bot.adapters.channels.slack.blocks import parse_button_value

    _, approval_id = parse_button_value(value)
    return (approval_id,)


async def test_a_tag_on_an_unprotected_environment_deploys_at_once(api, app, fake_slack, ledger):
    answer = await deliver(api, "push", tag_push("v1.2.2", sender="hubot"))
    [thread_id] = answer.json()["threads"]
    thread = await settle(api, thread_id)
    assert thread["status"] == "done", thread["events"]
    [deployed] = ledger_lines(ledger)
    assert "backend v1.2.2 staging" in deployed
    await fake_slack.wait_for("chat.postMessage", channel=NOTIFY_CHANNEL, text="hubot (github): deploy backend v1.2.2")
    await eventually(lambda: fake_slack.matching("chat.postMessage", channel=NOTIFY_CHANNEL, text="Deployed backend"))


async def raw_post(api, headers: dict[str, str], body: bytes = b"") -> bytes:
    """One request on a socket of its own: the head, then as much of `body` as the server reads."""
    port = api.base_url.port
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    head = "POST /github/webhook HTTP/1.1\r\nHost: 127.0.0.1\r\n" + "".join(f"{k}: {v}\r\n" for k, v in headers.items())
    writer.write(head.encode() + b"\r\n")
    try:
        for i in range(0, len(body), 64 * 1024):
            chunk = body[i:i + 64 * 1024]
            writer.write(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
            await writer.drain()
    except ConnectionError:
        pass
    answer = await asyncio.wait_for(reader.read(65536), 10)
    writer.close()
    return answer


async def test_the_body_limit_still_applies_to_the_exempt_path(api, app):
    signed = {"X-GitHub-Event": "release", "X-GitHub-Delivery": "big",
              "X-Hub-Signature-256": signature(SECRET, b"whatever")}
    declared = await raw_post(api, {**signed, "Content-Length": str(300 * 1024 * 1024)})
    assert declared.startswith(b"HTTP/1.1 413"), declared
    streamed = await raw_post(api, {**signed, "Transfer-Encoding": "chunked"}, b"x" * (6 * 1024 * 1024))
    assert streamed.startswith(b"HTTP/1.1 413"), streamed
    # Unsigned: refused without waiting for a byte of the body (none is ever sent).
    unsigned = await raw_post(api, {"X-GitHub-Event": "release", "Content-Length": "100000"})
    assert unsigned.startswith(b"HTTP/1.1 401"), unsigned
    assert await thread_count(app) == 0


async def test_a_captured_delivery_replayed_under_a_new_delivery_id_is_a_duplicate(api, app):
    # The signature covers only the body: an attacker who captured one signed delivery can
    # send it again with any X-GitHub-Delivery. The body was taken once, so it starts nothing.
    first = await deliver(api, "push", tag_push("v1.2.4"), delivery=str(uuid.uuid4()))
    assert first.json()["status"] == "started", first.text
    replayed = await deliver(api, "push", tag_push("v1.2.4"), delivery=str(uuid.uuid4()))
    assert replayed.status_code == 200 and replayed.json()["status"] == "duplicate", replayed.text
    assert await thread_count(app) == 1
    # Another event's body is its own delivery.
    other = await deliver(api, "push", tag_push("v1.2.5"), delivery=str(uuid.uuid4()))
    assert other.json()["status"] == "started", other.text
    assert await thread_count(app) == 2
