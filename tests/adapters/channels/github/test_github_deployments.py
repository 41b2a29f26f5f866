"""GitHub Deployments end to end (issue 16): real Redis, the in-process app served over HTTP,
a deploybot.toml catalog and the GitHub stand-in, which records every deployment and its
statuses in order.

`mobile` deploys by GitHub Actions; `api` is the command deployer naming its GitHub repository
(a clone of the same repository: the stand-in serves one); `worker` is the command deployer
with no GitHub repository. production is protected (bob approves), staging is not.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bot.testing.cluster import free_port
from bot.testing.fake_github import FakeGitHub
from tests.deploybot_toml import ALICE_AND_BOB
from tests.helpers import eventually, ledger_lines, reply, settle

pytestmark = [pytest.mark.redis, pytest.mark.processes, pytest.mark.network]

PUBLIC_URL = "https://deploybot.example.com"
REPOSITORY = "acme/app"

TOML = (
    ALICE_AND_BOB.service("mobile", deployer="github", github="acme/app", workflow="deploy-mobile.yml")
    .service("api", github="acme/app").service("worker")
)


@pytest.fixture
def github(git_repo: Path) -> Iterator[FakeGitHub]:
    fake = FakeGitHub(repository=REPOSITORY, tags=[]).start()
    fake.commit("mobile: first release", tag="v3.0.0")
    for tag in ("v1.2.1", "v1.2.2", "v1.2.3"):  # api's clone: the same commits are on GitHub
        sha = subprocess.run(["git", "-C", str(git_repo), "rev-parse", f"{tag}^{{commit}}"], check=True,
                             capture_output=True, text=True).stdout.strip()
        fake.commit(f"api {tag}", sha=sha)
    yield fake
    fake.stop()


@pytest.fixture
def settings(settings, github: FakeGitHub, tmp_path: Path, request):
    config = tmp_path / "deploybot.toml"
    config.write_text(str(TOML))
    return settings.model_copy(update={
        "deploybot_config": config, "github_token": github.token, "github_api_url": github.api_url,
        "github_poll_seconds": 0.01, "public_url": PUBLIC_URL, **getattr(request, "param", {}),
    })


@pytest.fixture
def fast(app):
    app.adapter("github_deployments").backoff = (0.05, 0.1)


@pytest.fixture
async def tokens(app) -> dict[str, dict[str, str]]:
    """Each person's Authorization header: a file that names people trusts no bare name."""
    made = {person: (await app.credentials.create(person, "tests"))[1] for person in ("alice", "bob")}
    return {person: {"Authorization": f"Bearer {token}"} for person, token in made.items()}


@pytest.fixture
def ask(api, tokens):
    async def ask(text: str) -> dict:
        r = await api.post("/threads", json={"message": text}, headers=tokens["alice"])
        assert r.status_code == 201, r.text
        return await settle(api, r.json()["id"])

    return ask


@pytest.fixture
def decide(api, tokens):
    async def decide(thread: dict, approve: bool, text: str = "") -> dict:
        assert thread["status"] == "waiting_for_approval", thread["events"]
        body = {"approval_id": thread["pending_approval"]["approval_id"], "approve": approve, "text": text}
        r = await api.post(f"/threads/{thread['id']}/responses", json=body, headers=tokens["bob"])
        assert r.status_code == 202, r.text
        return await settle(api, thread["id"])

    return decide


def result_of(thread: dict) -> dict:
    return next(e for e in thread["events"] if e["type"] == "deploy_result")


async def statuses(app, github: FakeGitHub, count: int) -> list[dict[str, Any]]:
    """The only deployment's statuses, once `count` are posted (and the sending is done)."""
    await eventually(lambda: len(github.deployments) == 1
                     and len(github.deployment_statuses[github.deployments[0]["id"]]) >= count)
    await app.adapter("github_deployments").drain()
    [deployment] = github.deployments
    return github.deployment_statuses[deployment["id"]]


async def test_a_protected_deploy_goes_queued_in_progress_success(ask, decide, app, github):
    thread = await ask("deploy mobile v3.0.0 to production")
    [queued] = await statuses(app, github, 1)
    assert queued["state"] == "queued" and queued["environment"] == "production"
    assert queued["log_url"] == f"{PUBLIC_URL}/console/threads/{thread['id']}"
    assert "waiting for approval" in queued["description"]

    done = await decide(thread, approve=True)
    result = result_of(done)
    assert result["ok"], done["events"]
    listed = await statuses(app, github, 3)
    assert [s["state"] for s in listed] == ["queued", "in_progress", "success"]
    assert {s["environment"] for s in listed} == {"production"}
    success = listed[-1]
    page = f"{PUBLIC_URL}/console/deploys/production/{result['deploy_id']}"
    assert success["log_url"] == success["target_url"] == page
    assert success["environment_url"] == result["url"] == f"https://github.com/{REPOSITORY}/actions/runs/1000"
    assert "approved by bob" in listed[1]["description"] and "approved by bob" in success["description"]

    # The deployment: the approved commit, no merge, no GitHub-side checks, the deploy's ids.
    [deployment] = github.deployments
    assert deployment["sha"] == deployment["ref"] == result["commit"] == github.tags[0][1]
    assert deployment["environment"] == "production" and deployment["task"] == "deploy"
    sent = deployment["request"]
    assert sent["auto_merge"] is False and sent["required_contexts"] == [] and sent["transient_environment"] is False
    assert sent["payload"] == {"deploybot": {"deploy_id": result["deploy_id"], "thread_id": thread["id"],
                                             "service": "mobile", "tag": "v3.0.0"}}
    # As GitHub lists them: newest first.
    deployments = app.adapter("github_deployments")
    r = await deployments._call("GET", f"/repos/{REPOSITORY}/deployments/{deployment['id']}/statuses")
    assert [s["state"] for s in r.json()] == ["success", "in_progress", "queued"]


async def test_a_failing_run_ends_in_failure(ask, decide, app, github):
    github.conclusion = "failure"
    done = await decide(await ask("deploy mobile v3.0.0 to production"), approve=True)
    assert result_of(done)["ok"] is False
    listed = await statuses(app, github, 3)
    assert [s["state"] for s in listed] == ["queued", "in_progress", "failure"]
    assert listed[-1]["environment_url"] == result_of(done)["url"]


async def test_a_rejected_approval_makes_the_deployment_inactive(ask, decide, app, github, fake_llm):
    fake_llm.script(reply(intent="done_for_now", message="not deploying then"))  # what the model says next
    thread = await ask("deploy mobile v3.0.0 to production")
    await statuses(app, github, 1)
    await decide(thread, approve=False, text="not on a Friday")
    listed = await statuses(app, github, 2)
    assert [s["state"] for s in listed] == ["queued", "inactive"]
    said = listed[-1]["description"]
    assert "rejected by bob" in said and "Friday" not in said  # people's words stay out of GitHub
    assert github.dispatches == []


async def test_an_unprotected_deploy_goes_straight_to_in_progress(ask, app, github):
    done = await ask("deploy mobile v3.0.0 to staging")
    result = result_of(done)
    listed = await statuses(app, github, 2)
    assert [(s["state"], s["environment"]) for s in listed] == [("in_progress", "staging"), ("success", "staging")]
    assert listed[-1]["log_url"] == f"{PUBLIC_URL}/console/deploys/staging/{result['deploy_id']}"


async def test_the_command_deployer_naming_its_repository_gets_a_deployment(ask, app, github, ledger):
    done = await ask("deploy api v1.2.3 to staging")
    assert result_of(done)["ok"] and len(ledger_lines(ledger)) == 1
    listed = await statuses(app, github, 2)
    assert [s["state"] for s in listed] == ["in_progress", "success"]
    assert github.deployments[0]["sha"] == result_of(done)["commit"]
    assert "environment_url" not in listed[-1]["request"]  # a command has no run link


async def test_a_command_deployer_service_without_github_gets_none(ask, app, github, ledger):
    done = await ask("deploy worker v1.2.3 to staging")
    assert result_of(done)["ok"] and len(ledger_lines(ledger)) == 1
    await app.adapter("github_deployments").drain()
    assert github.deployments == [] and not any("/deployments" in p for _, p in github.requests)


async def test_github_answering_500_is_retried_into_one_deployment(ask, app, github, fast):
    github.fail("POST", r"/deployments$", 500, {"message": "Server Error"})
    await ask("deploy mobile v3.0.0 to staging")
    listed = await statuses(app, github, 2)
    assert [s["state"] for s in listed] == ["in_progress", "success"]
    assert sum(1 for m, p in github.requests if (m, p) == ("POST", f"/repos/{REPOSITORY}/deployments")) == 2


async def test_a_lost_answer_to_a_creation_does_not_make_a_second_deployment(ask, app, github, fast):
    github.fail_after("POST", r"/deployments$", 502, {"message": "Bad Gateway"})  # created, answer lost
    await ask("deploy mobile v3.0.0 to staging")
    listed = await statuses(app, github, 2)
    assert [s["state"] for s in listed] == ["in_progress", "success"]
    assert len(github.deployments) == 1


async def test_a_status_published_twice_finds_the_same_deployment(ask, app, github):
    thread = await ask("deploy mobile v3.0.0 to production")
    await statuses(app, github, 1)
    again = await app.service.get(thread["id"])
    await app.adapter("github_deployments").publish(again, [e for e in again.events if e.type == "approval_requested"])
    listed = await statuses(app, github, 2)
    assert [s["state"] for s in listed] == ["queued", "queued"] and len(github.deployments) == 1


@pytest.mark.parametrize("settings", [{"github_api_url": f"http://127.0.0.1:{free_port()}"}], indirect=True)
async def test_github_down_is_recorded_and_the_deploy_goes_on(api, ask, decide, app, github, ledger, fast):
    thread = await ask("deploy api v1.2.3 to production")
    done = await decide(thread, approve=True)
    assert done["status"] == "done" and result_of(done)["ok"] and len(ledger_lines(ledger)) == 1

    async def failed() -> list[Any]:
        events = (await app.service.get(thread["id"])).events
        found = [e for e in events if e.type == "delivery_failed"]
        return found if len(found) == 3 else []

    failures = await eventually(failed, within=10)
    assert {(f.channel, f.to) for f in failures} == {("github-deployments", REPOSITORY)}
    assert [f.reason.split(" for ")[0] for f in failures] == [
        f"GitHub deployment status {state}" for state in ("queued", "in_progress", "success")]
    assert all("failed 3 times: ConnectError" in f.reason for f in failures)
    assert (await api.get(f"/threads/{thread['id']}")).json()["status"] == "done"


# --- what each event means, without servers -------------------------------------------------
