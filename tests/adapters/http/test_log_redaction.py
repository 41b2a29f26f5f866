"""No log line, ours or a library's (httpx, httpcore, slack_sdk, uvicorn's access log), prints a
secret, even at LOG_LEVEL=DEBUG: one redacting filter on the handlers, installed as `python -m
bot` installs it."""

from __future__ import annotations

import io
import logging
import logging.config
import subprocess
import sys

import httpx
import pytest
from slack_sdk.web.async_client import AsyncWebClient

from bot.__main__ import configure_logging
from bot.adapters.http.logs import uvicorn_log_config
from bot.config.settings import Settings
from bot.testing.cluster import clean_env
from bot.testing.fake_slack import FakeSlack
from tests.adapters.channels.test_webhook_notify import Receiver

pytestmark = [pytest.mark.redis, pytest.mark.processes, pytest.mark.network]

HOOK_PATH = "/hooks/T0001/B0002/webhook-path-credential-4f9a2c"
HOOK_QUERY = "query-credential-77e1"
SIGNING = "webhook-signing-secret-31d7"
API = "shared-api-token-c0ffee42"
BOT_TOKEN = "slack-bot-token-5e6f7a8b"  # not xoxb-shaped: only its being configured redacts it


def test_a_webhook_delivered_at_debug_logs_no_secret(git_repo, deploy_command, tmp_path, redis_url, redis):
    """httpx logged every delivery's full URL at INFO: NOTIFY_WEBHOOK_URL, a credential."""
    receiver = Receiver().start()
    try:
        env = clean_env(
            GIT_REPO=str(git_repo), DEPLOY_COMMAND=deploy_command, DATA_DIR=str(tmp_path / "data"),
            REDIS_URL=redis_url, LOG_LEVEL="DEBUG", API_TOKEN=API, NOTIFY_WEBHOOK_SECRET=SIGNING,
            NOTIFY_WEBHOOK_URL=f"{receiver.url(HOOK_PATH)}?token={HOOK_QUERY}",
        )
        out = subprocess.run([sys.executable, "-m", "bot", "chat", "deploy backend v1.2.3 to staging"],
                             env=env, input="", capture_output=True, text=True, timeout=60)
        assert out.returncode == 0, out.stderr
        assert {p["headers"]["X-Deploybot-Event"] for p in receiver.posts} >= {"deploy.started", "deploy.finished"}
    finally:
        receiver.server.shutdown()
    assert "httpx: HTTP Request: POST [redacted]" in out.stderr  # logged, redacted
    assert "DEBUG httpcore" in out.stderr  # the libraries' debug lines were printed too
    for secret in ("webhook-path-credential", HOOK_QUERY, SIGNING, API):
        assert secret not in out.stderr and secret not in out.stdout


async def test_slack_sdk_httpx_and_uvicorn_print_no_secret(caplog, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    slack = FakeSlack().start()
    settings = Settings(_env_file=None, log_level="DEBUG", api_token=API, slack_bot_token=BOT_TOKEN,
                        slack_signing_secret="slack-signing-secret-9a8b", slack_api_url=slack.base_url)
    caplog.set_level(logging.DEBUG)
    redacting = configure_logging(settings)  # on the root's handlers: caplog's among them
    access = io.StringIO()
    try:
        client = AsyncWebClient(token=BOT_TOKEN, base_url=slack.base_url)
        await client.chat_postMessage(channel="C1", text=f"the token is {API}")  # slack_sdk logs the body
        async with httpx.AsyncClient() as http:
            await http.get(f"{slack.base_url}auth.test", params={"token": BOT_TOKEN})
        logging.config.dictConfig(uvicorn_log_config(redacting))  # as `serve` hands it to uvicorn
        [handler] = logging.getLogger("uvicorn.access").handlers
        assert isinstance(handler, logging.StreamHandler)
        handler.setStream(access)
        logging.getLogger("uvicorn.access").info('%s - "%s %s HTTP/%s" %d', "127.0.0.1:5555", "GET",
                                                 f"/threads?api_token={API}&x={BOT_TOKEN}", "1.1", 200)
    finally:
        slack.stop()
        for handler in logging.getLogger().handlers:
            handler.removeFilter(redacting)
    logged = caplog.text + access.getvalue()
    assert any(r.name.startswith("slack_sdk") for r in caplog.records)  # it did log the call
    assert "HTTP Request: GET" in caplog.text and '"GET /threads?api_token=[redacted] HTTP/1.1" 200' in logged
    assert API not in logged and BOT_TOKEN not in logged
