"""Deploy safety end to end with DEPLOYER=github and a local server playing GitHub."""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import timedelta

import pytest

from bot.core.thread import Origin
from bot.runtime.clock import utcnow
from bot.testing.fake_github import FakeGitHub
from tests.end_to_end.conftest import Server
from tests.helpers import settle

pytestmark = [pytest.mark.redis, pytest.mark.processes, pytest.mark.network]


@pytest.fixture
def github() -> Iterator[FakeGitHub]:
    fake = FakeGitHub(tags=[("v1.2.3", "a" * 40), ("v1.2.2", "b" * 40)]).start()
    yield fake
    fake.stop()


def github_settings(github: FakeGitHub) -> dict[str, object]:
    return {
        "deployer": "github", "github_token": github.token, "github_repository": github.repository,
        "github_api_url": github.api_url, "github_workflow_backend": "deploy-backend.yml",
        "github_workflow_frontend": "deploy-frontend.yml", "github_poll_seconds": 0.01,
    }


@pytest.fixture
def settings(settings, github, request):
    """DEPLOYER=github; a test changes more through indirect parametrization."""
    return settings.model_copy(update={**github_settings(github), **getattr(request, "param", {})})


async def ask(api, text: str = "deploy backend v1.2.3 to production") -> dict:
    r = await api.post("/threads", json={"message": text, "user": "alice"})
    return await settle(api, r.json()["id"])


async def approve(api, thread: dict, user: str = "bob") -> dict:
    r = await api.post(f"/threads/{thread['id']}/responses",
                       json={"user": user, "approval_id": thread["pending_approval"]["approval_id"], "approve": True})
    assert r.status_code == 202, r.text
    return await settle(api, thread["id"])


async def test_approve_dispatches_once_follows_the_run_and_reports(api, github):
    thread = await ask(api)
    assert thread["pending_approval"]["commit"] == "a" * 40 and github.dispatches == []
    done = await approve(api, thread)
    assert done["status"] == "done"
    result = next(e for e in done["events"] if e["type"] == "deploy_result")
    assert result["ok"] and result["url"] == f"https://github.com/{github.repository}/actions/runs/1000"
    assert github.dispatches == [{"workflow": "deploy-backend.yml", "ref": "main", "inputs": {
        "tag": "v1.2.3", "environment": "production", "deploy_id": result["deploy_id"], "commit": "a" * 40}}]
    assert done["events"][-1]["message"].endswith(result["url"])
    deploys = (await api.get("/deploys", params={"environment": "production"})).json()["deploys"]
    assert deploys[0]["url"] == result["url"] and deploys[0]["approved_by"] == "bob"


async def test_a_failed_run_is_reported(api, github):
    github.conclusion = "failure"
    done = await approve(api, await ask(api))
    result = next(e for e in done["events"] if e["type"] == "deploy_result")
    assert result["ok"] is False
    assert done["events"][-1]["message"].startswith("Deploying backend v1.2.3 to production failed: GitHub Actions run")


async def test_a_tag_moved_after_approval_is_not_deployed(api, github):
    thread = await ask(api)
    github.move_tag("v1.2.3", "c" * 40)
    done = await approve(api, thread)
    error = next(e for e in done["events"] if e["type"] == "error")
    assert error["kind"] == "recheck" and "now points to ccccccc, but aaaaaaa was approved" in error["message"]
    assert github.dispatches == []


@pytest.mark.parametrize("settings", [{"github_ref": "{tag}"}], indirect=True)
async def test_a_tag_moved_while_the_run_is_queued_ships_nothing_unapproved(api, github):
    """Dispatched on the tag (GITHUB_REF={tag}), after every re-check passed: the run is on
    the commit the tag points to by then, so it is cancelled and reported, not followed."""
    thread = await ask(api)
    github.moves_at_dispatch = {"v1.2.3": "c" * 40}
    done = await approve(api, thread)
    result = next(e for e in done["events"] if e["type"] == "deploy_result")
    assert result["ok"] is False and result["commit"] == "a" * 40
    assert f"was on commit {'c' * 12}, not the approved {'a' * 12}" in result["output"]
    assert github.dispatches[0]["ref"] == "v1.2.3" and github.cancels == [1000]
    assert github.runs[1000]["conclusion"] == "cancelled"
    deploys = (await api.get("/deploys", params={"environment": "production"})).json()["deploys"]
    assert deploys[0]["ok"] is False


async def test_an_approval_that_expired_before_the_deploy_started_is_not_used(api, app, github):
    thread = await ask(api)
    app.runner.clock = lambda: utcnow() + timedelta(hours=2)  # the worker only got to it later
    done = await approve(api, thread)
    error = next(e for e in done["events"] if e["type"] == "error")
    assert error["kind"] == "recheck" and "the approval expired at" in error["message"]
    assert github.dispatches == []


async def test_github_refusing_the_run_is_a_failed_deploy_the_human_sees(api, github):
    """Nothing ran, yet it is a failed deploy everywhere (the thread, the history), with why."""
    github.fail("POST", r"/dispatches$", 403, {"message": "Resource not accessible by integration"})
    done = await approve(api, await ask(api))
    result = next(e for e in done["events"] if e["type"] == "deploy_result")
    assert not result["ok"] and result["exit_code"] is None and "needs actions:write" in result["output"]
    assert done["status"] == "done" and "needs actions:write" in done["events"][-1]["message"]
    history = (await api.get("/deploys", params={"environment": "production"})).json()["deploys"]
    assert [(d["tag"], d["ok"]) for d in history] == [("v1.2.3", False)]


def test_sigkill_after_dispatch_resumes_the_same_run(redis, servers, server_env, github, tmp_path):
    github.hold_runs = True
    env = {**server_env, **{k.upper(): str(v) for k, v in github_settings(github).items()}}
    # Killed: gone, not cut off; the shortest DEPLOY_LEASE keeps the test from waiting a minute for it.
    first = Server({**env, "DEPLOY_LEASE": "3"}, tmp_path / "first.log")
    servers.append(first)
    thread_id = first.http.post("/threads", json={"message": "deploy backend v1.2.3 to production",
                                                  "user": "alice"}).json()["id"]
    pending = first.wait(thread_id)["pending_approval"]
    first.http.post(f"/threads/{thread_id}/responses",
                    json={"user": "bob", "approval_id": pending["approval_id"], "approve": True})
    deadline = time.monotonic() + 20
    while not (github.dispatches and github.runs[1000]["status"] == "in_progress"):
        assert time.monotonic() < deadline
        time.sleep(0.02)
    first.kill()
    github.release_runs()

    second = Server(env, tmp_path / "second.log")
    servers.append(second)
    done = second.wait(thread_id)
    assert done["status"] == "done", done["events"]
    assert len(github.dispatches) == 1
    results = [e for e in done["events"] if e["type"] == "deploy_result"]
    assert len(results) == 1 and results[0]["ok"] and results[0]["url"].endswith("/runs/1000")


async def test_a_fork_never_resumes_or_repeats_a_deploy_of_the_thread_it_came_from(api, app, github):
    done = await approve(api, await ask(api))
    started_at = [e["type"] for e in done["events"]].index("deploy_started") + 1
    r = await api.post(f"/threads/{done['id']}/fork", json={"at": started_at})
    assert r.status_code == 422 and "middle of a deploy" in r.json()["detail"]
    # Even a thread that holds another thread's started deploy (however it got there) asks a human.
    source = await app.service.get(done["id"])
    copied = await app.store.create(Origin(channel="api"), source.events[:started_at])
    await app.kick(copied.id)
    fork = await settle(api, copied.id)
    assert fork["status"] == "waiting_for_human" and len(github.dispatches) == 1
