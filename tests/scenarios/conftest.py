"""Shared by scenario tests that run `python -m bot serve` as a real process."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Iterator

import httpx
import pytest

from tests.conftest import free_port
from tests.helpers import SETTLED


class Server:
    def __init__(self, env: dict[str, str], log: Path) -> None:
        self.port = int(env["PORT"])
        self.log = log
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "bot", "serve"],
            env=env,
            stdout=log.open("ab"),
            stderr=subprocess.STDOUT,
            start_new_session=True,  # so SIGKILL can take the deploy command down with it
        )
        self.http = httpx.Client(base_url=f"http://127.0.0.1:{self.port}", timeout=5)
        self._wait_healthy()

    def _wait_healthy(self, timeout: float = 20) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"server exited: {self.log.read_text()}")
            try:
                if self.http.get("/healthz").status_code == 200:
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.05)
        raise AssertionError(f"server not healthy: {self.log.read_text()}")

    def kill(self) -> None:
        os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.kill()
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
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LLM_", "OPENAI_", "ANTHROPIC_"))}
    return {
        **env,
        "REDIS_URL": redis_url,
        "PORT": str(free_port()),
        "GIT_REPO": str(git_repo),
        "DEPLOY_COMMAND": deploy_command,
        "DATA_DIR": str(tmp_path / "data"),
    }


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
