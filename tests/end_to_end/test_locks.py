"""Locks and history from the user's side: exact chat commands, the API and real deploys."""

from __future__ import annotations

import pytest

from bot.runtime.clock import utcnow
from bot.runtime.ports import Lock
from tests.helpers import eventually, ledger_lines, settle, types

pytestmark = [pytest.mark.redis, pytest.mark.network]

# Open mode (nothing configured): the API's `user` is trusted and anyone may lock, unlock
# and approve. Who may lock where people are configured: tests/core/test_identities.py (and,
# over HTTP with personal tokens, the people API tests).


async def chat(api, text: str, user: str = "alice") -> dict:
    r = await api.post("/threads", json={"message": text, "user": user})
    return await settle(api, r.json()["id"])


async def test_a_locked_environment_is_not_deployed_and_the_holder_is_named(api, app, ledger):
    locked = await chat(api, "lock production: release freeze", user="carol")
    assert locked["events"][-1]["message"].startswith("Locked production: release freeze")

    blocked = await chat(api, "deploy backend v1.2.3 to production")
    assert blocked["status"] == "done" and "approval_requested" not in types(blocked)
    message = blocked["events"][-1]["message"]
    assert "production is locked by carol since" in message and "release freeze" in message
    assert ledger_lines(ledger) == []

    unlocked = await chat(api, "unlock production", user="carol")
    assert unlocked["events"][-1]["message"].startswith("Unlocked production; it had been locked by carol since")
    assert await app.environments.holder("production") is None

    locking = await chat(api, "lock production: incident 42", user="carol")
    refused = (await chat(api, "unlock production", user="bob"))["events"][-1]["message"]
    assert "To take someone else's lock, give a reason" in refused  # carol's: only on purpose
    assert (await app.environments.holder("production")).owner == "manual:carol"
    taken = (await chat(api, "unlock production --force: the incident is over", user="bob"))["events"][-1]
    assert taken["message"].startswith("Unlocked production, taking the lock held by carol since")
    assert await app.environments.holder("production") is None
    # carol is told, in the thread where she locked it (so by her channel)
    told = await api.get(f"/threads/{locking['id']}")
    [event] = [e for e in told.json()["events"] if e["type"] == "lock_taken"]
    assert (event["by"], event["reason"]) == ("bob", "the incident is over")


async def test_an_approved_deploy_that_meets_a_lock_waits_in_line_and_runs_once_it_is_lifted(api, app, ledger):
    thread = await chat(api, "deploy backend v1.2.3 to production")
    await app.environments.acquire(Lock("production", "manual:carol", "db migration", utcnow()), None)
    pending = thread["pending_approval"]
    await api.post(f"/threads/{thread['id']}/responses",
                   json={"user": "bob", "approval_id": pending["approval_id"], "approve": True})
    waiting = await eventually(lambda: _status(api, thread["id"], "waiting_for_lock"), within=20)
    queued = next(e for e in waiting["events"] if e["type"] == "deploy_queued")
    assert queued["position"] == 1 and "production is locked by carol" in queued["behind"]
    assert ledger_lines(ledger) == [] and "error" not in types(waiting)  # its approval is not used up
    await chat(api, "unlock production", user="carol")  # her own lock: the line moves
    done = await eventually(lambda: _status(api, thread["id"], "done"), within=20)
    assert types(done)[-3:] == ["deploy_started", "deploy_result", "done_for_now"]
    assert len(ledger_lines(ledger)) == 1


async def _status(api, thread_id: str, status: str) -> dict | None:
    thread = (await api.get(f"/threads/{thread_id}")).json()
    return thread if thread["status"] == status else None


async def test_deploys_hold_the_lock_while_running_and_release_it(api, app, ledger, monkeypatch):
    monkeypatch.setenv("FAKE_DEPLOY_SECONDS", "1")
    r = await api.post("/threads", json={"message": "deploy frontend v1.2.2 to staging", "user": "alice"})
    await eventually(lambda: ledger_lines(ledger), within=10)  # the deploy command is running
    holder = await app.environments.holder("staging", "frontend")
    assert holder.owner.startswith(r.json()["id"] + "-") and holder.reason == "deploying frontend v1.2.2"
    assert await app.environments.holder("staging") is None  # only frontend's lock: backend may deploy
    second = await chat(api, "deploy frontend v1.2.1 to staging")
    assert "frontend in staging is locked by deploy " + holder.owner in second["events"][-1]["message"]
    await settle(api, r.json()["id"])
    assert await app.environments.holder("staging", "frontend") is None
    assert len(ledger_lines(ledger)) == 1


async def test_whats_on_an_environment_answers_from_recorded_results(api, app, ledger):
    empty = await chat(api, "what's on staging?")
    assert empty["events"][-1]["message"] == "Nothing has been deployed to staging by deploybot yet."
    await chat(api, "deploy backend v1.2.2 to staging")
    await chat(api, "deploy backend v1.2.3 to staging")
    await chat(api, "deploy frontend v1.2.1 to staging")
    answer = (await chat(api, "what's on staging?"))["events"][-1]["message"]
    assert answer.startswith("On staging: backend v1.2.3 (") and "; frontend v1.2.1 (" in answer

    listed = (await api.get("/deploys", params={"environment": "staging"})).json()["deploys"]
    assert [(d["service"], d["tag"]) for d in listed] == [
        ("frontend", "v1.2.1"), ("backend", "v1.2.3"), ("backend", "v1.2.2")
    ]
    assert listed[0]["ok"] is True and listed[0]["thread_id"]
    assert (await api.get("/deploys", params={"environment": "moon"})).status_code == 422
