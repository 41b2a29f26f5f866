"""Promotion in order end to end (issue 28): a deploybot.toml with `promotion = ["staging",
"production"]`, real Redis, the in-process app served over HTTP, the deploy command writing
its ledger. Staging is free; bob approves production; alice asks. Everyone speaks through a
personal token (a file that names people trusts no bare name)."""

from __future__ import annotations

import html
import re
import subprocess
from dataclasses import replace
from datetime import timedelta
from pathlib import Path

import httpx
import pytest

from bot.core import wording
from bot.runtime.clock import utcnow
from tests.deploybot_toml import ALICE_AND_BOB
from tests.helpers import ledger_lines, settle, types

pytestmark = [pytest.mark.redis, pytest.mark.processes, pytest.mark.network]

TOML = ALICE_AND_BOB.top(promotion=["staging", "production"])


@pytest.fixture
def settings(settings, tmp_path: Path):
    config = tmp_path / "deploybot.toml"
    config.write_text(str(TOML))
    return settings.model_copy(update={"deploybot_config": config})


class Bot:
    def __init__(self, api, tokens: dict[str, str]) -> None:
        self.api, self.tokens = api, tokens

    def auth(self, user: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.tokens[user]}"}

    async def chat(self, text: str, user: str = "alice") -> dict:
        r = await self.api.post("/threads", json={"message": text}, headers=self.auth(user))
        assert r.status_code == 201, r.text
        return await settle(self.api, r.json()["id"])

    async def say(self, thread: dict, text: str, user: str = "alice", **decision: object) -> dict:
        body = {"text": text, **decision}
        r = await self.api.post(f"/threads/{thread['id']}/responses", json=body, headers=self.auth(user))
        assert r.status_code == 202, r.text
        return await settle(self.api, thread["id"])

    async def approve(self, thread: dict) -> dict:
        assert thread["status"] == "waiting_for_approval", thread["events"]
        return await self.say(thread, "", "bob", approval_id=thread["pending_approval"]["approval_id"], approve=True)


@pytest.fixture
async def bot(api, app) -> Bot:
    return Bot(api, {person: (await app.credentials.create(person, "tests"))[1] for person in ("alice", "bob")})


def commit(repo: Path, tag: str) -> str:
    return subprocess.run(["git", "-C", str(repo), "rev-parse", tag], check=True, capture_output=True,
                          text=True).stdout.strip()


def production(ledger: Path) -> list[str]:
    return [line for line in ledger_lines(ledger) if "production" in line]


def error(thread: dict) -> dict:
    return next(e for e in reversed(thread["events"]) if e["type"] == "error")


async def test_production_takes_only_what_passed_staging(bot, app, git_repo, ledger):
    # v1.2.2 went to staging two hours ago (recorded so), and was fine.
    staged = await bot.chat("deploy backend v1.2.2 to staging")
    [record] = await app.history.recent("staging", 1, service="backend")
    await app.history.record(replace(record, at=utcnow() - timedelta(hours=2, minutes=1)))

    refused = await bot.chat("deploy backend v1.2.3 to production")
    assert "approval_requested" not in types(refused) and production(ledger) == []
    assert error(refused)["kind"] == "promotion"
    assert error(refused)["message"] == (
        f"v1.2.3 ({commit(git_repo, 'v1.2.3')[:7]}) has not been deployed to staging; the newest commit that "
        'has is v1.2.2, 2 hours ago. An approver may say "deploy anyway: REASON".'
    )

    # Only an approver goes past it; the reason and who gave it are recorded with the deploy.
    not_alice = await bot.say(refused, "deploy anyway: trust me")
    assert not_alice["pending_approval"] is None and "alice may not" in error(not_alice)["message"]
    forced = await bot.say(not_alice, "deploy anyway: hotfix, staging is down", user="bob")
    assert (forced["pending_approval"]["force"], forced["pending_approval"]["forced_by"]) == (
        "hotfix, staging is down", "bob")
    done = await bot.approve(forced)
    result = next(e for e in done["events"] if e["type"] == "deploy_result")
    assert result["ok"] and result["tag"] == "v1.2.3"
    [newest] = await app.history.recent("production", 1, service="backend")
    assert (newest.force, newest.forced_by) == ("hotfix, staging is down", "bob")

    # Asked while it passed, stopped when staging's deploy was marked faulty before bob approved.
    waiting = await bot.chat("deploy backend v1.2.2 to production")
    assert waiting["status"] == "waiting_for_approval", waiting["events"]
    await app.history.mark_faulty("staging", staged["events"][-2]["deploy_id"])
    stopped = await bot.approve(waiting)
    assert error(stopped)["kind"] == "promotion" and "deploy_started" not in types(stopped)
    assert error(stopped)["message"].startswith(f"v1.2.2 ({commit(git_repo, 'v1.2.2')[:7]}) was marked faulty in "
                                                "staging; no commit has yet.")
    assert len(production(ledger)) == 1


async def test_promote_proposes_the_newest_commit_that_passed_staging(bot, app, git_repo, ledger):
    nothing = await bot.chat("promote backend to production")
    assert "deploy" not in types(nothing)
    assert nothing["events"][-1]["message"] == (
        "Nothing to promote: no commit of backend has passed staging yet, so none may go to production.")

    for tag in ("v1.2.1", "v1.2.2", "v1.2.3"):
        await bot.chat(f"deploy backend {tag} to staging")
    await bot.approve(await bot.chat("deploy backend v1.2.1 to production"))  # what is on there now
    failed = (await app.history.recent("staging", 1, service="backend"))[0]
    await app.history.mark_faulty("staging", failed.deploy_id)  # v1.2.3 did not hold up

    # A forged request (no token that proves who sends it) starts nothing.
    forged = await bot.api.post("/deploys/promote", json={"service": "backend", "environment": "production",
                                                          "user": "bob"}, headers={"Authorization": "Bearer dbt_x_y"})
    assert forged.status_code == 401

    r = await bot.api.post("/deploys/promote", json={"service": "backend", "environment": "production"},
                           headers=bot.auth("alice"))
    assert r.status_code == 201, r.text
    asked = await settle(bot.api, r.json()["id"])
    assert asked["events"][0]["text"] == "promote backend to production"
    pending = asked["pending_approval"]
    assert (pending["tag"], pending["commit"]) == ("v1.2.2", commit(git_repo, "v1.2.2"))
    change = pending["change"]
    assert (change["from_tag"], change["ahead"], [c["subject"] for c in change["commits"]]) == (
        "v1.2.1", 1, ["release v1.2.2"])
    assert pending["reason"].startswith("promoted: v1.2.2 passed staging")

    chat = await bot.chat("promote backend to production")
    assert chat["pending_approval"]["tag"] == "v1.2.2"
    done = await bot.approve(chat)
    assert next(e for e in done["events"] if e["type"] == "deploy_result")["ok"]
    assert [line.split()[2] for line in production(ledger)] == ["v1.2.1", "v1.2.2"]

    no_order = await bot.api.post("/deploys/promote", json={"service": "backend", "environment": "staging"},
                                  headers=bot.auth("alice"))
    assert no_order.status_code == 422 and "no environment before staging" in no_order.json()["detail"]

    # The console's board: a Promote button where the order has an environment before, as the person;
    # shown disabled with the reason while it would do nothing (tests/adapters/http/console/test_promote.py: the rest).
    async with httpx.AsyncClient(base_url=bot.api.base_url) as browser:
        signed = await browser.post("/auth/link", json={"code": await app.credentials.issue_link("alice", 60)})
        assert signed.status_code == 200, signed.text
        board = (await browser.get("/console/")).text
        assert re.findall(r'action="/console/environments/(\w+)/services/(\w+)/promote"', board) == []
        assert re.findall(r'aria-label="Promote (\w+) from staging to (\w+)"', board) == [
            ("backend", "production"), ("frontend", "production")]
        assert html.escape(wording.runs_already("production", "v1.2.2", commit(git_repo, "v1.2.2"))) in board
        assert html.escape(wording.nothing_to_promote("frontend", "production", "staging")) in board
        # A form posted without the commit a confirmation named starts the thread, as the API does
        csrf = re.search(r'name="csrf_token" value="([^"]+)"', board)[1]  # type: ignore[index]
        action = "/console/environments/production/services/backend/promote"
        assert (await browser.post(action, data={"csrf_token": "forged"})).status_code == 403
        r = await browser.post(action, data={"csrf_token": csrf})
        assert r.status_code == 303 and r.headers["location"].endswith("?notice=promote")
        thread = await settle(bot.api, r.headers["location"].split("/threads/")[1].split("?")[0])
        assert thread["events"][0]["text"] == "promote backend to production"
        assert thread["events"][0]["person"] == "alice" and thread["pending_approval"]["tag"] == "v1.2.2"
