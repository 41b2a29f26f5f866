"""An approval mail must go out even when every process that tried to send it died: SMTP
(aiosmtpd) down, the worker that asked for approval killed with SIGKILL while it retried and
the web killed too, SMTP back, a new worker started: the mail arrives, once."""

from __future__ import annotations

from email import message_from_bytes, policy
from email.message import EmailMessage

import pytest
from aiosmtpd.controller import Controller
from redis import Redis as SyncRedis

from bot.adapters.redis.keys import Keys
from bot.testing import cluster
from bot.testing.cluster import BotProcess, free_port
from tests.end_to_end.conftest import Server, wait_for

pytestmark = [pytest.mark.redis, pytest.mark.processes, pytest.mark.network]

TOKEN = "outbox-test-token"


class Catcher:
    def __init__(self) -> None:
        self.messages: list[EmailMessage] = []

    async def handle_DATA(self, server, session, envelope) -> str:  # noqa: N802 (aiosmtpd's name)
        self.messages.append(message_from_bytes(envelope.content, policy=policy.default))
        return "250 OK"


@pytest.fixture
def smtp_port() -> int:
    return free_port()


@pytest.fixture
def env(server_env, smtp_port) -> dict[str, str]:
    return {
        **server_env, "API_TOKEN": TOKEN, "SMTP_HOST": "127.0.0.1", "SMTP_PORT": str(smtp_port),
        "SMTP_TLS": "none", "EMAIL_FROM": "deploybot@example.com", "INBOUND_EMAIL_SECRET": "inbound-secret",
        "EMAIL_REPLY_SECRET": "reply-secret", "EMAIL_ALLOWED_SENDERS": "alice@example.com",
        "APPROVER_EMAILS": "production:bob@example.com",
    }


@pytest.fixture
def procs(redis):  # `redis` flushes the database before each test
    started: list[BotProcess | Server] = []
    yield started
    for p in started:
        p.kill()


def test_an_approval_mail_survives_every_sender_killed_and_arrives_once(env, procs, tmp_path, smtp_port):
    web = Server(env, tmp_path / "web.log", "--no-worker")
    procs.append(web)
    first = cluster.worker(env, tmp_path / "first.log")
    procs.append(first)
    started = web.http.post("/threads", json={"message": "deploy backend v1.2.3 to production", "user": "alice"})
    thread_id = started.json()["id"]
    assert web.wait(thread_id)["status"] == "waiting_for_approval"
    first.wait_for_log("SMTP send to bob@example.com failed")  # SMTP is down: it is retrying
    first.kill()
    web.kill()

    catcher = Catcher()
    smtp = Controller(catcher, hostname="127.0.0.1", port=smtp_port)
    smtp.start()
    try:
        procs.append(cluster.worker(env, tmp_path / "second.log"))
        wait_for(lambda: catcher.messages, timeout=30)
        with SyncRedis.from_url(env["REDIS_URL"]) as r:
            wait_for(lambda: r.hlen(Keys().outbox()) == 0)  # sent, and so removed
        assert [(str(m["To"]), str(m["Subject"])) for m in catcher.messages] == [
            ("bob@example.com", "Approve deploy: backend v1.2.3 to production?")
        ]
    finally:
        smtp.stop()
