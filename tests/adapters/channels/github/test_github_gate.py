"""deploybot as the deployment protection rule of GitHub environments (issue 25), end to end:
signed `deployment_protection_rule` deliveries over real HTTP to the running app, real Redis,
the Slack stand-in and a real SMTP server (aiosmtpd), and the GitHub stand-in speaking the
real endpoints: app JWTs verified with the App's public key, installation tokens, the
callback, deployment statuses.

production needs 2 approvals of alice, bob and carol, never the deployment's creator's;
staging needs none. `app` is the command deployer naming its GitHub repository.
"""

from __future__ import annotations

import json
import subprocess
import uuid
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from aiosmtpd.controller import Controller

from bot.adapters.channels.github.webhook import signature
from bot.core.freeze_windows import stop_the_line
from bot.runtime.clock import utcnow
from bot.runtime.service import Refused
from bot.testing.cluster import ledger_lines
from bot.testing.fake_github import FakeGitHub
from bot.testing.fake_slack import FakeSlack
from tests.adapters.channels.email.test_email import Inbox
from tests.conftest import TAGS, free_port
from tests.helpers import eventually, settle, types

pytestmark = [pytest.mark.redis, pytest.mark.processes, pytest.mark.network]

SECRET = "github-webhook-secret"
PUBLIC_URL = "https://deploybot.example.com"
REPOSITORY = "acme/app"
NOTIFY = "C0123GATE"
SHA = "a" * 40

CONFIG = f"""
[people.alice]
slack = "UALICE"
email = "alice@example.com"

[people.bob]
email = "bob@example.com"

[people.carol]
email = "carol@example.com"
github = "Carol-GH"

[environments.staging]

[environments.production]
protected = true
approvers = ["alice", "bob", "carol"]
approver_must_differ = true
required_approvals = 2

[services.app]
github = "{REPOSITORY}"

[[github_environments]]
repository = "{REPOSITORY}"
github_environment = "production"
environment = "production"
notify = ["slack:{NOTIFY}"]

[[github_environments]]
repository = "{REPOSITORY}"
github_environment = "staging"
environment = "staging"
service = "app"
"""


@pytest.fixture(scope="module")
def github() -> Iterator[FakeGitHub]:
    fake = FakeGitHub(repository=REPOSITORY, tags=[]).start()
    yield fake
    fake.stop()


@pytest.fixture(scope="module")
def app_key(github: FakeGitHub) -> str:
    return github.app_key()


@pytest.fixture(scope="module")
def fake_slack() -> Iterator[FakeSlack]:
    slack = FakeSlack().start()
    yield slack
    slack.stop()


@pytest.fixture(scope="module")
def mail() -> Iterator[Inbox]:
    box = Inbox()
    controller = Controller(box, hostname="127.0.0.1", port=free_port())
    controller.start()
    box.port = controller.port  # type: ignore[attr-defined]
    yield box
    controller.stop()


@pytest.fixture
def config() -> str:
    """deploybot.toml (a test parametrizes it to change it)."""
    return CONFIG


@pytest.fixture
def more() -> dict:
    """More settings (a test parametrizes it)."""
    return {}


@pytest.fixture
def settings(settings, github, app_key, fake_slack, mail, tmp_path: Path, config: str, more: dict):
    path = tmp_path / "deploybot.toml"
    path.write_text(config)
    github.callbacks.clear(), github.requests.clear()
    return settings.model_copy(update={**more,
        "deploybot_config": path, "github_webhook_secret": SECRET, "github_app_id": github.app_id,
        "github_app_private_key": app_key, "github_api_url": github.api_url, "github_token": github.token,
        "github_poll_seconds": 0.05,
        "public_url": PUBLIC_URL,
        "slack_bot_token": "xoxb-test", "slack_signing_secret": "slack-secret", "slack_api_url": fake_slack.base_url,
        "smtp_host": "127.0.0.1", "smtp_port": mail.port, "smtp_tls": "none",
        "email_from": "deploybot@example.com", "inbound_email_secret": "in", "email_reply_secret": "reply",
    })


@pytest.fixture(autouse=True)
def jobs_end(api, github):
    """Before the app stops, every job a test left running ends: the app waits for a deploy
    it follows, so a test that failed half-way would keep it waiting."""
    yield
    github.finish_every_deployment()


@pytest.fixture
def fast(app):
    app.adapter("github_gate").backoff = (0.05, 0.1, 0.2)


async def deliver(api, payload: dict, delivery: str | None = None, secret: str = SECRET):
    body = json.dumps(payload).encode()
    return await api.post("/github/webhook", content=body, headers={
        "Authorization": "", "Content-Type": "application/json", "X-GitHub-Event": "deployment_protection_rule",
        "X-GitHub-Delivery": delivery or str(uuid.uuid4()), "X-Hub-Signature-256": signature(secret, body),
    })


async def approve(app, thread_id: str, who, channel: str) -> None:
    thread = await app.service.get(thread_id)
    request = thread.pending_approval()
    assert request is not None, thread.events
    await app.service.respond(thread_id, "", who, request.approval_id, approve=True, channel=channel)
    await app.kick(thread_id)


async def say(app, api, thread_id: str, who, text: str) -> dict:
    """`who` writes `text` in the thread; the thread once it settled again."""
    await app.service.respond(thread_id, text, who, channel="api")
    await app.kick(thread_id)
    await eventually(lambda: _answered(api, thread_id, text), within=20)
    return await settle(api, thread_id)


async def _answered(api, thread_id: str, text: str) -> bool:
    """Whether the thread settled after the message `text`."""
    thread = (await api.get(f"/threads/{thread_id}")).json()
    said = max(i for i, e in enumerate(thread["events"]) if e.get("text") == text)
    return thread["status"] != "running" and len(thread["events"]) > said + 1


def step_events(thread: dict, text: str) -> list[dict]:
    """The events after the message `text`."""
    said = max(i for i, e in enumerate(thread["events"]) if e.get("text") == text)
    return thread["events"][said + 1:]


async def queued(app, thread_id: str):
    """The deploy_queued event of the thread's deploy, once it is waiting in line."""
    thread = await app.service.get(thread_id)
    return next((e for e in thread.events if e.type == "deploy_queued"), None)


async def started(api, payload: dict) -> str:
    answer = await deliver(api, payload)
    assert answer.status_code == 200 and answer.json()["status"] == "started", answer.text
    [thread_id] = answer.json()["threads"]
    return thread_id


async def test_a_protected_deployment_is_asked_approved_2_of_2_answered_once_and_followed_to_the_history(
    api, app, github, fake_slack, mail
):
    payload = github.protection_rule("production", SHA, creator="carol-gh", ref="v2.0.0")
    delivery = str(uuid.uuid4())
    first = await deliver(api, payload, delivery=delivery)
    assert first.json()["status"] == "started", first.text
    [thread_id] = first.json()["threads"]
    assert (await deliver(api, payload, delivery=delivery)).json()["status"] == "duplicate"

    thread = await settle(api, thread_id)
    assert thread["status"] == "waiting_for_approval", thread["events"]
    said = thread["events"][0]
    run_url = f"https://github.com/{REPOSITORY}/actions/runs/{payload['deployment_callback_url'].split('/')[-2]}"
    assert (said["channel"], said["person"]) == ("github", "carol")  # the creator, by their GitHub login
    assert thread["pending_approval"]["reason"] == f"GitHub Actions deployment of v2.0.0 by carol-gh: {run_url}"
    assert thread["pending_approval"]["commit"] == SHA

    # Asked in Slack (the rule's channel) and by email (the approvers), saying what it is.
    await fake_slack.wait_for("chat.postMessage", channel=NOTIFY, text="Approval needed")
    await fake_slack.wait_for("chat.postMessage", channel=NOTIFY, text="GitHub Actions deployment")
    await mail.wait_for(to="bob@example.com", body="Reply APPROVE to deploy")
    # the mail links to the thread in the console (PUBLIC_URL says where the bot is reached)
    await mail.wait_for(to="bob@example.com", body=f"In the console: {PUBLIC_URL}/console/threads/{thread_id}")

    # The creator may not approve their own deployment.
    with pytest.raises(Refused):
        await approve(app, thread_id, app.service.directory.by("email", "carol@example.com"), "email")
    await approve(app, thread_id, app.service.directory.by("slack", "UALICE"), "slack")
    assert (await settle(api, thread_id))["status"] == "waiting_for_approval"
    assert github.callbacks == []  # 1 of 2

    await approve(app, thread_id, app.service.directory.by("email", "bob@example.com"), "email")
    await eventually(lambda: len(github.callbacks) == 1)
    [callback] = github.callbacks
    assert (callback["state"], callback["environment_name"], callback["installation"]) == ("approved", "production", 77)
    assert "alice, bob" in callback["comment"] and f"{PUBLIC_URL}/console/threads/{thread_id}" in callback["comment"]
    assert github.app_jwts and all(c["exp"] - c["iat"] <= 600 for c in github.app_jwts)

    # While the job runs the service is locked in production; its end lands in the history.
    lock = await app.environments.holder("production", "app")
    assert lock is not None and lock.owner.startswith(thread_id)
    github.finish_deployment(payload["deployment"]["id"], "success")
    done = await settle(api, thread_id)
    result = next(e for e in done["events"] if e["type"] == "deploy_result")
    assert result["ok"] and result["url"] == run_url and result["commit"] == SHA
    assert "github_answered" in [e["type"] for e in done["events"]]
    [record] = await app.environments.recent("production", 10)
    assert (record.service, record.commit, record.ok, record.url) == ("app", SHA, True, run_url)
    assert await app.environments.holder("production", "app") is None
    assert len(github.callbacks) == 1  # sent once
    assert len(github.deployments) == len({d["id"] for d in github.deployments})  # no second deployment made
    assert not [d for d in github.deployments if d["id"] != payload["deployment"]["id"] and d["sha"] == SHA]


async def test_unknown_environment_is_rejected_at_once_and_forged_deliveries_store_nothing(api, app, github):
    unknown = github.protection_rule("qa", SHA)
    answer = await deliver(api, unknown)
    assert answer.json()["status"] == "rejected"
    await eventually(lambda: len(github.callbacks) == 1)
    [callback] = github.callbacks
    assert callback["state"] == "rejected" and "no [[github_environments]] rule" in callback["comment"]

    payload = github.protection_rule("production", SHA)
    forged = await deliver(api, payload, secret="not-the-secret")
    assert forged.status_code == 401
    unsigned = await api.post("/github/webhook", content=json.dumps(payload), headers={
        "Authorization": "", "X-GitHub-Event": "deployment_protection_rule", "X-GitHub-Delivery": "d1"})
    assert unsigned.status_code == 401
    assert await app.store.recent(100) == []
    assert len(github.callbacks) == 1


async def test_a_lost_callback_is_retried_and_sent_once(api, app, github, fast):
    for _ in range(2):
        github.fail("POST", r"/deployment_protection_rule$", 502, {"message": "Bad Gateway"})
    payload = github.protection_rule("staging", SHA, creator="someone")
    thread_id = await started(api, payload)  # staging needs no approval: answered at once
    await eventually(lambda: len(github.callbacks) == 1)
    tries = [r for r in github.requests if r[1].endswith("/deployment_protection_rule")]
    assert len(tries) == 3
    assert github.callbacks[0]["state"] == "approved"
    github.finish_deployment(payload["deployment"]["id"], "failure")
    done = await settle(api, thread_id)
    assert not next(e for e in done["events"] if e["type"] == "deploy_result")["ok"]
    [record] = await app.environments.recent("staging", 10)
    assert not record.ok
    assert len(github.callbacks) == 1


async def test_a_freeze_never_answers_approved_it_waits_or_rejects(api, app, github):
    freezes = app.runner.deploying.freezes
    alice, bob = app.service.directory.by("slack", "UALICE"), app.service.directory.by("email", "bob@example.com")

    # Frozen until after the approval would expire: rejected, saying why.
    long = github.protection_rule("production", SHA)
    thread_id = await started(api, long)
    await settle(api, thread_id)
    now = utcnow()
    await freezes.set(stop_the_line("production", reason="incident 42", set_by="alice", since=now,
                                    until=now + timedelta(hours=5)))
    await approve(app, thread_id, alice, "slack")
    await approve(app, thread_id, bob, "email")
    await eventually(lambda: len(github.callbacks) == 1)
    assert github.callbacks[0]["state"] == "rejected" and "incident 42" in github.callbacks[0]["comment"]

    # Frozen for a moment: it waits in line, saying why, and is approved when the freeze ends.
    await freezes.lift("production")
    short = github.protection_rule("production", SHA)
    thread_id = await started(api, short)
    await settle(api, thread_id)
    await freezes.set(stop_the_line("production", reason="release notes", set_by="alice", since=utcnow(),
                                    until=utcnow() + timedelta(minutes=10)))
    await approve(app, thread_id, alice, "slack")
    await approve(app, thread_id, bob, "email")
    waiting = await eventually(lambda: queued(app, thread_id), within=20)
    assert "release notes" in waiting.behind
    assert len(github.callbacks) == 1
    await freezes.lift("production")
    await app.kick(thread_id)  # what the queue's timer does
    await eventually(lambda: len(github.callbacks) == 2)
    assert github.callbacks[1]["state"] == "approved"
    github.finish_deployment(short["deployment"]["id"], "success")
    await settle(api, thread_id)


PROMOTED = 'promotion = ["staging", "production"]\n' + CONFIG


def commit_of(repository: Path, tag: str) -> str:
    return subprocess.run(["git", "-C", str(repository), "rev-parse", f"{tag}^{{commit}}"], check=True,
                          capture_output=True, text=True).stdout.strip()


def deployments_of(github: FakeGitHub, *deploy_ids: str) -> list[dict]:
    """The GitHub deployments deploybot made for these deploys, in their order (all of them, or none)."""
    made = {d["payload"]["deploybot"]["deploy_id"]: d for d in github.deployments
            if "deploybot" in (d.get("payload") or {})}
    return [made[i] for i in deploy_ids] if all(i in made for i in deploy_ids) else []


@pytest.mark.parametrize("config", [PROMOTED])
async def test_a_gated_thread_answers_one_deployment_its_later_deploys_and_rollbacks_run_for_real(
    api, app, github, ledger, git_repo, monkeypatch
):
    # GitHub has the repository's commits, so deploybot's own deploys get GitHub deployments.
    monkeypatch.setattr(github, "commits", [
        {"sha": commit_of(git_repo, tag), "message": tag, "author": "t", "login": None} for tag in TAGS])
    nobody = app.service.directory.by("github", "passer-by")  # someone with no powers
    earlier = await app.service.launch("deploy app v1.2.2 to staging", nobody, "api")
    await app.kick(earlier.id)
    assert "deploy_result" in types(await settle(api, earlier.id))

    payload = github.protection_rule("staging", SHA, creator="passer-by")
    thread_id = await started(api, payload)
    await eventually(lambda: len(github.callbacks) == 1)
    github.finish_deployment(payload["deployment"]["id"], "success")
    gated = next(e for e in (await settle(api, thread_id))["events"] if e["type"] == "deploy_result")
    assert gated["ok"] and gated["commit"] == SHA
    statuses = f"/repos/{REPOSITORY}/deployments/{payload['deployment']['id']}/statuses"
    followed = github.requests.count(("GET", statuses))

    # A later deploy in the gated thread is a deploy of its own: it runs (and fails).
    monkeypatch.setenv("FAKE_DEPLOY_EXIT", "1")
    later = "deploy app v1.2.3 to staging"
    [result] = [e for e in step_events(await say(app, api, thread_id, nobody, later), later)
                if e["type"] == "deploy_result"]
    assert not result["ok"] and result["tag"] == "v1.2.3"
    monkeypatch.delenv("FAKE_DEPLOY_EXIT")

    # What did not pass staging may not go on to production.
    onward = "deploy app v1.2.3 to production"
    refused = step_events(await say(app, api, thread_id, nobody, onward), onward)
    assert [e["kind"] for e in refused if e["type"] == "error"] == ["promotion"], refused
    assert "approval_requested" not in [e["type"] for e in refused]

    # A rollback in the gated thread puts back what was on before, for real.
    back = "roll back app in staging"
    [rolled] = [e for e in step_events(await say(app, api, thread_id, nobody, back), back)
                if e["type"] == "deploy_result"]
    assert rolled["ok"] and rolled["tag"] == "v1.2.2" and rolled["rollback_of"] == gated["deploy_id"]

    assert [line.split(" ", 1)[1] for line in ledger_lines(ledger)] == [
        "app v1.2.2 staging", "app v1.2.3 staging", "app v1.2.2 staging"]
    assert github.requests.count(("GET", statuses)) == followed  # never followed again
    assert len(github.callbacks) == 1
    # Each deploy of deploybot's is a GitHub deployment; the gated one is GitHub's own: no second.
    mine = await eventually(lambda: deployments_of(github, result["deploy_id"], rolled["deploy_id"]))
    assert [d["sha"] for d in mine] == [commit_of(git_repo, "v1.2.3"), commit_of(git_repo, "v1.2.2")]
    assert not deployments_of(github, gated["deploy_id"])
    history = [(r.tag, r.ok, r.faulty, r.deploy_id) for r in await app.environments.recent("staging", 10)]
    assert history == [
        ("v1.2.2", True, False, rolled["deploy_id"]), ("v1.2.3", False, False, result["deploy_id"]),
        (SHA, True, True, gated["deploy_id"]), ("v1.2.2", True, False, history[3][3]),
    ]


@pytest.mark.parametrize("more", [{"github_gate_follow_seconds": 1.0}])
async def test_a_job_that_never_reports_lets_the_lock_go_after_the_bound(api, app, github):
    payload = github.protection_rule("staging", SHA)
    thread_id = await started(api, payload)
    await eventually(lambda: len(github.callbacks) == 1)
    assert await app.environments.holder("staging", "app") is not None
    done = await settle(api, thread_id, within=10)
    result = next(e for e in done["events"] if e["type"] == "deploy_result")
    assert not result["ok"]
    assert "reported no outcome within 1 s" in result["output"], result["output"]
    assert await app.environments.holder("staging", "app") is None
    [record] = await app.environments.recent("staging", 10)
    assert not record.ok


async def test_a_cancelled_run_ends_the_following_at_once(api, app, github):
    payload = github.protection_rule("staging", SHA)
    thread_id = await started(api, payload)
    await eventually(lambda: len(github.callbacks) == 1)
    github.end_run(github.callbacks[0]["run_id"], "cancelled")
    done = await settle(api, thread_id, within=5)
    result = next(e for e in done["events"] if e["type"] == "deploy_result")
    assert not result["ok"]
    assert "workflow run ended (cancelled)" in result["output"], result["output"]
    assert await app.environments.holder("staging", "app") is None


async def test_a_callback_url_with_a_trailing_newline_is_refused_and_nothing_is_kept(api, app, github):
    payload = github.protection_rule("production", SHA)
    delivery = str(uuid.uuid4())
    bent = {**payload, "deployment_callback_url": payload["deployment_callback_url"] + "\n"}
    answer = await deliver(api, bent, delivery=delivery)
    assert answer.status_code == 400 and "deployment_callback_url" in answer.json()["detail"]
    assert await app.store.recent(100) == [] and github.callbacks == []
    # The delivery was not taken in: GitHub's redelivery of the right one starts its thread.
    assert (await deliver(api, payload, delivery=delivery)).json()["status"] == "started"


async def test_an_environment_that_needs_no_approval_is_answered_saying_so(api, app, github):
    payload = github.protection_rule("staging", SHA)
    thread_id = await started(api, payload)
    await eventually(lambda: len(github.callbacks) == 1)
    comment = github.callbacks[0]["comment"]
    assert "approver" not in comment and "staging needs no approval in deploybot" in comment, comment
    github.finish_deployment(payload["deployment"]["id"], "success")
    await settle(api, thread_id)


def as_github_sends(payload: dict, deployment: bool = True) -> dict:
    """The stand-in's delivery in the shape GitHub's schema gives it (as
    tests/fixtures/github/deployment_protection_rule.requested.json): the commit at the top, the
    deployment with its id and environment only, or no deployment at all."""
    full = payload["deployment"]
    return {**payload, "sha": full["sha"], "ref": full["ref"],
            "deployment": {"id": full["id"], "environment": full["environment"]} if deployment else None}


async def test_github_s_own_delivery_shape_is_answered_and_its_job_followed(api, app, github):
    payload = github.protection_rule("staging", SHA)
    thread_id = await started(api, as_github_sends(payload))
    await eventually(lambda: len(github.callbacks) == 1)
    assert github.callbacks[0]["state"] == "approved"
    github.finish_deployment(payload["deployment"]["id"], "success")
    done = await settle(api, thread_id)
    result = next(e for e in done["events"] if e["type"] == "deploy_result")
    assert result["ok"] and result["commit"] == SHA


async def test_a_delivery_naming_no_deployment_is_followed_by_its_run(api, app, github):
    payload = github.protection_rule("staging", SHA)
    thread_id = await started(api, as_github_sends(payload, deployment=False))
    await eventually(lambda: len(github.callbacks) == 1)
    github.finish_deployment(payload["deployment"]["id"], "success")  # its run ends with it, a success
    done = await settle(api, thread_id)
    result = next(e for e in done["events"] if e["type"] == "deploy_result")
    assert result["ok"] and "the run's conclusion is the outcome" in result["output"]
    assert await app.environments.holder("staging", "app") is None
