"""SMTP down while every process that tried to send the approval mails is SIGKILLed: once
SMTP is back and a new worker starts, each mail arrives exactly once (the outbox in Redis)."""

from __future__ import annotations

import time
from collections import Counter
from email import message_from_bytes, policy
from typing import Any

from redis import Redis

from bot.adapters.redis.keys import Keys
from bot.testing import cluster, scenario
from bot.testing.faults.rig import Load, Rig
from bot.testing.faults.suite import Seen

APPROVER_EMAIL = "alice@example.com"
SMTP_PORT = "SMTP_PORT"


def settings() -> dict[str, str]:
    """SMTP on a port nobody listens on yet; the approver asked by mail."""
    return {
        "SMTP_HOST": "127.0.0.1", SMTP_PORT: str(cluster.free_port()), "SMTP_TLS": "none",
        "EMAIL_FROM": "deploybot@example.com", "INBOUND_EMAIL_SECRET": "inbound-secret",
        "EMAIL_REPLY_SECRET": "reply-secret", "EMAIL_ALLOWED_SENDERS": "bob@example.com",
    }


class _Catcher:
    def __init__(self) -> None:
        self.subjects: list[str] = []

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:  # noqa: N802 (aiosmtpd's name)
        self.subjects.append(str(message_from_bytes(envelope.content, policy=policy.default)["Subject"]))
        return "250 OK"


def _wait_for_retries(rig: Rig, worker: cluster.BotProcess, count: int, within: float = 60) -> None:
    """Until `count` mails are kept in the outbox and the worker has found SMTP down."""
    deadline = time.monotonic() + within
    with Redis.from_url(rig.env["REDIS_URL"]) as r:
        while r.hlen(Keys().outbox()) < count or f"SMTP send to {APPROVER_EMAIL} failed" not in worker.log.read_text():
            if time.monotonic() > deadline:
                raise RuntimeError(f"not every mail was being tried: {worker.log.read_text()[-2000:]}")
            time.sleep(0.1)


def smtp_down_workers_killed(rig: Rig, load: Load, threads: int) -> Seen:
    """The approval mails kept and failing, the worker and the web SIGKILLed, SMTP back, a new
    web and worker: each mail arrives once, and the threads are approved and finish."""
    from aiosmtpd.controller import Controller  # a test dependency: only the fault suite needs it

    people = rig.workdir / "deploybot.toml"
    approver = f'[people.{scenario.APPROVER}]\nslack = "{scenario.APPROVER_SLACK}"\n'
    people.write_text(f'{approver}email = "{APPROVER_EMAIL}"\n')
    web, first = rig.web_and_worker("--no-worker", name="first")
    load.launch(threads)
    load.drive(within=30 + threads, until={"waiting_for_approval"}, approve=False)
    _wait_for_retries(rig, first, threads)  # SMTP is down: every mail is kept and being tried
    first.kill()
    web.kill()
    catcher = _Catcher()
    smtp = Controller(catcher, hostname="127.0.0.1", port=int(rig.env[SMTP_PORT]))
    smtp.start()
    try:
        rig.web_and_worker("--no-worker", name="second")
        with Redis.from_url(rig.env["REDIS_URL"]) as r:
            deadline = time.monotonic() + 45 + threads  # a dead sender's hold lapses in 10 s, looked at every 5 s
            while (len(catcher.subjects) < threads or r.hlen(Keys().outbox())) and time.monotonic() < deadline:
                time.sleep(0.2)
        time.sleep(1)  # a second copy of any mail would have come by now
        load.drive(within=60 + 2 * threads)
    finally:
        smtp.stop()
    per_thread = Counter(catcher.subjects)
    once = len(per_thread) == threads and set(per_thread.values()) == {1}
    return Seen(f"{len(catcher.subjects)} approval mails for {threads} threads after the new worker, "
                f"{'each once' if once else 'not each once'}", once)
