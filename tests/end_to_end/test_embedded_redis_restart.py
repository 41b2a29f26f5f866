"""`python -m bot serve` with the embedded Redis (no REDIS_URL): the Redis process killed with
SIGKILL is started again by the bot on its own data and port, and what was stored is there."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import httpx
import pytest

from bot.adapters.redis import embedded
from tests.end_to_end.conftest import Server, wait_for

pytestmark = [pytest.mark.redis, pytest.mark.processes, pytest.mark.network]

BACK_WITHIN = 15  # seconds: the promise, a restart of the embedded server without restarting the bot


@pytest.fixture
def env(server_env, tmp_path) -> dict[str, str]:
    env = {k: v for k, v in server_env.items() if k != "REDIS_URL"}
    return {**env, "DATA_DIR": str(tmp_path / "data")}


@pytest.fixture
def data_dir(env) -> Path:
    folder = Path(env["DATA_DIR"])
    yield folder
    embedded.stop(folder)


def redis_pid(data_dir: Path) -> int:
    return int((data_dir / "redis.pid").read_text().strip())


def healthy(server: Server) -> bool:
    try:
        return server.http.get("/healthz").status_code == 200
    except httpx.TransportError:
        return False


def test_the_embedded_redis_killed_is_started_again_with_its_data(env, data_dir, servers, tmp_path):
    server = Server(env, tmp_path / "serve.log")
    servers.append(server)
    started = server.http.post("/threads", json={"message": "deploy backend v1.2.3 to staging", "user": "alice"})
    thread_id = started.json()["id"]
    assert server.wait(thread_id)["status"] == "done"
    url = (data_dir / "redis.url").read_text().strip()
    killed = redis_pid(data_dir)
    os.kill(killed, signal.SIGKILL)

    wait_for(lambda: healthy(server), timeout=BACK_WITHIN)
    assert redis_pid(data_dir) != killed
    assert (data_dir / "redis.url").read_text().strip() == url  # the same port: every client reconnects
    thread = server.http.get(f"/threads/{thread_id}").json()
    assert thread["status"] == "done" and thread["events"][0]["text"] == "deploy backend v1.2.3 to staging"
    again = server.http.post("/threads", json={"message": "deploy backend v1.2.2 to staging", "user": "alice"})
    assert server.wait(again.json()["id"])["status"] == "done"
    log = (tmp_path / "serve.log").read_text()
    assert log.count("The embedded Redis under") == 1, log[-3000:]
    assert f"had stopped: restarted on its own data at {url}" in log
