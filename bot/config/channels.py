"""The channels' settings, each read from the flat variables (`s`: the Settings): Slack,
email, the outgoing webhooks, the model. None when one is off, ConfigError when half set."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, SecretStr

from bot.config.fields import Fields
from bot.config.reading import ConfigError, require, words

DEFAULT_MODELS = {"openai": "gpt-4o-mini", "anthropic": "claude-3-5-haiku-latest"}


class SlackSettings(BaseModel):
    model_config = ConfigDict(frozen=True)

    bot_token: SecretStr
    signing_secret: SecretStr
    app_token: SecretStr | None = None  # set: Socket Mode instead of HTTP
    api_url: str = "https://slack.com/api/"


class EmailSettings(BaseModel):
    model_config = ConfigDict(frozen=True)

    smtp_host: str
    smtp_port: int = 587
    smtp_username: str | None = None
    smtp_password: SecretStr | None = None
    smtp_tls: Literal["none", "starttls", "tls"] = "starttls"
    sender: str  # EMAIL_FROM
    inbound_secret: SecretStr
    reply_secret: SecretStr
    allowed_senders: frozenset[str] = frozenset()  # lower-cased addresses and @domains
    max_bytes: int = 1_000_000
    trusted_authserv_ids: frozenset[str] = frozenset()  # lower-cased
    mailbox_authenticated_domains: frozenset[str] = frozenset()  # lower-cased, without "@"



class NotifyWebhookSettings(BaseModel):
    model_config = ConfigDict(frozen=True)

    urls: tuple[str, ...]  # NOTIFY_WEBHOOK_URL, comma-separated: every one gets every payload
    secret: SecretStr  # signs each payload (HMAC-SHA256)


class LlmSettings(BaseModel):
    model_config = ConfigDict(frozen=True)

    provider: str
    model: str
    api_key: SecretStr  # "none" for an openai-generic server that wants no key
    base_url: str | None = None



def read_llm(s: Fields) -> LlmSettings | None:
    provider = s.llm_provider or (
        "openai-generic" if s.llm_base_url
        else "openai" if s.openai_api_key
        else "anthropic" if s.anthropic_api_key
        else None
    )
    if provider is None:
        return None
    key = s.llm_api_key or {
        "openai": s.openai_api_key, "anthropic": s.anthropic_api_key
    }.get(provider)
    model = s.llm_model or DEFAULT_MODELS.get(provider)
    if provider == "openai-generic" and not s.llm_base_url:
        raise ConfigError("LLM_PROVIDER=openai-generic needs LLM_BASE_URL")
    if not model:
        raise ConfigError(f"LLM_PROVIDER={provider} needs LLM_MODEL")
    if not key and provider != "openai-generic":
        raise ConfigError(f"LLM_PROVIDER={provider} needs LLM_API_KEY")
    return LlmSettings(
        provider=provider, model=model, api_key=key or SecretStr("none"), base_url=s.llm_base_url
    )


def read_slack(s: Fields) -> SlackSettings | None:
    if not s.slack_bot_token:
        return None
    if not s.slack_signing_secret:
        raise ConfigError("SLACK_BOT_TOKEN is set but SLACK_SIGNING_SECRET is not")
    return SlackSettings(
        bot_token=s.slack_bot_token, signing_secret=s.slack_signing_secret,
        app_token=s.slack_app_token or None, api_url=s.slack_api_url,
    )


def read_email(s: Fields) -> EmailSettings | None:
    if not (s.smtp_host or s.inbound_email_secret):
        return None
    require("the email channel", (
        ("SMTP_HOST", s.smtp_host), ("EMAIL_FROM", s.email_from),
        ("INBOUND_EMAIL_SECRET", s.inbound_email_secret),
        ("EMAIL_REPLY_SECRET", s.email_reply_secret),
    ))
    return EmailSettings.model_validate({
        "smtp_host": s.smtp_host, "smtp_port": s.smtp_port,
        "smtp_username": s.smtp_username, "smtp_password": s.smtp_password,
        "smtp_tls": s.smtp_tls, "sender": s.email_from,
        "inbound_secret": s.inbound_email_secret, "reply_secret": s.email_reply_secret,
        "allowed_senders": words(s.email_allowed_senders.lower()),
        "max_bytes": s.email_max_bytes,
        "trusted_authserv_ids": words(s.email_trusted_authserv_ids.lower()),
        "mailbox_authenticated_domains": frozenset(
            d.removeprefix("@") for d in words(s.email_mailbox_authenticated_domains.lower())
        ),
    })


def read_notify_webhook(s: Fields) -> NotifyWebhookSettings | None:
    urls = tuple(u.strip() for u in s.notify_webhook_url.split(",") if u.strip())
    if not urls and not s.notify_webhook_secret:
        return None
    require("outgoing webhooks", (
        ("NOTIFY_WEBHOOK_URL", urls), ("NOTIFY_WEBHOOK_SECRET", s.notify_webhook_secret),
    ))
    for url in urls:
        if not url.startswith(("https://", "http://")):
            raise ConfigError(f"NOTIFY_WEBHOOK_URL: {url!r} is not an http(s) URL")
    assert s.notify_webhook_secret is not None
    return NotifyWebhookSettings(urls=urls, secret=s.notify_webhook_secret)
