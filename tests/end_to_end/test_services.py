"""The service catalog end to end (issue 13): three services in local git repositories (`api`
and `worker` each in their own, `web` in a monorepo with the tag prefix `web/`) and `mobile` on
the GitHub stand-in, named in a deploybot.toml; real Redis, the in-process app served over
HTTP, the real BAML runtime against the fake model server, approvals through the API.

Each local service deploys with its own command, which appends "service tag environment
commit" to its own ledger: a line in api.log is a deploy the api command really ran.
bob approves (and locks) production, which needs green CI checks (`required_checks`); staging
is unprotected. Everyone comes with a personal token: a file that names people trusts no
bare name, and only a person may approve, lock or deploy anyway.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from bot.testing.fake_github import FakeGitHub
from tests.deploybot_toml import ALICE_AND_BOB, Toml
from tests.helpers import ledger_lines, reply, settle, types

pytestmark = [pytest.mark.redis, pytest.mark.processes, pytest.mark.network]

GIT_ENV = {"GIT_AUTHOR_NAME": "Dev", "GIT_AUTHOR_EMAIL": "dev@example.com",
           "GIT_COMMITTER_NAME": "Dev", "GIT_COMMITTER_EMAIL": "dev@example.com"}
LEDGER_SCRIPT = """
import sys
with open(sys.argv[1], "a") as f:
    f.write(" ".join(sys.argv[2:]) + "\\n")
print("deployed", *sys.argv[2:])
"""

# (subject, tag or None), oldest first.
API_HISTORY = [
    ("api: first release", "v1.0.0"),
    ("api: add health check", "v1.1.0"),
    ("api: faster login", None),
    ("api: new billing page", "v1.2.0"),
]
WORKER_HISTORY = [("worker: start", "v1.0.0"), ("worker: retry failed jobs", "v2.0.0")]
MONO_HISTORY = [
    ("web: first page", "web/v1.0.0"),
    ("docs: unrelated to web", "docs/v1.0.0"),
    ("web: dark mode", "web/v1.1.0"),
]



def services_toml(py: str, script: Path, ledgers: Path) -> Toml:
    """api, worker and web (a monorepo's web/ tags) deployed by the ledger script; mobile by GitHub."""
    def command(name: str) -> str:
        return f"{py} {script} {ledgers}/{name}.log {{service}} {{tag}} {{environment}} {{commit}}"

    return (
        ALICE_AND_BOB.environment("production", required_checks=True)
        .service("api", repo="repos/api", command=command("api"))
        .service("worker", repo="repos/worker", command=command("worker"))
        .service("web", repo="repos/mono", tag_prefix="web/", command=command("web"))
        .service("mobile", deployer="github", github="acme/mobile", workflow="deploy-mobile.yml")
    )


def make_repo(path: Path, history: list[tuple[str, str | None]]) -> dict[str, str]:
    """A repository with one commit per entry; the tags' commits by name."""
    path.mkdir(parents=True)
    env = {**os.environ, **GIT_ENV}

    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", str(path), *args], check=True, capture_output=True, text=True,
                              env=env).stdout.strip()

    git("init", "-q", "-b", "main")
    shas = {}
    for day, (subject, tag) in enumerate(history, start=1):
        env["GIT_COMMITTER_DATE"] = env["GIT_AUTHOR_DATE"] = f"2026-11-{day:02d}T12:00:00Z"
        git("commit", "-q", "--allow-empty", "-m", subject)
        if tag:
            git("tag", tag)
            shas[tag] = git("rev-parse", "HEAD")
    return shas


class World:
    """The repositories' tag commits, the ledgers and the GitHub stand-in."""

    def __init__(self, root: Path, github: FakeGitHub) -> None:
        self.api = make_repo(root / "repos" / "api", API_HISTORY)
        self.worker = make_repo(root / "repos" / "worker", WORKER_HISTORY)
        self.web = make_repo(root / "repos" / "mono", MONO_HISTORY)
        self.ledgers = root / "ledgers"
        self.ledgers.mkdir()
        self.github = github
        self.mobile = {
            "v3.0.0": github.commit("mobile: first release", tag="v3.0.0"),
            "v3.1.0": github.commit("mobile: push notifications", tag="v3.1.0"),
        }
        for sha in self.mobile.values():
            github.set_status(sha, "ci/build", "success")
        script = root / "ledger_deploy.py"
        script.write_text(LEDGER_SCRIPT)
        self.config = root / "deploybot.toml"
        self.config.write_text(str(services_toml(sys.executable, script, self.ledgers)))

    def ledger(self, service: str) -> list[str]:
        return ledger_lines(self.ledgers / f"{service}.log")

    def all_ledgers(self) -> dict[str, list[str]]:
        return {s: self.ledger(s) for s in ("api", "worker", "web")}


@pytest.fixture
def github() -> Iterator[FakeGitHub]:
    fake = FakeGitHub(repository="acme/mobile", tags=[]).start()
    yield fake
    fake.stop()


@pytest.fixture
def world(tmp_path: Path, github: FakeGitHub) -> World:
    return World(tmp_path, github)


@pytest.fixture
def settings(settings, world: World, github: FakeGitHub):
    return settings.model_copy(update={
        "deploybot_config": world.config, "github_token": github.token, "github_api_url": github.api_url,
        "github_poll_seconds": 0.01,
    })


class Bot:
    """The API as people use it: each with a personal token (deploybot.toml names people, so
    only a personal token decides and locks; without one the API speaks for nobody)."""

    def __init__(self, api, tokens: dict[str, str]) -> None:
        self.api, self.tokens = api, tokens

    def auth(self, user: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.tokens[user]}"}

    async def chat(self, text: str, user: str = "alice") -> dict:
        r = await self.api.post("/threads", json={"message": text}, headers=self.auth(user))
        assert r.status_code == 201, r.text
        return await settle(self.api, r.json()["id"])

    async def say(self, thread: dict, text: str, user: str) -> dict:
        r = await self.api.post(f"/threads/{thread['id']}/responses", json={"text": text}, headers=self.auth(user))
        assert r.status_code == 202, r.text
        return await settle(self.api, thread["id"])

    async def approve(self, thread: dict, user: str = "bob") -> dict:
        assert thread["status"] == "waiting_for_approval", thread["events"]
        body = {"approval_id": thread["pending_approval"]["approval_id"], "approve": True}
        r = await self.api.post(f"/threads/{thread['id']}/responses", json=body, headers=self.auth(user))
        assert r.status_code == 202, r.text
        return await settle(self.api, thread["id"])

    async def deployed(self, text: str) -> dict:
        """An exact deploy command to production, approved by bob: its DeployResult."""
        done = await self.approve(await self.chat(text))
        result = next(e for e in done["events"] if e["type"] == "deploy_result")
        assert result["ok"], done["events"]
        return result

    async def deploys(self, environment: str, service: str | None = None) -> dict:
        params = {"environment": environment, **({"service": service} if service else {})}
        r = await self.api.get("/deploys", params=params, headers=self.auth("alice"))
        assert r.status_code == 200, r.text
        return r.json()

    async def markdown(self, thread: dict) -> str:
        return (await self.api.get(f"/threads/{thread['id']}.md", headers=self.auth("alice"))).text


@pytest.fixture
async def bot(api, app) -> Bot:
    tokens = {person: (await app.credentials.create(person, "tests"))[1] for person in ("alice", "bob")}
    return Bot(api, tokens)


def last_message(thread: dict) -> str:
    return thread["events"][-1]["message"]


# --- a deploy of each service ----------------------------------------------------------------


async def test_each_service_runs_its_own_command_with_the_commit_of_its_tag(bot, world, github):
    for text in ("deploy api v1.1.0 to staging", "deploy worker v2.0.0 to staging",
                 "deploy web v1.0.0 to staging", "deploy mobile v3.0.0 to staging"):
        done = await bot.chat(text)
        assert done["status"] == "done" and done["events"][-2]["ok"] is True, done["events"]

    assert world.all_ledgers() == {
        "api": [f"api v1.1.0 staging {world.api['v1.1.0']}"],
        "worker": [f"worker v2.0.0 staging {world.worker['v2.0.0']}"],
        "web": [f"web web/v1.0.0 staging {world.web['web/v1.0.0']}"],  # the monorepo's own tag
    }
    assert [(d["workflow"], d["inputs"]["tag"], d["inputs"]["commit"]) for d in github.dispatches] == [
        ("deploy-mobile.yml", "v3.0.0", world.mobile["v3.0.0"])
    ]
    listed = (await bot.deploys("staging"))["deploys"]
    assert [(d["service"], d["tag"], d["commit"]) for d in listed] == [
        ("mobile", "v3.0.0", world.mobile["v3.0.0"]),
        ("web", "web/v1.0.0", world.web["web/v1.0.0"]),
        ("worker", "v2.0.0", world.worker["v2.0.0"]),
        ("api", "v1.1.0", world.api["v1.1.0"]),
    ]
    only_api = (await bot.deploys("staging", "api"))["deploys"]
    assert [d["service"] for d in only_api] == ["api"]


async def test_a_monorepo_service_never_deploys_another_services_tag(bot, world):
    done = await bot.chat("deploy web docs/v1.0.0 to staging")
    error = next(e for e in done["events"] if e["type"] == "error")
    assert error["kind"] == "validation" and "does not exist" in error["message"]
    assert "web/v1.1.0" in error["message"] and "docs/v1.0.0; newest" not in error["message"]
    assert world.all_ledgers() == {"api": [], "worker": [], "web": []}


async def test_the_model_sees_the_catalog_and_deploys_the_service_it_names(bot, world, fake_llm):
    fake_llm.script(
        reply(intent="list_git_tags", service="web"),
        reply(intent="deploy", service="web", tag="v1.1.0", environment="staging", reason="newest"),
        reply(intent="done_for_now", message="web v1.1.0 is on staging"),
    )
    done = await bot.chat("ship the newest web to staging")
    assert types(done) == ["user_message", "list_git_tags", "list_git_tags_result", "deploy", "deploy_started",
                           "deploy_result", "done_for_now"], done["events"]
    assert [t["name"] for t in done["events"][2]["tags"]] == ["web/v1.1.0", "web/v1.0.0"]
    assert done["events"][3]["service"] == "web" and done["events"][3]["tag"] == "web/v1.1.0"
    assert world.ledger("web") == [f"web web/v1.1.0 staging {world.web['web/v1.1.0']}"]
    # The catalog reaches the model as the Service enum of the output format, in its order.
    assert "service: 'api' or 'worker' or 'web' or 'mobile'," in fake_llm.prompts[0], fake_llm.prompts[0]


async def test_a_model_naming_an_unknown_service_gets_an_error_it_sees_and_nothing_deploys(bot, world, fake_llm,
                                                                                       github):
    fake_llm.script(
        reply(intent="deploy", service="billing", tag="v1.0.0", environment="staging"),
        reply(intent="done_for_now", message="there is no billing service"),
    )
    done = await bot.chat("deploy billing v1.0.0 to staging")
    assert types(done) == ["user_message", "error", "done_for_now"], done["events"]
    error = done["events"][1]
    assert error["kind"] == "llm" and "billing" in error["message"]
    assert "<error" in fake_llm.prompts[1] and "billing" in fake_llm.prompts[1].split("<error", 1)[1]
    assert world.all_ledgers() == {"api": [], "worker": [], "web": []} and github.dispatches == []
    assert (await bot.deploys("staging"))["deploys"] == []


# --- rollback --------------------------------------------------------------------------------


async def test_rollback_proposes_the_deploy_before_needs_approval_marks_faulty_and_locks(bot, world):
    first = await bot.deployed("deploy api v1.1.0 to production")
    second = await bot.deployed("deploy api v1.2.0 to production")

    asked = await bot.chat("roll back api in production")
    assert asked["status"] == "waiting_for_approval", asked["events"]
    step = next(e for e in asked["events"] if e["type"] == "deploy")
    assert (step["service"], step["tag"], step["rollback_of"], step["rollback_from"]) == (
        "api", "v1.1.0", second["deploy_id"], "v1.2.0")
    pending = asked["pending_approval"]
    assert pending["commit"] == world.api["v1.1.0"] and pending["rollback_of"] == second["deploy_id"]
    change = pending["change"]
    assert (change["from_tag"], change["ahead"], change["behind"]) == ("v1.2.0", 0, 2)
    assert [c["subject"] for c in change["commits"]] == ["api: new billing page", "api: faster login"]
    markdown = await bot.markdown(asked)
    assert "goes back 2 commits" in markdown and "commits removed:" in markdown
    assert len(world.ledger("api")) == 2  # nothing ran before the approval

    done = await bot.approve(asked)
    result = next(e for e in done["events"] if e["type"] == "deploy_result")
    assert result["ok"] and result["rollback_of"] == second["deploy_id"] and result["approved_by"] == "bob"
    assert world.ledger("api")[-1] == f"api v1.1.0 production {world.api['v1.1.0']}"
    assert last_message(done).startswith("Rolled back: deployed api v1.1.0 to production.")

    listed = await bot.deploys("production", "api")
    by_id = {d["deploy_id"]: d for d in listed["deploys"]}
    assert by_id[second["deploy_id"]]["faulty"] is True
    assert by_id[first["deploy_id"]]["faulty"] is False and by_id[result["deploy_id"]]["faulty"] is False
    assert [(lock["service"], lock["reason"]) for lock in listed["locks"]] == [
        ("api", "rolled back from v1.2.0 by alice")]

    # The lock stops api there, not another service, not api elsewhere.
    blocked = await bot.chat("deploy api v1.2.0 to production")
    assert "approval_requested" not in types(blocked)
    assert "api in production is locked by alice" in last_message(blocked)
    assert "rolled back from v1.2.0 by alice" in last_message(blocked)
    other = await bot.chat("deploy worker v2.0.0 to production")
    assert other["status"] == "waiting_for_approval"
    elsewhere = await bot.chat("deploy api v1.2.0 to staging")
    assert elsewhere["events"][-2]["ok"] is True
    assert world.ledger("api")[-1] == f"api v1.2.0 staging {world.api['v1.2.0']}"

    # A rollback of a rollback is refused: roll forward instead.
    again = await bot.chat("roll back api in production")
    assert again["status"] == "done" and "deploy" not in types(again)
    assert "is itself a rollback; I do not roll back a rollback" in last_message(again)
    assert len([line for line in world.ledger("api") if "production" in line]) == 3


async def test_a_rollback_with_no_target_says_so(bot, world):
    never = await bot.chat("roll back worker in production")
    assert "deploy" not in types(never)
    assert last_message(never) == (
        "worker has never been deployed to production by deploybot, so there is nothing to roll back.")

    await bot.chat("deploy worker v2.0.0 to staging")
    await bot.chat("deploy worker v2.0.0 to staging")  # the same commit again: nothing to go back to
    nothing = await bot.chat("roll back worker in staging")
    assert "deploy" not in types(nothing)
    assert last_message(nothing).startswith("There is nothing to roll worker in staging back to")
    assert world.ledger("worker") == [f"worker v2.0.0 staging {world.worker['v2.0.0']}"] * 2


async def test_rollback_through_the_api_deploys_under_the_same_rules(bot, world):
    await bot.chat("deploy web v1.0.0 to staging")
    current = (await bot.chat("deploy web v1.1.0 to staging"))["events"][-2]

    r = await bot.api.post("/deploys/rollback", json={"service": "web", "environment": "staging"},
                         headers=bot.auth("alice"))
    assert r.status_code == 201, r.text
    done = await settle(bot.api, r.json()["id"])
    assert done["events"][0]["text"] == "roll back web in staging"
    result = next(e for e in done["events"] if e["type"] == "deploy_result")
    assert result["ok"] and result["tag"] == "web/v1.0.0" and result["rollback_of"] == current["deploy_id"]
    assert world.ledger("web")[-1] == f"web web/v1.0.0 staging {world.web['web/v1.0.0']}"
    listed = await bot.deploys("staging", "web")
    assert listed["deploys"][1]["faulty"] is True
    assert [lock["reason"] for lock in listed["locks"]] == ["rolled back from web/v1.1.0 by alice"]

    refused = await bot.api.post("/deploys/rollback", json={"service": "billing", "environment": "staging"},
                                 headers=bot.auth("alice"))
    assert refused.status_code == 422 and "unknown service 'billing'" in refused.json()["detail"]


# --- the change preview ----------------------------------------------------------------------


async def test_the_change_preview_lists_the_commits_a_deploy_adds(bot, world):
    fresh = (await bot.chat("deploy api v1.1.0 to production"))["pending_approval"]["change"]
    assert fresh["from_commit"] == "" and fresh["to_commit"] == world.api["v1.1.0"]
    await bot.deployed("deploy api v1.0.0 to production")

    asked = await bot.chat("deploy api v1.2.0 to production")
    change = asked["pending_approval"]["change"]
    assert (change["from_tag"], change["from_commit"], change["to_commit"]) == (
        "v1.0.0", world.api["v1.0.0"], world.api["v1.2.0"])
    assert (change["ahead"], change["behind"]) == (3, 0)
    assert [c["subject"] for c in change["commits"]] == [
        "api: new billing page", "api: faster login", "api: add health check"]
    markdown = await bot.markdown(asked)
    assert "commits added:" in markdown and "api: faster login" in markdown


# --- the CI gate -----------------------------------------------------------------------------


async def test_the_ci_gate_blocks_a_failing_check_and_an_approver_may_deploy_anyway(bot, world, github):
    await bot.deployed("deploy mobile v3.0.0 to production")  # green: asks, and deploys
    red = world.mobile["v3.1.0"]
    github.set_status(red, "ci/build", "failure")
    github.add_check_run(red, "lint")

    blocked = await bot.chat("deploy mobile v3.1.0 to production")
    error = next(e for e in blocked["events"] if e["type"] == "error")
    assert error["kind"] == "checks" and "failing: ci/build" in error["message"] and "lint" not in error["message"]
    assert blocked["status"] == "done" and "approval_requested" not in types(blocked)
    assert len(github.dispatches) == 1

    refused = await bot.say(blocked, "deploy anyway: the build is flaky", user="alice")
    assert "alice may not deploy past the checks to production" in last_message(refused)
    assert refused["pending_approval"] is None and len(github.dispatches) == 1

    forced = await bot.say(refused, "deploy anyway: hotfix for the crash, CI is flaky", user="bob")
    assert forced["status"] == "waiting_for_approval", forced["events"]
    pending = forced["pending_approval"]
    assert (pending["tag"], pending["force"], pending["forced_by"]) == (
        "v3.1.0", "hotfix for the crash, CI is flaky", "bob")
    assert [c["subject"] for c in pending["change"]["commits"]] == ["mobile: push notifications"]
    assert len(github.dispatches) == 1  # forcing is not approving

    done = await bot.approve(forced)
    result = next(e for e in done["events"] if e["type"] == "deploy_result")
    assert result["ok"] and (result["force"], result["forced_by"]) == ("hotfix for the crash, CI is flaky", "bob")
    assert github.dispatches[-1]["inputs"]["tag"] == "v3.1.0" and github.dispatches[-1]["inputs"]["commit"] == red
    newest = (await bot.deploys("production", "mobile"))["deploys"][0]
    assert (newest["tag"], newest["force"], newest["forced_by"]) == (
        "v3.1.0", "hotfix for the crash, CI is flaky", "bob")

    # It crashes after all: rolled back on GitHub to the green v3.0.0 (its checks are asked too).
    back = await bot.chat("roll back mobile in production")
    change = back["pending_approval"]["change"]
    assert (back["pending_approval"]["tag"], change["ahead"], change["behind"]) == ("v3.0.0", 0, 1)
    assert [c["subject"] for c in change["commits"]] == ["mobile: push notifications"]
    rolled = await bot.approve(back)
    assert next(e for e in rolled["events"] if e["type"] == "deploy_result")["rollback_of"] == result["deploy_id"]
    assert github.dispatches[-1]["inputs"]["tag"] == "v3.0.0"
    assert github.dispatches[-1]["inputs"]["commit"] == world.mobile["v3.0.0"]


async def test_a_non_approvers_deploy_anyway_is_refused(bot, world, github):
    github.set_status(world.mobile["v3.1.0"], "ci/build", "failure")
    blocked = await bot.chat("deploy mobile v3.1.0 to production")
    refused = await bot.say(blocked, "deploy anyway: trust me", user="alice")
    errors = [e for e in refused["events"] if e["type"] == "error"]
    assert [e["kind"] for e in errors] == ["checks", "validation"]
    assert "alice may not deploy past the checks to production" in errors[1]["message"]
    assert "approval_requested" not in types(refused) and github.dispatches == []
    assert (await bot.deploys("production"))["deploys"] == []
