"""The SMTP client: one mail delivered, retrying connection failures and 4xx answers."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from email.message import EmailMessage

import aiosmtplib

from bot.runtime.retry import retrying

log = logging.getLogger(__name__)


@dataclass
class Smtp:
    host: str
    port: int
    username: str | None = None
    password: str | None = None
    tls: str = "starttls"  # none | starttls | tls
    backoff: Sequence[float] = (1, 2, 4, 8, 16)

    async def send(self, msg: EmailMessage) -> None:
        """Deliver, retrying connection failures and 4xx answers; raise the last error."""
        async for attempt in retrying(
            self.backoff, (aiosmtplib.SMTPException, OSError), f"SMTP send to {msg['To']}", log,
            give_up=_permanent,
        ):
            with attempt:
                await aiosmtplib.send(
                    msg, hostname=self.host, port=self.port, username=self.username,
                    password=self.password, use_tls=self.tls == "tls",
                    start_tls=True if self.tls == "starttls" else False, timeout=15,
                )


def _permanent(e: BaseException) -> bool:
    """A 5xx answer: the server will say the same again (unknown recipient, refused)."""
    return isinstance(e, aiosmtplib.SMTPResponseException) and e.code >= 500
