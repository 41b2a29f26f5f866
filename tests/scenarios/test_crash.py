"""Kill a real `python -m bot serve` with SIGKILL mid-run; a new process must resume the
thread from Redis without deploying twice."""

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
from tests.helpers import SETTLED, ledger_lines


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


@pytest.mark.parametrize("environment", ["production", "staging"])
def test_sigkill_during_deploy_never_deploys_twice(redis, servers, server_env, ledger, tmp_path, environment):
    first = Server({**server_env, "FAKE_DEPLOY_SECONDS": "60"}, tmp_path / "first.log")
    servers.append(first)
    r = first.http.post("/threads", json={"message": f"deploy backend v1.2.3 to {environment}", "user": "alice"})
    thread_id = r.json()["id"]
    if environment == "production":
        pending = first.wait(thread_id)["pending_approval"]
        first.http.post(
            f"/threads/{thread_id}/responses",
            json={"user": "bob", "approval_id": pending["approval_id"], "approve": True},
        )
    wait_for(lambda: len(ledger_lines(ledger)) == 1)  # the deploy command is running now
    first.kill()

    second = Server({**server_env, "FAKE_DEPLOY_SECONDS": "0"}, tmp_path / "second.log")
    servers.append(second)
    thread = second.wait(thread_id)

    assert thread["status"] == "waiting_for_human"
    kinds = [(e["type"], e.get("kind")) for e in thread["events"]]
    assert ("deploy_started", None) in kinds and ("error", "interrupted") in kinds
    assert "deploy_result" not in [t for t, _ in kinds]
    assert "do not know whether it finished" in thread["events"][-1]["message"]
    assert len(ledger_lines(ledger)) == 1

    # Asking again is a new deploy step, so a protected environment needs a new approval.
    second.http.post(
        f"/threads/{thread_id}/responses",
        json={"user": "alice", "text": f"deploy backend v1.2.3 to {environment}"},
    )
    again = second.wait(thread_id, until=SETTLED - {"waiting_for_human"})
    if environment == "production":
        assert again["status"] == "waiting_for_approval"
        assert again["pending_approval"]["approval_id"] != pending["approval_id"]
        assert len(ledger_lines(ledger)) == 1
    else:
        assert again["status"] == "done"
        assert len(ledger_lines(ledger)) == 2


def test_killed_while_waiting_for_approval_resumes_in_another_process(redis, servers, server_env, ledger, tmp_path):
    first = Server(server_env, tmp_path / "first.log")
    servers.append(first)
    thread_id = first.http.post(
        "/threads", json={"message": "deploy frontend v1.2.2 to production", "user": "alice"}
    ).json()["id"]
    pending = first.wait(thread_id)["pending_approval"]
    first.kill()

    second = Server({**server_env, "PORT": str(free_port())}, tmp_path / "second.log")
    servers.append(second)
    r = second.http.post(
        f"/threads/{thread_id}/responses",
        json={"user": "bob", "approval_id": pending["approval_id"], "approve": True},
    )
    assert r.status_code == 202
    done = second.wait(thread_id)
    assert done["status"] == "done"
    assert [line.split(" ", 1)[1] for line in ledger_lines(ledger)] == ["frontend v1.2.2 production"]
