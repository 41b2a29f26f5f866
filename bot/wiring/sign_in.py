"""Signing in to the web: where people reach this server, one-time sign-in links (made, and
mailed through the email channel), and the secret that signs sessions."""

from __future__ import annotations

import os
import secrets
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from bot.adapters.redis.credentials import RedisCredentials
from bot.config.settings import Settings

if TYPE_CHECKING:
    from bot.adapters.channels.email import EmailChannel

SESSION_SECRET_FILE = "session_secret"


def public_base(settings: Settings) -> str:
    """Where people reach this server: PUBLIC_URL, else the address it serves on."""
    if settings.public_url:
        return settings.public_url.rstrip("/")
    host = settings.bind_host()
    host = "localhost" if host in ("0.0.0.0", "::", "") else f"[{host}]" if ":" in host else host
    return f"http://{host}:{settings.port}"


def sign_in_linker(settings: Settings, credentials: RedisCredentials) -> Callable[[str], Awaitable[str]]:
    """person -> a one-time sign-in URL (`/auth/link?code=...`), good for 10 minutes: for
    `python -m bot login-link`, Slack's `@deploybot login` and POST /auth/email-link."""
    from bot.adapters.http.auth import LINK_TTL

    async def link(person: str) -> str:
        code = await credentials.issue_link(person, LINK_TTL)
        return f"{public_base(settings)}/auth/link?code={code}"

    return link


def sign_in_mailer(settings: Settings, channel: EmailChannel | None) -> Callable[[str, str], Awaitable[None]] | None:
    """Mails a sign-in link through the email channel's SMTP; None without the channel."""
    email = settings.email
    if channel is None or email is None:
        return None
    from email.message import EmailMessage
    from email.utils import make_msgid

    async def mail(address: str, url: str) -> None:
        msg = EmailMessage()
        msg["From"], msg["To"], msg["Subject"] = email.sender, address, "Your deploybot sign-in link"
        msg["Message-ID"] = make_msgid(domain=email.sender.rpartition("@")[2] or None)
        msg.set_content(
            f"Open this link to sign in to deploybot:\n\n{url}\n\n"
            "It works once, for 10 minutes. If you did not ask for it, ignore this email.\n"
        )
        await channel.smtp.send(msg)

    return mail


def session_secret(settings: Settings) -> bytes:
    """SESSION_SECRET, or (unset: local mode) a random one kept in DATA_DIR/session_secret,
    created on first use. Every server behind one address must share it: set SESSION_SECRET
    when there is more than one."""
    if settings.session_secret is not None:
        return settings.session_secret.get_secret_value().encode()
    path = settings.data_dir / SESSION_SECRET_FILE
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        # Written aside and linked into place: of two processes starting at once, one
        # secret wins and neither reads half a file.
        spare = path.with_name(f"{SESSION_SECRET_FILE}.{secrets.token_hex(4)}")
        fd = os.open(spare, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as out:
            out.write(secrets.token_hex(32))
        try:
            os.link(spare, path)
        except FileExistsError:
            pass
        finally:
            spare.unlink()
    return path.read_text().strip().encode()
