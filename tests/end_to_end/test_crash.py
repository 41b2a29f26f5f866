"""Kill a real `python -m bot serve` with SIGKILL mid-run; a new process must resume the
thread from Redis without deploying twice."""

from __future__ import annotations

import pytest

from tests.conftest import free_port
from tests.end_to_end.conftest import Server, wait_for
from tests.helpers import SETTLED, ledger_lines

pytestmark = [pytest.mark.redis, pytest.mark.processes]


@pytest.mark.parametrize("environment", ["production", "staging"])
def test_sigkill_during_deploy_never_deploys_twice(redis, servers, server_env, ledger, tmp_path, environment):
    # Killed: gone, not cut off; the shortest DEPLOY_LEASE keeps the test from waiting a minute for it.
    first = Server({**server_env, "FAKE_DEPLOY_SECONDS": "60", "DEPLOY_LEASE": "3"}, tmp_path / "first.log")
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

    def say(text: str) -> dict:
        before = second.http.get(f"/threads/{thread_id}").json()["version"]
        second.http.post(f"/threads/{thread_id}/responses", json={"user": "alice", "text": text})
        wait_for(lambda: second.http.get(f"/threads/{thread_id}").json()["version"] > before + 1)
        return second.wait(thread_id, until=SETTLED - {"running"})

    # The interrupted deploy may still be running somewhere: its lock holds until it expires
    # or someone lifts it, and the bot says whose lock it is.
    deploy_id = next(e for e in thread["events"] if e["type"] == "deploy_started")["deploy_id"]
    blocked = say(f"deploy backend v1.2.3 to {environment}")
    assert f"locked by deploy {deploy_id}" in blocked["events"][-1]["message"]
    unlocked = say(f"unlock backend in {environment} --force: its worker was killed")["events"][-1]["message"]
    assert unlocked.startswith(f"Unlocked backend in {environment}")

    # Asking again is a new deploy step, so a protected environment needs a new approval.
    again = say(f"deploy backend v1.2.3 to {environment}")
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
