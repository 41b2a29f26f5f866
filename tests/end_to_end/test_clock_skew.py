"""Real processes whose clocks are off (run under `faketime`) against a real Redis: each
measures its clock against Redis's TIME, says how far off it is, and runs no timed work; a
well-clocked worker beside it keeps working."""

from __future__ import annotations

import shutil
import time

import httpx
import pytest

from bot.testing import cluster
from bot.testing.cluster import BotProcess, free_port
from tests.end_to_end.conftest import Server, wait_for
from tests.helpers import ledger_lines

pytestmark = [
    pytest.mark.redis, pytest.mark.processes, pytest.mark.network,
    pytest.mark.skipif(shutil.which("faketime") is None, reason="faketime is not installed (make install)"),
]

TOKEN = "skew-test-token"


@pytest.fixture
def env(server_env) -> dict[str, str]:
    return {**server_env, "API_TOKEN": TOKEN, "APPROVAL_TTL": "120"}


@pytest.fixture
def procs(redis):  # `redis` flushes the database before each test
    started: list[BotProcess | Server] = []
    yield started
    for p in started:
        p.kill()


def skewed(args: list[str], env: dict[str, str], log, offset: str) -> BotProcess:
    return BotProcess(args, env, log, prefix=["faketime", "-f", offset])


def test_a_worker_five_minutes_ahead_says_so_and_expires_nothing_while_a_good_worker_works(
    env, procs, tmp_path, ledger,
):
    web = Server(env, tmp_path / "web.log", "--no-worker")
    procs.append(web)
    ahead = skewed(["worker"], env, tmp_path / "ahead.log", "+300s")
    procs.append(ahead)
    ahead.wait_for_log("s ahead of Redis's (more than 2 s): it runs no timed work")
    procs.append(cluster.worker(env, tmp_path / "good.log"))

    started = web.http.post("/threads", json={"message": "deploy backend v1.2.3 to production", "user": "alice"})
    thread_id = started.json()["id"]
    pending = web.wait(thread_id)["pending_approval"]
    assert pending is not None
    # The worker ahead would find the approval (120 s) long expired at each timer (every
    # second): give it a few to do so.
    time.sleep(3)
    thread = web.http.get(f"/threads/{thread_id}").json()
    assert [e["type"] for e in thread["events"] if "expire" in e["type"]] == []
    answer = web.http.post(f"/threads/{thread_id}/responses",
                           json={"user": "bob", "approval_id": pending["approval_id"], "approve": True})
    assert answer.status_code == 202, answer.text
    assert web.wait(thread_id, until={"done", "failed"})["status"] == "done"
    assert [line.split(" ", 1)[1] for line in ledger_lines(ledger)] == ["backend v1.2.3 production"]
    assert "taking work" in ahead.log.read_text()  # it ran all along, and ran nothing


def test_a_web_five_minutes_behind_says_so_on_healthz_and_takes_no_approval(env, procs, tmp_path):
    good = Server(env, tmp_path / "good.log")  # a web with a worker, well clocked
    procs.append(good)
    behind_env = {**env, "PORT": str(free_port())}
    behind = skewed(["serve", "--no-worker"], behind_env, tmp_path / "behind.log", "-300s")
    procs.append(behind)
    health = f"http://127.0.0.1:{behind_env['PORT']}/healthz"

    def answer() -> httpx.Response | None:
        try:
            said = httpx.get(health, timeout=2)
        except httpx.TransportError:
            return None
        return said if "clock" in said.json() else None

    wait_for(lambda: answer() is not None, timeout=30)
    said = answer()
    assert said is not None and said.status_code == 503
    assert said.json()["ok"] is False and said.json()["skew"] < -290
    assert "s behind Redis's (more than 2 s): it runs no timed work" in said.json()["clock"]
    assert "behind Redis's" in behind.log.read_text()

    thread_id = good.http.post(
        "/threads", json={"message": "deploy backend v1.2.3 to production", "user": "alice"}).json()["id"]
    pending = good.wait(thread_id)["pending_approval"]
    refused = httpx.post(
        f"http://127.0.0.1:{behind_env['PORT']}/threads/{thread_id}/responses",
        json={"user": "bob", "approval_id": pending["approval_id"], "approve": True},
        headers={"Authorization": f"Bearer {TOKEN}"}, timeout=5,
    )
    assert refused.status_code == 409 and "behind Redis's" in refused.text
    assert good.http.get(f"/threads/{thread_id}").json()["status"] == "waiting_for_approval"
