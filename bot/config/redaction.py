"""What is never shown: the secret settings, the passwords of URLs in any other, and what
the deploy command is handed from the bot's environment (`environ`: settings.py reads it)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from urllib.parse import unquote, urlsplit

import httpx

from bot.config.fields import Fields
from bot.config.reading import words


def secrets(s: Fields, environ: Mapping[str, str]) -> tuple[str, ...]:
    """Values that must never reach the model, a transcript, a log or the deploy command's
    output: every secret setting, and the password of any URL in any other setting
    (REDIS_URL=redis://:pw@host, LLM_BASE_URL=https://user:pw@host/v1)."""
    values = [
        v.get_secret_value() for v in (
            s.api_token, s.redis_password, s.redis_sentinel_password,
            s.llm_api_key, s.openai_api_key, s.anthropic_api_key,
            s.slack_bot_token, s.slack_signing_secret, s.slack_app_token, s.github_token,
            s.smtp_password, s.inbound_email_secret, s.email_reply_secret, s.session_secret,
            s.github_webhook_secret, s.notify_webhook_secret, s.github_app_private_key,
        ) if v
    ]
    # An outgoing webhook's URL often is its credential (a chat's incoming-webhook URL): as
    # written, and as httpx prints it (lower-case host, default port dropped).
    for url in (u.strip() for u in s.notify_webhook_url.split(",") if u.strip()):
        values += [v for v in dict.fromkeys((url, _as_sent(url))) if v not in values]
    for name in type(s).model_fields:
        value = getattr(s, name)
        if isinstance(value, str):
            values += [p for p in url_passwords(value) if p not in values]
    # What the deploy command is handed from the bot's environment is what it most often
    # prints back (`env`, `set -x`): redacted like the bot's own secrets.
    values += [v for n in deploy_passthrough(s) if (v := environ.get(n)) and v not in values]
    return tuple(values)


def deploy_passthrough(s: Fields) -> tuple[str, ...]:
    """DEPLOY_ENV_PASSTHROUGH: names of variables the deploy command may see."""
    return tuple(sorted(words(s.deploy_env_passthrough)))


_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s\"']+")


def url_passwords(value: str) -> list[str]:
    """The passwords of the URLs in `value` (`scheme://user:password@host`), each as written
    and decoded."""
    found: list[str] = []
    for url in _URL.findall(value):
        try:
            password = urlsplit(url).password
        except ValueError:  # not a URL after all (a bad port, brackets)
            continue
        if password:
            found += [password, unquote(password)]
    return list(dict.fromkeys(found))


def _as_sent(url: str) -> str:
    """`url` as an HTTP client normalizes it, and so logs it."""
    try:
        return str(httpx.URL(url))
    except (httpx.InvalidURL, ValueError):  # refused at start anyway (NOTIFY_WEBHOOK_URL)
        return url

