"""`serve --no-worker` plus `python -m bot worker` processes sharing one Redis."""

from __future__ import annotations

import time

import pytest
from redis import Redis as SyncRedis

from bot.adapters.redis.keys import Keys
from bot.testing import cluster
from bot.testing.chaos import FIGURES, run
from tests.end_to_end.conftest import Server, wait_for
from tests.helpers import ledger_lines, reply

pytestmark = [pytest.mark.redis, pytest.mark.processes, pytest.mark.network]

TOKEN = "workers-test-token"


@pytest.fixture
def env(server_env, fake_llm) -> dict[str, str]:
    return {**server_env, "API_TOKEN": TOKEN, "LLM_BASE_URL": fake_llm.base_url,
            "LLM_MODEL": "fake", "LLM_API_KEY": "unused", "WORKER_CONCURRENCY": "4"}


@pytest.fixture
def procs(redis):  # `redis` flushes the database before each test
    started: list[cluster.BotProcess | Server] = []
    yield started
    for p in started:
        p.kill()


def web(env: dict[str, str], tmp_path, procs) -> Server:
    server = Server(env, tmp_path / "web.log", "--no-worker")
    procs.append(server)
    return server


def holder(redis_url: str, thread_id: str) -> str:
    import redis

    r = redis.Redis.from_url(redis_url)
    deadline = time.monotonic() + 10
    while not (lease := r.get(f"deploybot:thread:{{{thread_id}}}:lease")):
        assert time.monotonic() < deadline, "no worker took the thread"
        time.sleep(0.02)
    return lease.decode()


def test_web_only_hands_over_and_a_worker_started_later_runs_the_thread(env, procs, tmp_path, fake_llm):
    fake_llm.script(reply(intent="done_for_now", message="hello to you"))
    server = web(env, tmp_path, procs)
    thread_id = server.http.post("/threads", json={"message": "hello", "user": "bob"}).json()["id"]
    with SyncRedis.from_url(env["REDIS_URL"]) as r:  # handed over: waiting in the work stream
        wait_for(lambda: r.xlen(Keys().work()) == 1)
    assert server.http.get(f"/threads/{thread_id}").json()["status"] == "running"
    assert fake_llm.prompts == []  # nobody runs threads in the web process
    procs.append(cluster.worker(env, tmp_path / "worker.log"))
    assert server.wait(thread_id)["events"][-1]["message"] == "hello to you"


def test_a_killed_workers_thread_is_finished_by_the_other_worker(env, procs, tmp_path, fake_llm, redis_url):
    fake_llm.delay = 1.0
    fake_llm.default = reply(intent="done_for_now", message="done")
    server = web(env, tmp_path, procs)
    workers = [cluster.worker(env, tmp_path / f"worker{i}.log") for i in range(2)]
    procs.extend(workers)
    thread_id = server.http.post("/threads", json={"message": "hello", "user": "bob"}).json()["id"]
    owner = holder(redis_url, thread_id)
    victim = next(w for w in workers if f"-{w.pid}-" in owner)
    wait_for(lambda: fake_llm.prompts)  # the victim is waiting for the model
    victim.kill()  # mid-call to the model
    thread = server.wait(thread_id)
    assert [e["type"] for e in thread["events"]] == ["user_message", "done_for_now"]
    assert len(fake_llm.prompts) == 2  # the survivor asked again; the answer was recorded once


def test_sigterm_lets_the_deploy_in_progress_finish_then_exits(env, procs, tmp_path, ledger):
    env = {**env, "FAKE_DEPLOY_SECONDS": "1.5"}
    server = web(env, tmp_path, procs)
    worker = cluster.worker(env, tmp_path / "worker.log")
    procs.append(worker)
    started = server.http.post("/threads", json={"message": "deploy backend v1.2.3 to staging", "user": "bob"})
    thread_id = started.json()["id"]
    wait_for(lambda: ledger_lines(ledger))  # the deploy command has started
    assert worker.terminate(timeout=30) == 0
    thread = server.http.get(f"/threads/{thread_id}").json()
    assert thread["status"] == "done", thread["events"]
    assert [e["ok"] for e in thread["events"] if e["type"] == "deploy_result"] == [True]
    assert "stopped" in worker.log.read_text()


def test_chaos_short(tmp_path, capsys):
    """The CI-sized chaos run: `python -m bot.testing.chaos` is the long one."""
    report = run(threads=16, kills=10, workdir=tmp_path)
    out = capsys.readouterr().out
    assert {k: report[k] for k in FIGURES} == {k: 0 for k in FIGURES}, out
    assert report["kills"] == 10 and report["redis_restarts"] == 1 and report["threads"] >= 16
    assert report["deploys"] > 0 and "rejections" in out
