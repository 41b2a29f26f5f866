"""The approval mail's outbox in one process, against a real Redis and a real SMTP server
(aiosmtpd): a mail that cannot be sent is tried a bounded number of times, the reason kept,
then the thread says so; one the server takes is removed, and sent once."""

from __future__ import annotations

import pytest
from aiosmtpd.controller import Controller

from bot.adapters.channels.email import sending
from bot.adapters.redis.keys import Keys
from tests.conftest import free_port
from tests.helpers import eventually, settle

pytestmark = [pytest.mark.redis, pytest.mark.network]


class Catcher:
    def __init__(self) -> None:
        self.messages: list[bytes] = []

    async def handle_DATA(self, server, session, envelope) -> str:  # noqa: N802 (aiosmtpd's name)
        self.messages.append(envelope.content)
        return "250 OK"


@pytest.fixture
def smtp_port() -> int:
    return free_port()


@pytest.fixture
def settings(settings, smtp_port):
    return settings.model_copy(update={
        "smtp_host": "127.0.0.1", "smtp_port": smtp_port, "smtp_tls": "none",
        "email_from": "deploybot@example.com", "inbound_email_secret": "inbound-secret",
        "email_reply_secret": "reply-secret", "email_allowed_senders": "alice@example.com",
        "approver_emails": "production:bob@example.com",
    })


@pytest.fixture
def quick(app, monkeypatch):
    """Tries a tenth of a second apart, no SMTP retries inside one try."""
    monkeypatch.setattr(sending, "ATTEMPTS", 3)
    monkeypatch.setattr(sending, "AGAIN_AFTER", 0.1)
    monkeypatch.setattr(sending, "FLUSH_EVERY", 0.1)
    app.adapter("email").smtp.backoff = ()


async def ask(api) -> str:
    r = await api.post("/threads", json={"message": "deploy backend v1.2.3 to production", "user": "alice"})
    thread_id = r.json()["id"]
    assert (await settle(api, thread_id))["status"] == "waiting_for_approval"
    return thread_id


async def test_an_approval_mail_never_taken_is_tried_three_times_then_the_thread_says_so(api, app, quick, redis):
    thread_id = await ask(api)  # nothing listens on the SMTP port

    async def failed() -> list[dict]:
        events = (await api.get(f"/threads/{thread_id}")).json()["events"]
        return [e for e in events if e["type"] == "delivery_failed"]

    [said] = await eventually(failed, within=15, every=0.1)
    assert said["to"] == "bob@example.com" and said["channel"] == "email"
    assert said["reason"].startswith("after 3 attempts: SMTP")  # the last reason, kept
    assert await redis.hlen(Keys().outbox()) == 0 and await redis.zcard(Keys().outbox_due()) == 0


async def test_an_approval_mail_the_server_takes_on_a_later_try_is_sent_once(api, app, quick, redis, smtp_port):
    thread_id = await ask(api)
    kept = await eventually(lambda: redis.hgetall(Keys().outbox()), within=5, every=0.05)
    assert len(kept) == 1
    catcher = Catcher()
    smtp = Controller(catcher, hostname="127.0.0.1", port=smtp_port)
    smtp.start()
    try:
        await eventually(lambda: catcher.messages, within=10, every=0.05)
        await eventually(lambda: _empty(redis), within=5, every=0.05)
        await app.adapter("email").drain()
        assert len(catcher.messages) == 1 and b"bob@example.com" in catcher.messages[0]
        events = (await api.get(f"/threads/{thread_id}")).json()["events"]
        assert [e for e in events if e["type"] == "delivery_failed"] == []
    finally:
        smtp.stop()


async def _empty(redis) -> bool:
    return await redis.hlen(Keys().outbox()) == 0
