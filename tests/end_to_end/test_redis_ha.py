"""deploybot on Redis Cluster and through Redis Sentinel, against real servers the test
session starts from the binary deploybot ships (bot/testing/ha.py).

Cluster: the whole API scenario (list tags, propose, approve, deploy) with REDIS_CLUSTER=true,
its keys spread over three masters. Sentinel: the master is SIGKILLed while an approved
deploy runs; the Sentinels promote the replica, the run carries on there, nothing the API
acknowledged is lost and the deploy command ran exactly once. And a short chaos run with a
failover under load (`python -m bot.testing.chaos --sentinel` is the long one).
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import redis as sync_redis

from bot.testing import cluster
from bot.testing.chaos import FIGURES, run
from bot.testing.cluster import free_port
from bot.testing.ha import MASTER_NAME, ClusterServers, SentinelServers
from tests.helpers import ledger_lines, reply, settle, types

pytestmark = [pytest.mark.redis, pytest.mark.processes, pytest.mark.network]

# --- Cluster ---------------------------------------------------------------------------------


@pytest.fixture
def settings(settings, cluster_servers: ClusterServers, redis_cluster):  # redis_cluster: every master flushed
    return settings.model_copy(update={"redis_url": cluster_servers.url, "redis_cluster": True})


async def test_a_deploy_with_approval_on_a_three_master_cluster(api, app, fake_llm, ledger, cluster_servers):
    assert type(app.redis).__name__ == "RedisCluster"
    r = await api.post("/threads", json={"message": "list tags", "user": "alice"})
    listed = await settle(api, r.json()["id"])
    assert types(listed)[:3] == ["user_message", "list_git_tags", "list_git_tags_result"], listed["events"]

    fake_llm.script(
        reply(intent="list_git_tags"),
        reply(intent="deploy", service="backend", tag="v1.2.3", environment="production", reason="newest tag"),
    )
    r = await api.post("/threads", json={"message": "deploy the latest backend to production", "user": "alice"})
    thread = await settle(api, r.json()["id"])
    assert thread["status"] == "waiting_for_approval", thread["events"]
    fake_llm.script(reply(intent="done_for_now", message="Deployed."))
    r = await api.post(f"/threads/{thread['id']}/responses", json={
        "user": "bob", "approval_id": thread["pending_approval"]["approval_id"], "approve": True,
    })
    assert r.status_code == 202, r.text
    done = await settle(api, thread["id"])
    assert done["status"] == "done"
    assert types(done)[5:] == ["human_response", "deploy_started", "deploy_result", "done_for_now"]
    assert done["events"][7]["ok"] is True
    assert len(ledger_lines(ledger)) == 1
    assert {t["id"] for t in (await api.get("/threads")).json()["threads"]} >= {thread["id"], listed["id"]}
    # Really sharded: the threads, the work stream, the lock and the history are spread out.
    holding = [n for n in cluster_servers.nodes if sync_redis.Redis(port=n.port).dbsize()]
    assert len(holding) >= 2


# --- Sentinel --------------------------------------------------------------------------------


@pytest.fixture
def sentinels(tmp_path: Path) -> Iterator[SentinelServers]:
    servers = SentinelServers(tmp_path / "redis")
    yield servers
    servers.stop()


async def test_a_reconnect_asks_the_sentinels_and_never_lands_on_the_old_master_back_up(sentinels):
    """redis-py reconnects a dropped connection to the address it had (its issues #3874,
    #3560). If the old master is back by then, restarted and not yet made a replica, it takes
    writes that vanish when it becomes one: the chaos suite lost threads that way."""
    from bot.adapters.redis.connect import client
    from bot.core.redis_target import RedisTarget

    redis = client(RedisTarget("sentinel", sentinels=tuple(
        ("127.0.0.1", s.port) for s in sentinels.sentinels), master=MASTER_NAME))
    try:
        connection = await redis.connection_pool.get_connection()
        assert connection.port == sentinels.master_port()
        old = await asyncio.to_thread(sentinels.kill_master)
        new = await asyncio.to_thread(sentinels.wait_for_failover, old.port)
        await asyncio.to_thread(sentinels.heal)  # the old master is up again, still a master
        await connection.disconnect()  # as a command's error does, before it is retried
        await connection.send_command("SET", "written", "after the failover")
        assert await connection.read_response() in (b"OK", "OK")
        assert connection.port == new.port != old.port
        with sync_redis.Redis(port=new.port) as promoted:
            assert promoted.get("written") == b"after the failover"
        await redis.connection_pool.release(connection)
    finally:
        await redis.aclose()


def get(http: httpx.Client, path: str) -> dict[str, Any]:
    """A read, repeated through a failover (the API answers 503 while Redis is away)."""
    deadline = time.monotonic() + 30
    while True:
        try:
            r = http.get(path)
            if r.status_code == 200:
                return r.json()
        except httpx.TransportError:
            pass
        assert time.monotonic() < deadline, f"GET {path} kept failing"
        time.sleep(0.1)


def wait_status(http: httpx.Client, thread_id: str, until: set[str], timeout: float = 30) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while (body := get(http, f"/threads/{thread_id}"))["status"] not in until:
        assert time.monotonic() < deadline, f"thread not in {until}: {types(body)}"
        time.sleep(0.05)
    return body


def test_the_master_dies_mid_deploy_and_the_run_finishes_on_the_promoted_replica(
    sentinels, git_repo, deploy_command, ledger, tmp_path
):
    env = cluster.clean_env(
        REDIS_SENTINELS=sentinels.addresses, REDIS_SENTINEL_MASTER=MASTER_NAME, PORT=str(free_port()),
        GIT_REPO=str(git_repo), DEPLOY_COMMAND=deploy_command, DATA_DIR=str(tmp_path / "data"),
        FAKE_DEPLOY_SECONDS="4",
    )
    server = cluster.web(env, tmp_path / "serve.log")
    http = httpx.Client(base_url=f"http://127.0.0.1:{env['PORT']}", timeout=20)
    try:
        r = http.post("/threads", json={"message": "deploy backend v1.2.3 to production", "user": "alice"})
        assert r.status_code == 201, r.text
        thread_id = r.json()["id"]
        pending = wait_status(http, thread_id, {"waiting_for_approval"})["pending_approval"]
        r = http.post(f"/threads/{thread_id}/responses",
                      json={"user": "bob", "approval_id": pending["approval_id"], "approve": True})
        assert r.status_code == 202, r.text
        deadline = time.monotonic() + 20
        while not ledger_lines(ledger):  # the deploy command is running (for 4 s)
            assert time.monotonic() < deadline, "the deploy did not start"
            time.sleep(0.02)

        with sync_redis.Redis(port=sentinels.master_port()) as master:  # the bot WAITed for the replica
            assert int(master.info("commandstats")["cmdstat_wait"]["calls"]) >= 4
        old = sentinels.kill_master()
        new = sentinels.wait_for_failover(old.port)
        assert new.port != old.port
        # What was acknowledged before the master died is on the promoted replica (WAIT):
        # the decision, and deploy_started, recorded before the command was started.
        with sync_redis.Redis(port=new.port) as promoted:
            before = [e.decode() for e in promoted.lrange(f"deploybot:thread:{{{thread_id}}}:events", 0, -1)]
        assert any('"human_response"' in e for e in before) and any('"deploy_started"' in e for e in before)

        done = wait_status(http, thread_id, {"done", "waiting_for_human", "failed"})
        assert done["status"] == "done", types(done)
        seen = Counter(types(done))
        assert seen["user_message"] == 1 and seen["human_response"] == 1  # what the API acknowledged
        assert seen["deploy_started"] == 1 and seen["deploy_result"] == 1 and seen["error"] == 0, types(done)
        assert next(e for e in done["events"] if e["type"] == "deploy_result")["ok"] is True
        assert len(ledger_lines(ledger)) == 1  # the deploy command ran exactly once
        # The thread lives on the promoted server: the run finished there.
        with sync_redis.Redis(port=new.port) as promoted:
            assert promoted.llen(f"deploybot:thread:{{{thread_id}}}:events") == len(done["events"])
        # Later work goes to the new master too.
        r = http.post("/threads", json={"message": "list tags", "user": "alice"})
        assert r.status_code == 201, r.text
        listed = wait_status(http, r.json()["id"], {"done", "waiting_for_human"})
        assert "list_git_tags_result" in types(listed)
    finally:
        http.close()
        server.kill()


def test_chaos_short_with_a_sentinel_failover(tmp_path, capsys):
    report = run(threads=8, kills=4, workdir=tmp_path, sentinel=True)
    out = capsys.readouterr().out
    assert {k: report[k] for k in FIGURES} == {k: 0 for k in FIGURES}, out
    assert report["failovers"] == 1 and report["kills"] == 4 and report["deploys"] > 0, out
