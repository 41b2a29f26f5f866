"""Whole conversations over the HTTP API, with the real BAML runtime parsing scripted model text."""

from __future__ import annotations

import asyncio
import subprocess

import httpx
import pytest

from bot.testing.fake_llm import FakeLlm
from tests.helpers import ledger_lines, reply, settle, types

pytestmark = [pytest.mark.redis, pytest.mark.processes, pytest.mark.network]

LATEST = "deploy the latest backend to production"


def commit_of(repo, tag: str) -> str:
    out = subprocess.run(["git", "-C", str(repo), "rev-parse", f"{tag}^{{commit}}"], capture_output=True, text=True)
    return out.stdout.strip()


async def launch(api: httpx.AsyncClient, message: str = LATEST, user: str = "alice") -> str:
    r = await api.post("/threads", json={"message": message, "user": user})
    assert r.status_code == 201, r.text
    return r.json()["id"]


async def paused_for_approval(api: httpx.AsyncClient, fake_llm: FakeLlm) -> dict:
    fake_llm.script(
        reply(intent="list_git_tags"),
        reply(intent="deploy", service="backend", tag="v1.2.3", environment="production", reason="newest tag"),
    )
    thread = await settle(api, await launch(api))
    assert thread["status"] == "waiting_for_approval"
    return thread


async def test_list_tags_propose_approve_deploy_once_done(api, fake_llm, ledger, git_repo):
    thread = await paused_for_approval(api, fake_llm)
    assert types(thread) == [
        "user_message", "list_git_tags", "list_git_tags_result", "deploy", "approval_requested"
    ]
    tags = thread["events"][2]["tags"]
    assert [t["name"] for t in tags] == ["v1.2.3", "v1.2.2", "v1.2.1"]  # newest first
    pending = thread["pending_approval"]
    assert pending["commit"] == commit_of(git_repo, "v1.2.3")
    assert pending["requested_by"] == "alice" and pending["environment"] == "production"
    assert ledger_lines(ledger) == []  # paused before anything ran

    fake_llm.script(reply(intent="done_for_now", message="Deployed backend v1.2.3 to production."))
    r = await api.post(
        f"/threads/{thread['id']}/responses",
        json={"user": "bob", "approval_id": pending["approval_id"], "approve": True},
    )
    assert r.status_code == 202, r.text
    done = await settle(api, thread["id"])

    assert done["status"] == "done"
    assert types(done)[5:] == ["human_response", "deploy_started", "deploy_result", "done_for_now"]
    result = done["events"][7]
    assert result["ok"] is True and result["approved_by"] == "bob"
    assert result["commit"] == pending["commit"]
    lines = ledger_lines(ledger)
    assert len(lines) == 1 and lines[0].endswith("backend v1.2.3 production")
    assert lines[0].split()[0] == result["deploy_id"]
    assert "<deploy_result" in fake_llm.prompts[-1] and 'decision="approved"' in fake_llm.prompts[-1]

    # A finished thread's outcome never changes: cancelling it is refused, and records nothing.
    refused = await api.post(f"/threads/{thread['id']}/cancel", json={"user": "alice"})
    assert refused.status_code == 409 and "this thread is finished (deployed); nothing to cancel" in refused.text
    after = (await api.get(f"/threads/{thread['id']}")).json()
    assert after["status"] == "done" and len(after["events"]) == len(done["events"])


async def test_rejection_feedback_makes_the_model_replan(api, fake_llm, ledger):
    thread = await paused_for_approval(api, fake_llm)
    fake_llm.script(reply(intent="deploy", service="backend", tag="v1.2.2", environment="production"))
    r = await api.post(
        f"/threads/{thread['id']}/responses",
        json={
            "user": "bob",
            "approval_id": thread["pending_approval"]["approval_id"],
            "approve": False,
            "text": "v1.2.3 has a data migration bug, ship v1.2.2",
        },
    )
    assert r.status_code == 202
    again = await settle(api, thread["id"])
    assert again["status"] == "waiting_for_approval"
    assert again["pending_approval"]["tag"] == "v1.2.2"
    assert again["pending_approval"]["approval_id"] != thread["pending_approval"]["approval_id"]
    assert "ship v1.2.2" in fake_llm.prompts[-1] and 'decision="rejected"' in fake_llm.prompts[-1]
    assert ledger_lines(ledger) == []


async def test_free_text_while_approval_pending_is_a_rejection_never_an_approval(api, fake_llm, ledger):
    thread = await paused_for_approval(api, fake_llm)
    refused = await api.post(f"/threads/{thread['id']}/responses", json={"user": "bob", "text": "LGTM!"})
    assert refused.status_code == 409 and "cannot approve" in refused.json()["detail"]
    fake_llm.script(reply(intent="request_more_information", message="Which tag then?"))
    r = await api.post(f"/threads/{thread['id']}/responses", json={"user": "bob", "text": "not v1.2.3"})
    assert r.status_code == 202
    after = await settle(api, thread["id"])
    decision = after["events"][5]
    assert decision["type"] == "human_response" and decision["approve"] is False
    assert after["status"] == "waiting_for_human"
    assert ledger_lines(ledger) == []


async def test_three_errors_in_a_row_ask_a_human(api, fake_llm, ledger):
    fake_llm.script("I am not sure.", "```json\n{\"intent\": \"fly_to_the_moon\"}\n```", "{}")
    thread = await settle(api, await launch(api))
    assert thread["status"] == "waiting_for_human"
    errors = [e for e in thread["events"] if e["type"] == "error"]
    assert [e["kind"] for e in errors] == ["llm", "llm", "llm"]
    assert "not a valid next step" in errors[0]["message"]
    ask = thread["events"][-1]
    assert ask["type"] == "request_more_information" and ask["source"] == "bot"
    assert "3 errors in a row" in ask["message"]
    assert len(fake_llm.prompts) == 3
    assert "<error kind=\"llm\">" in fake_llm.prompts[2]  # the model saw its earlier errors


async def test_stale_or_repeated_decisions_are_409_and_append_nothing(api, fake_llm):
    thread = await paused_for_approval(api, fake_llm)
    url = f"/threads/{thread['id']}/responses"
    r = await api.post(url, json={"user": "bob", "approval_id": "not-the-id", "approve": True})
    assert r.status_code == 409
    r = await api.post(url, json={"user": "bob", "approve": True})
    assert r.status_code == 422  # approve needs the approval_id it decides on
    assert (await api.get(f"/threads/{thread['id']}")).json()["version"] == thread["version"]

    fake_llm.script(reply(intent="done_for_now", message="ok"))
    approval_id = thread["pending_approval"]["approval_id"]
    assert (await api.post(url, json={"user": "bob", "approval_id": approval_id, "approve": True})).status_code == 202
    done = await settle(api, thread["id"])
    r = await api.post(url, json={"user": "carol", "approval_id": approval_id, "approve": False})
    assert r.status_code == 409 and "already approved by bob" in r.json()["detail"]
    assert (await api.get(f"/threads/{thread['id']}")).json()["version"] == done["version"]


async def test_two_approvals_at_once_make_exactly_one_decision(api, fake_llm, ledger):
    thread = await paused_for_approval(api, fake_llm)
    fake_llm.script(reply(intent="done_for_now", message="ok"))
    approval_id = thread["pending_approval"]["approval_id"]
    url = f"/threads/{thread['id']}/responses"
    answers = await asyncio.gather(
        *(api.post(url, json={"user": u, "approval_id": approval_id, "approve": True}) for u in ("bob", "carol"))
    )
    assert sorted(a.status_code for a in answers) == [202, 409]
    done = await settle(api, thread["id"])
    decisions = [e for e in done["events"] if e["type"] == "human_response"]
    assert len(decisions) == 1
    assert len(ledger_lines(ledger)) == 1


async def test_fork_copies_events_but_not_the_approval(api, fake_llm, ledger):
    thread = await paused_for_approval(api, fake_llm)
    r = await api.post(f"/threads/{thread['id']}/fork", json={"at": 3})
    assert r.status_code == 201
    fork_id = r.json()["id"]
    fake_llm.script(reply(intent="deploy", service="frontend", tag="v1.2.1", environment="staging"),
                    reply(intent="done_for_now", message="frontend is on staging"))
    fork = await settle(api, fork_id)
    assert types(fork)[:3] == types(thread)[:3]
    assert fork["events"][:3] == thread["events"][:3]
    assert fork["origin"]["forked_from"] == thread["id"]
    assert fork["status"] == "done"  # staging is not protected: deployed at once
    assert ledger_lines(ledger)[0].endswith("frontend v1.2.1 staging")
    original = (await api.get(f"/threads/{thread['id']}")).json()
    assert original["version"] == thread["version"] and original["status"] == "waiting_for_approval"

    # A fork taken after an approval was granted must not reuse it.
    approval_id = thread["pending_approval"]["approval_id"]
    fake_llm.script(reply(intent="done_for_now", message="ok"))
    await api.post(f"/threads/{thread['id']}/responses",
                   json={"user": "bob", "approval_id": approval_id, "approve": True})
    await settle(api, thread["id"])
    fake_llm.script(reply(intent="deploy", service="backend", tag="v1.2.3", environment="production"))
    copied = (await api.post(f"/threads/{thread['id']}/fork", json={"at": 6})).json()["id"]
    refork = await settle(api, copied)
    recheck = next(e for e in refork["events"] if e["type"] == "error")
    assert recheck["kind"] == "recheck" and "forked" in recheck["message"]
    assert refork["status"] == "waiting_for_approval"
    assert refork["pending_approval"]["approval_id"] != approval_id
    assert len(ledger_lines(ledger)) == 2  # the staging deploy and the approved one, nothing more

    assert (await api.post(f"/threads/{thread['id']}/fork", json={"at": 0})).status_code == 422
    assert (await api.post(f"/threads/{thread['id']}/fork", json={"at": 99})).status_code == 422


async def test_markdown_transcript_is_readable_and_redacted(api, fake_llm):
    fake_llm.script(reply(intent="done_for_now", message="nothing to do"))
    thread_id = await launch(api, "hi, my token=ghp_abcdefghijklmnopqrstuvwxyz0123 oops")
    await settle(api, thread_id)
    r = await api.get(f"/threads/{thread_id}.md")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/markdown")
    assert r.text.startswith(f"# Thread {thread_id}")
    assert "**alice** (api): hi, my token=[redacted] oops" in r.text
    assert "ghp_" not in r.text and "ghp_" not in fake_llm.prompts[0]
    assert "Status: **done**" in r.text


async def test_cancel_stops_a_pending_approval(api, fake_llm, ledger):
    thread = await paused_for_approval(api, fake_llm)
    r = await api.post(f"/threads/{thread['id']}/cancel", json={"user": "alice", "reason": "freeze"})
    assert r.status_code == 200 and r.json()["status"] == "cancelled"
    r = await api.post(
        f"/threads/{thread['id']}/responses",
        json={"user": "bob", "approval_id": thread["pending_approval"]["approval_id"], "approve": True},
    )
    assert r.status_code == 409
    assert (await api.post(f"/threads/{thread['id']}/cancel")).status_code == 409
    assert ledger_lines(ledger) == []


async def test_list_filters_by_status_and_errors_are_clear(api, fake_llm):
    await paused_for_approval(api, fake_llm)
    fake_llm.script(reply(intent="done_for_now", message="hello"))
    done_id = await launch(api, "just saying hi")
    await settle(api, done_id)
    waiting = (await api.get("/threads", params={"status": "waiting_for_approval"})).json()["threads"]
    assert [t["status"] for t in waiting] == ["waiting_for_approval"]
    everything = (await api.get("/threads")).json()["threads"]
    assert {t["id"] for t in everything} >= {done_id, waiting[0]["id"]}
    assert (await api.get("/threads", params={"status": "sleeping"})).status_code == 422

    assert (await api.get("/threads/nope")).status_code == 404
    assert (await api.post("/threads/nope/responses", json={"user": "x", "text": "hi"})).status_code == 404
    assert (await api.post("/threads", json={"user": "x"})).status_code == 422
    malformed = await api.post("/threads", content=b"{not json", headers={"content-type": "application/json"})
    assert malformed.status_code == 422
    assert (await api.post(f"/threads/{done_id}/responses", json={"text": "no user"})).status_code == 422
    health = (await api.get("/healthz")).json()
    assert health == {"ok": True, "redis": "ok", "llm": "configured"}



async def test_an_approval_past_its_expiry_is_no_longer_waited_for(api, app, fake_llm):
    from datetime import timedelta

    from bot.runtime.clock import utcnow

    thread = await paused_for_approval(api, fake_llm)
    app.service.clock = lambda: utcnow() + timedelta(hours=2)  # the approval lapsed an hour ago
    shown = (await api.get(f"/threads/{thread['id']}")).json()
    assert shown["status"] == "waiting_for_human" and shown["pending_approval"] is None
    assert shown["expired_approval"]["approval_id"] == thread["pending_approval"]["approval_id"]
    waiting = (await api.get("/threads", params={"status": "waiting_for_approval"})).json()["threads"]
    assert thread["id"] not in [t["id"] for t in waiting]
    listed = (await api.get("/threads", params={"status": "waiting_for_human"})).json()["threads"]
    assert [t["status"] for t in listed if t["id"] == thread["id"]] == ["waiting_for_human"]
