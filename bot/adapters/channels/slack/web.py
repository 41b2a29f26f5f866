"""What every Slack job shares: the Web API client, and how long a delivery is remembered."""

from __future__ import annotations

from slack_sdk.http_retry.builtin_async_handlers import (
    AsyncConnectionErrorRetryHandler,
    AsyncRateLimitErrorRetryHandler,
    AsyncServerErrorRetryHandler,
)
from slack_sdk.web.async_client import AsyncWebClient

EVENT_TTL = 24 * 3600  # Slack retries for a few minutes; a day is plenty to spot a repeat


def client(token: str, api_url: str) -> AsyncWebClient:
    return AsyncWebClient(
        token=token,
        base_url=api_url,
        retry_handlers=[
            AsyncConnectionErrorRetryHandler(max_retry_count=2),
            AsyncRateLimitErrorRetryHandler(max_retry_count=3),  # waits for Retry-After
            AsyncServerErrorRetryHandler(max_retry_count=2),
        ],
    )
