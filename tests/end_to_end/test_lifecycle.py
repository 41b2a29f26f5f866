"""Approvals over time with real parts: `serve --no-worker` and `python -m bot worker`
processes sharing one Redis (RedisTimers, RedisDeployQueue, RedisFreezes), the ledger deploy
command, and seconds-long approvals. Open mode: the API's `user` is trusted and anyone may
approve, lock and stop deploys."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path

import pytest
import redis as sync_redis

from bot.adapters.redis.keys import Keys
from bot.runtime.clock import utcnow
from bot.testing import cluster
from tests.end_to_end.conftest import Server, wait_for
from tests.helpers import ledger_lines, types

pytestmark = [pytest.mark.redis, pytest.mark.processes]

DEPLOY = "deploy backend v1.2.3 to production"

# A worker whose timer chore takes what is due (with a lease of argv[1] ms, as
# bot.wiring.app.TIMER_LEASE_MS says) and then hangs before handing it to a worker: SIGKILLed
# there, it is a worker killed right after taking a due timer. Everything else is the real
# `python -m bot worker`.
VICTIM = """
import asyncio, sys
import bot.wiring.app
from bot.__main__ import main
from bot.adapters.redis.timers import RedisTimers

bot.wiring.app.TIMER_LEASE_MS = int(sys.argv[1])
taking = RedisTimers.due

async def due(self, now, lease_ms, limit):
    taken = await taking(self, now, lease_ms, limit)
    if taken:
        print("took due timers:", *taken, "lease", lease_ms, flush=True)
        await asyncio.Event().wait()
    return taken

RedisTimers.due = due
sys.exit(main(["worker"]))
"""


class Victim:
    def __init__(self, env: dict[str, str], log: Path, script: Path, lease_ms: int) -> None:
        script.write_text(VICTIM)
        self.log = log
        self.proc = subprocess.Popen(
            [sys.executable, str(script), str(lease_ms)], env=env,
            stdout=log.open("ab"), stderr=subprocess.STDOUT, start_new_session=True,
        )

    def kill(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()


@pytest.fixture
def env(server_env) -> dict[str, str]:
    return {**server_env, "APPROVAL_TTL": "3", "APPROVAL_REMIND": "1", "WORKER_CONCURRENCY": "4"}


@pytest.fixture
def procs(redis):  # `redis` flushes the database before each test
    started: list[cluster.BotProcess | Server | Victim] = []
    yield started
    for p in started:
        if isinstance(p, Server):
            p.stop()
        else:
            p.kill()


def web(env: dict[str, str], tmp_path: Path, procs: list) -> Server:
    server = Server(env, tmp_path / "web.log", "--no-worker")
    procs.append(server)
    return server


def workers(env: dict[str, str], tmp_path: Path, procs: list, count: int) -> list[cluster.BotProcess]:
    started = [cluster.worker(env, tmp_path / f"worker{i}.log") for i in range(count)]
    procs.extend(started)
    return started


def ask(server: Server, text: str, user: str = "alice", until: set[str] | None = None) -> dict:
    thread_id = server.http.post("/threads", json={"message": text, "user": user}).json()["id"]
    return server.wait(thread_id, until) if until else server.wait(thread_id)


def decide(server: Server, thread: dict, user: str, approve: bool = True):
    pending = thread["pending_approval"]
    return server.http.post(f"/threads/{thread['id']}/responses",
                            json={"user": user, "approval_id": pending["approval_id"], "approve": approve})


def events(server: Server, thread_id: str, kind: str) -> list[dict]:
    return [e for e in server.http.get(f"/threads/{thread_id}").json()["events"] if e["type"] == kind]


def test_an_approval_is_reminded_then_expires_once_with_two_workers_and_nothing_deploys(
    env, procs, tmp_path, ledger,
):
    server = web(env, tmp_path, procs)
    workers(env, tmp_path, procs, 2)
    asked = ask(server, DEPLOY)
    assert asked["status"] == "waiting_for_approval"
    thread_id = asked["id"]

    wait_for(lambda: events(server, thread_id, "approval_reminded"), timeout=10)
    thread = server.wait(thread_id, {"done"}, timeout=15)  # expired, and the requester told
    reminders = [e["count"] for e in thread["events"] if e["type"] == "approval_reminded"]
    assert reminders and reminders == sorted(set(reminders)) and set(reminders) <= {1, 2}
    [expired] = [e for e in thread["events"] if e["type"] == "approval_expired"]
    assert expired["approval_id"] == asked["pending_approval"]["approval_id"]
    last = thread["events"][-1]
    assert last["type"] == "done_for_now" and "expired" in last["message"]
    assert "nothing was deployed" in last["message"]
    assert thread["pending_approval"] is None and "deploy_started" not in types(thread)

    late = decide(server, asked, "bob")  # the button clicked after it lapsed
    assert late.status_code == 409 and "expired" in late.json()["detail"]
    assert "nothing was deployed" in late.json()["detail"]
    time.sleep(2.5)  # both workers keep looking for what is due: nothing more is
    again = server.http.get(f"/threads/{thread_id}").json()
    assert again["events"] == thread["events"] and again["status"] == "done"
    assert "approval expired" in server.http.get(f"/threads/{thread_id}.md").text
    assert ledger_lines(ledger) == []
    timers = sync_redis.Redis.from_url(env["REDIS_URL"])
    assert timers.zscore(Keys().timers(), thread_id) is None  # nothing left to fire
    timers.close()


def test_a_timer_taken_by_a_worker_killed_before_running_it_fires_after_the_lease(env, procs, tmp_path):
    env = {**env, "APPROVAL_TTL": "60"}
    server = web(env, tmp_path, procs)
    victim = Victim(env, tmp_path / "victim.log", tmp_path / "victim.py", lease_ms=2000)
    procs.append(victim)
    asked = ask(server, DEPLOY)  # the victim runs it: it waits, and is due its reminder in 1 s
    thread_id = asked["id"]
    wait_for(lambda: f"took due timers: {thread_id}" in victim.log.read_text(), timeout=10)
    victim.kill()
    killed_at = time.monotonic()
    assert events(server, thread_id, "approval_reminded") == []

    workers(env, tmp_path, procs, 1)
    wait_for(lambda: events(server, thread_id, "approval_reminded"), timeout=15)
    assert time.monotonic() - killed_at < 10
    [first, *_] = events(server, thread_id, "approval_reminded")
    assert first["count"] >= 1
    counts = [e["count"] for e in events(server, thread_id, "approval_reminded")]
    assert counts == sorted(set(counts))  # one reminder per interval, never twice
    assert server.http.get(f"/threads/{thread_id}").json()["status"] == "waiting_for_approval"


def test_three_approved_deploys_behind_one_lock_run_in_order_after_unlock(env, procs, tmp_path, ledger):
    env = {**env, "APPROVAL_TTL": "120", "APPROVAL_REMIND": "0", "FAKE_DEPLOY_SECONDS": "0.3"}
    server = web(env, tmp_path, procs)
    workers(env, tmp_path, procs, 2)
    tags = ["v1.2.1", "v1.2.2", "v1.2.3"]
    asked = [ask(server, f"deploy backend {tag} to production") for tag in tags]
    assert [t["status"] for t in asked] == ["waiting_for_approval"] * 3
    locked = ask(server, "lock production: database maintenance", user="carol")
    assert locked["events"][-1]["message"].startswith("Locked production")

    for thread in asked:  # approved one after another: they wait in line in that order
        assert decide(server, thread, "bob").status_code == 202
        server.wait(thread["id"], {"waiting_for_lock"})
    queued = [events(server, t["id"], "deploy_queued")[-1] for t in asked]
    assert [q["position"] for q in queued] == [1, 2, 3]
    time.sleep(1)
    assert ledger_lines(ledger) == []

    unlocked = ask(server, "unlock production", user="carol")
    assert unlocked["events"][-1]["message"].startswith("Unlocked production")
    done = [server.wait(t["id"], {"done"}, timeout=20) for t in asked]
    assert all([e["ok"] for e in t["events"] if e["type"] == "deploy_result"] == [True] for t in done)
    lines = ledger_lines(ledger)
    assert [line.split()[0].partition("-")[0] for line in lines] == [t["id"] for t in asked]
    assert [line.split()[2] for line in lines] == tags


def test_stop_the_line_through_the_api_blocks_deploys_and_resume_lets_the_waiting_one_run(
    env, procs, tmp_path, ledger,
):
    env = {**env, "APPROVAL_TTL": "600", "APPROVAL_REMIND": "0"}
    server = web(env, tmp_path, procs)
    workers(env, tmp_path, procs, 1)
    waiting = ask(server, DEPLOY)  # asked before the line stops
    until = (utcnow() + timedelta(minutes=5)).strftime("%Y-%m-%dT%H:%MZ")
    stopped = ask(server, f"stop all deploys until {until}: incident 4711", user="bob")
    assert "incident 4711" in stopped["events"][-1]["message"]

    blocked = ask(server, "deploy backend v1.2.3 to staging")
    [error] = [e for e in blocked["events"] if e["type"] == "error"]
    assert error["kind"] == "frozen" and "incident 4711" in error["message"]
    assert decide(server, waiting, "carol").status_code == 202  # approved: waits for the freeze
    server.wait(waiting["id"], {"waiting_for_lock"})
    time.sleep(1)
    assert ledger_lines(ledger) == []

    resumed = ask(server, "resume deploys", user="bob")
    assert resumed["events"][-1]["message"].startswith("Deploys to")
    thread = server.wait(waiting["id"], {"done"}, timeout=15)
    assert [e["ok"] for e in thread["events"] if e["type"] == "deploy_result"] == [True]
    assert [line.split()[1:] for line in ledger_lines(ledger)] == [["backend", "v1.2.3", "production"]]
    again = ask(server, "deploy backend v1.2.3 to staging")
    assert "error" not in types(again) and len(ledger_lines(ledger)) == 2
