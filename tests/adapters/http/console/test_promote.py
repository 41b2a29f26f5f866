"""Promote on the board, in Chromium against a bot whose promotion order is development, then
production (development needs no approval): it names the tag and commit it will send before
asking (a confirmation, like Roll back's), and is shown disabled with the reason while
development holds nothing that passed, while production already runs that commit, and while
the service is locked or deploys to production are stopped there. What it sends is what the
thread deploys; a confirmation that named another commit than `promote` would pick now is refused."""

from __future__ import annotations

import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import expect

from bot.core import wording
from bot.testing.cluster import make_repo
from tests.adapters.http.console.conftest import PEOPLE, Console, serve_console
from tests.adapters.http.console.test_care import PHONE, fits
from tests.adapters.http.console.test_console import LIVE, approve_on_its_page, csrf, row, signed_in

pytestmark = [pytest.mark.redis, pytest.mark.processes, pytest.mark.network]

DONE = {"done", "failed", "cancelled", "waiting_for_human"}


@pytest.fixture(scope="module")
def console(redis_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Console]:
    tmp = tmp_path_factory.mktemp("console-promote")
    config = 'promotion = ["development", "production"]\n' + PEOPLE
    yield from serve_console(redis_url, tmp, config, make_repo(tmp / "repo"))


def commit_of(console: Console, tag: str) -> str:
    repo = Path(console.env["GIT_REPO"])
    return subprocess.run(["git", "-C", str(repo), "rev-parse", f"{tag}^{{commit}}"], check=True,
                          capture_output=True, text=True).stdout.strip()


def deployed_to_development(console: Console, tag: str) -> None:
    assert console.wait(console.start(f"deploy backend {tag} to development"), DONE)["status"] == "done"


def test_promote_names_what_it_sends_and_is_disabled_with_the_reason_when_it_would_do_nothing(
    context, console: Console,
):
    alice = signed_in(context, console, "alice")
    alice.goto(f"{console.url}/console/")
    backend = row(alice, "backend", "production")
    button = backend.get_by_role("button", name="Promote backend from development to production")
    # Development holds nothing that passed: shown, disabled, saying why
    expect(button).to_be_disabled()
    expect(backend.locator(".promote-off .why-not")).to_have_text(
        wording.nothing_to_promote("backend", "production", "development"))

    deployed_to_development(console, "v1.2.2")
    v122 = commit_of(console, "v1.2.2")
    asks = backend.locator("summary", has_text="Promote v1.2.2 from development")
    expect(asks).to_be_visible(timeout=LIVE)  # the board updates by itself
    asks.click()
    question = backend.locator("details.confirm")
    expect(question.locator(".confirm-text")).to_have_text(
        wording.confirm_promote("backend", "development", "production", "v1.2.2", v122))
    assert v122[:7] in question.locator(".confirm-text").inner_text()  # the tag and the commit, before asking
    console.shot(alice, "board-promote")
    alice.set_viewport_size(PHONE)
    fits(alice)
    console.shot(alice, "board-promote-phone")
    alice.set_viewport_size({"width": 1280, "height": 860})
    question.get_by_role("button", name="Yes, promote").click()
    expect(alice).to_have_url(re.compile(r"/console/threads/[^/?]+\?notice=promote$"))
    thread_id = alice.url.split("/threads/")[1].split("?")[0]
    pending = console.wait(thread_id)["pending_approval"]
    assert (pending["tag"], pending["commit"]) == ("v1.2.2", v122)  # what it named is what it sends
    approve_on_its_page(alice, console, thread_id)

    # Production runs that commit now: nothing to promote until a newer one passes development
    alice.goto(f"{console.url}/console/")
    expect(button).to_be_disabled()
    expect(backend.locator(".promote-off .why-not")).to_have_text(
        wording.runs_already("production", "v1.2.2", v122))
    deployed_to_development(console, "v1.2.3")
    expect(backend.locator("summary", has_text="Promote v1.2.3 from development")).to_be_visible(timeout=LIVE)

    # Locked there: disabled, with the lock's words; offered again once it is lifted
    backend.get_by_label("Reason to lock backend in production").fill("db migration")
    backend.get_by_role("button", name="Lock backend in production").click()
    alice.goto(f"{console.url}/console/")
    expect(button).to_be_disabled(timeout=LIVE)
    expect(backend.locator(".promote-off .why-not")).to_contain_text("locked by alice", timeout=LIVE)
    backend.get_by_role("button", name="Unlock backend in production").click()
    alice.goto(f"{console.url}/console/")
    expect(backend.locator("summary", has_text="Promote v1.2.3 from development")).to_be_visible(timeout=LIVE)

    # Deploys to production stopped: disabled, with the freeze's words
    production = alice.get_by_role("region", name="production", exact=True)
    production.locator("summary", has_text="Stop deploys").click()
    production.get_by_label("Reason to stop deploys to production").fill("incident 4711")
    production.get_by_role("button", name="Stop deploys to production").click()
    alice.goto(f"{console.url}/console/")
    expect(backend.locator(".promote-off .why-not")).to_contain_text("incident 4711", timeout=LIVE)
    expect(button).to_be_disabled()
    console.shot(alice, "board-promote-frozen")
    production.get_by_role("button", name="Resume deploys to production").click()
    alice.goto(f"{console.url}/console/")
    expect(backend.locator("summary", has_text="Promote v1.2.3 from development")).to_be_visible(timeout=LIVE)

    # A confirmation that named another commit than promote picks now is refused, nothing started
    before = {t["id"] for t in console.api().get("/threads", params={"limit": 100}).json()["threads"]}
    stale = alice.request.post(f"{console.url}/console/environments/production/services/backend/promote",
                               form={"csrf_token": csrf(alice), "tag": "v1.2.2", "commit": v122})
    assert stale.status == 409, stale.status
    assert wording.promotion_moved("v1.2.2", v122, "v1.2.3", commit_of(console, "v1.2.3")) in stale.text()
    assert {t["id"] for t in console.api().get("/threads", params={"limit": 100}).json()["threads"]} == before
