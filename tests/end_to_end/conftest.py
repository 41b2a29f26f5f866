"""Shared by scenario tests that run `python -m bot serve` as a real process."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from bot.testing import cluster
from bot.testing.cluster import free_port
from tests.helpers import SETTLED


class Server:
    """`python -m bot serve [args]` as a real process, and an API client for it."""

    def __init__(self, env: dict[str, str], log: Path, *args: str) -> None:
        self.process = cluster.web(env, log, *args)
        token = env.get("API_TOKEN")
        self.http = httpx.Client(base_url=f"http://127.0.0.1:{env['PORT']}", timeout=5,
                                 headers={"Authorization": f"Bearer {token}"} if token else {})

    def kill(self) -> None:
        self.process.kill()

    def stop(self) -> None:
        self.process.kill()
        self.http.close()

    def wait(self, thread_id: str, until: set[str] = SETTLED, timeout: float = 20) -> dict:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            body = self.http.get(f"/threads/{thread_id}").json()
            if body["status"] in until:
                return body
            time.sleep(0.05)
        raise AssertionError(f"thread not in {until}: {body}")


@pytest.fixture
def server_env(redis_url, git_repo, deploy_command, tmp_path) -> dict[str, str]:
    return cluster.clean_env(
        REDIS_URL=redis_url, PORT=str(free_port()), GIT_REPO=str(git_repo),
        DEPLOY_COMMAND=deploy_command, DATA_DIR=str(tmp_path / "data"),
    )


@pytest.fixture
def servers(server_env, tmp_path) -> Iterator[list[Server]]:
    started: list[Server] = []
    yield started
    for s in started:
        s.stop()


def wait_for(predicate, timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)
