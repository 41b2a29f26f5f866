"""The filter that keeps secrets out of every log line: configured ones, whatever looks like
one, and query-string secrets (`/email/inbound?secret=...`, `/auth/link?code=...`) in
uvicorn's access log and httpx's request lines."""

from __future__ import annotations

import copy
import logging
import re
from collections.abc import Sequence
from typing import Any
from urllib.parse import unquote_plus

from bot.core.prompt import redact

SECRET_PARAMETERS = frozenset({"secret", "token", "api_token", "access_token", "api_key", "password", "code"})
_QUERY = re.compile(r"\?[^\s\"']*")


def redact_query(text: str) -> str:
    """`/email/inbound?secret=abc&x=1` -> `/email/inbound?secret=[redacted]&x=1`. Parameter
    names are compared as the app reads them (percent-decoded), so `?%73ecret=` is caught too."""

    def pair(item: str) -> str:
        name, eq, _ = item.partition("=")
        return f"{name}=[redacted]" if eq and unquote_plus(name).strip().lower() in SECRET_PARAMETERS else item

    return _QUERY.sub(lambda m: "?" + "&".join(pair(p) for p in m.group(0)[1:].split("&")), text)


class RedactSecrets(logging.Filter):
    """The one redacting filter, on every handler that prints (the root's, uvicorn's): no
    logger, ours or a library's, prints a secret. httpx logs each request's full URL at INFO,
    and a webhook URL is a credential; uvicorn's access log names query strings. Each string
    argument and the message are redacted like the transcript (bot.core.prompt.redact: `secrets`,
    and whatever looks like one), and query secrets (`?secret=`). A secret only in the
    formatted message (an httpx.URL argument) makes the record its redacted message."""

    def __init__(self, secrets: Sequence[str] = ()) -> None:
        super().__init__()
        self.secrets = tuple(secrets)

    def clean(self, text: str) -> str:
        return redact_query(redact(text, self.secrets))  # whole values first: a URL with its query

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.args, tuple):  # uvicorn's access formatter reads them one by one
            record.args = tuple(self.clean(a) if isinstance(a, str) else a for a in record.args)
        elif isinstance(record.args, dict):
            record.args = {k: self.clean(v) if isinstance(v, str) else v for k, v in record.args.items()}
        if isinstance(record.msg, str):
            record.msg = self.clean(record.msg)
        try:
            message = record.getMessage()
        except (TypeError, ValueError):  # a malformed call: logging reports it, as it would
            return True
        if (clean := self.clean(message)) != message:
            record.msg, record.args = clean, None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = self.clean(record.exc_text)
        if record.stack_info:
            record.stack_info = self.clean(record.stack_info)
        return True


def redact_logs(secrets: Sequence[str]) -> RedactSecrets:
    """Put one RedactSecrets on every handler of the root logger (where every logger that
    propagates prints): what the bot does once logging is configured."""
    redacting = RedactSecrets(secrets)
    for handler in logging.getLogger().handlers:
        handler.addFilter(redacting)
    return redacting


def uvicorn_log_config(redacting: logging.Filter | None = None) -> dict[str, Any]:
    """uvicorn's own logging configuration, with `redacting` (else one that knows no
    configured secret: query secrets and what looks like one) on its handlers: its loggers
    do not propagate to the root's."""
    from uvicorn.config import LOGGING_CONFIG

    config = copy.deepcopy(LOGGING_CONFIG)
    the_filter = redacting or RedactSecrets()
    config.setdefault("filters", {})["redact_secrets"] = {"()": lambda: the_filter}
    for handler in config["handlers"].values():
        handler.setdefault("filters", []).append("redact_secrets")
    return config
