"""REDIS_URL with a password, end to end: a real Redis that requires it, the real app, a
deploy command that is handed the URL on purpose (DEPLOY_ENV_PASSTHROUGH) and prints it.
The password shows up nowhere people, logs or the model read."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from urllib.parse import urlsplit

import pytest

from bot.adapters.redis.embedded import server_binary
from bot.testing.cluster import free_port
from tests.helpers import settle

pytestmark = [pytest.mark.redis, pytest.mark.processes, pytest.mark.network]

PASSWORD = "s3cr3t-redis-pass-9"
SHOW = """
import os, sys
from urllib.parse import urlsplit
print("env", " ".join(sorted(os.environ)))
print("cache", os.environ["CACHE_URL"])
print("auth", urlsplit(os.environ["CACHE_URL"]).password)
"""


@pytest.fixture
def guarded_redis(tmp_path) -> Iterator[str]:
    """A Redis-compatible server that refuses clients without PASSWORD."""
    port = free_port()
    proc = subprocess.Popen(
        [server_binary(), "--bind", "127.0.0.1", "--port", str(port), "--requirepass", PASSWORD,
         "--save", "", "--appendonly", "no", "--dir", str(tmp_path)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.5) as s:
                    s.sendall(b"PING\r\n")
                    assert s.recv(64).startswith(b"-NOAUTH")  # up, and it wants the password
                    break
            except OSError:
                assert time.monotonic() < deadline, "redis with requirepass did not start"
                time.sleep(0.02)
        yield f"redis://:{PASSWORD}@127.0.0.1:{port}/0"
    finally:
        proc.kill()
        proc.wait()


@pytest.fixture
def settings(settings, guarded_redis, tmp_path):
    script = tmp_path / "show_env.py"
    script.write_text(SHOW)
    return settings.model_copy(update={
        "redis_url": guarded_redis, "deploy_command": f"{sys.executable} {script}",
        "deploy_env_passthrough": "CACHE_URL",
    })


async def test_the_redis_password_reaches_no_output_transcript_log_or_prompt(
    api, settings, guarded_redis, fake_llm, monkeypatch, caplog
):
    caplog.set_level("INFO")
    for name, value in {"REDIS_URL": guarded_redis, "CACHE_URL": guarded_redis,
                        "SLACK_BOT_TOKEN": "xoxb-1-not-for-deploys", "FOO": "bar"}.items():
        monkeypatch.setenv(name, value)  # the bot's own environment, as in production
    assert PASSWORD in settings.secrets()

    r = await api.post("/threads", json={"message": "deploy backend v1.2.3 to staging", "user": "alice"})
    thread = await settle(api, r.json()["id"])
    result = next(e for e in thread["events"] if e["type"] == "deploy_result")
    assert result["ok"], result
    env, cache, auth = result["output"].splitlines()
    assert {"REDIS_URL", "SLACK_BOT_TOKEN", "FOO"}.isdisjoint(env.split()) and "CACHE_URL" in env.split()
    assert cache == f"cache redis://:[redacted]@{urlsplit(guarded_redis).netloc.split('@')[1]}/0"
    assert auth == "auth [redacted]"

    fake_llm.script('{"intent": "done_for_now", "message": "it went fine"}')  # the model reads the output
    await api.post(f"/threads/{thread['id']}/responses", json={"text": "how did it go?", "user": "alice"})
    thread = await settle(api, thread["id"])
    assert fake_llm.prompts and "auth [redacted]" in fake_llm.prompts[-1]

    shown = [
        json.dumps(thread), json.dumps((await api.get("/threads")).json()),
        (await api.get(f"/threads/{thread['id']}.md")).text, caplog.text, *fake_llm.prompts,
    ]
    assert not [text for text in shown if PASSWORD in text]
