"""A deploy under verification in the console (Chromium, against its own `python -m bot serve`
whose deploybot.toml verifies backend in production with an HTTP check of the bot's own
/healthz, a real endpoint): the board and the thread page show `verifying` with the check's
latest value, live; someone who may not end it sees no buttons and a forged post is refused;
an approver's Verify now ends the bake, the deploy verified in the history."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from datetime import datetime

import pytest
from playwright.sync_api import expect

from bot.testing.cluster import free_port, make_repo
from tests.adapters.http.console.conftest import PEOPLE, Console, serve_console
from tests.adapters.http.console.test_console import LIVE, csrf, row, section, signed_in
from tests.helpers import reply

pytestmark = [pytest.mark.redis, pytest.mark.processes, pytest.mark.network]


@pytest.fixture(scope="module")
def console(redis_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Console]:
    tmp = tmp_path_factory.mktemp("console-verify")
    port = free_port()  # the check below is the bot's own /healthz
    yield from serve_console(redis_url, tmp, PEOPLE + f"""
[services.backend]
[services.frontend]
[services.backend.verify.production]
bake = "10m"
interval = "1s"
[[services.backend.verify.production.http]]
url = "http://127.0.0.1:{port}/healthz"
""", make_repo(tmp / "repo"), port)


def test_a_verifying_deploy_shows_live_and_an_approver_verifies_it_now(context, console: Console):
    thread_id, pending = console.waiting_deploy()
    alice = signed_in(context, console, "alice")
    board = context.new_page()  # left open: it must update by itself
    board.goto(f"{console.url}/console/")
    alice.goto(f"{console.url}/console/threads/{thread_id}")
    alice.get_by_role("button", name="Approve", exact=True).click()
    verifying = alice.get_by_role("region", name=re.compile("^Verifying backend"))
    expect(verifying).to_contain_text("on failure: propose", timeout=LIVE)
    expect(verifying).to_contain_text(f"{console.url}/healthz: HTTP 200 (holds)", timeout=LIVE)
    prod = section(board, "production")
    expect(prod.locator(".verifying")).to_contain_text("Verifying backend v1.2.3", timeout=LIVE)
    expect(prod.locator(".verifying")).to_contain_text("HTTP 200 (holds)")
    assert console.thread(thread_id)["status"] == "verifying"

    # bob may not approve production: no buttons, and his own valid form post is refused
    bob = signed_in(context.browser.new_context(), console, "bob")
    bob.goto(f"{console.url}/console/threads/{thread_id}")
    expect(bob.get_by_role("region", name=re.compile("^Verifying"))).to_contain_text("You cannot end the verification")
    expect(bob.get_by_role("button", name="Verify now")).to_have_count(0)
    for path, form in (("verify-now", {}), ("skip-verification", {"reason": "mine"})):
        r = bob.request.post(f"{console.url}/console/threads/{thread_id}/{path}",
                             form={"csrf_token": csrf(bob), **form})
        assert r.status == 403 and "bob may not skip verification in production" in r.text(), (path, r.status)
    assert console.thread(thread_id)["status"] == "verifying"
    console.shot(alice, "thread-verifying")

    console.llm.script(reply(intent="done_for_now", message="Verified."))
    verifying.get_by_role("button", name="Verify now").click()
    expect(alice).to_have_url(re.compile(r"notice=verify$"))
    body = console.wait(thread_id, {"done", "failed", "cancelled", "waiting_for_human"})
    [ended] = [e for e in body["events"] if e["type"] == "verification_ended"]
    assert (ended["outcome"], ended["early"], ended["by"]) == ("verified", True, "alice"), ended
    expect(row(board, "backend", "production").locator(".record.ok")).to_contain_text("v1.2.3", timeout=LIVE)
    expect(prod.locator(".verifying")).to_have_count(0, timeout=LIVE)
    with console.api() as api:
        [record] = api.get("/deploys", params={"environment": "production"}).json()["deploys"]
    assert datetime.fromisoformat(record["verified_at"]) == datetime.fromisoformat(ended["at"]), record
    assert record["faulty"] is False


def test_a_skipped_verification_is_on_the_deploys_record_its_audit_page_and_exports(context, console: Console):
    thread_id, _ = console.waiting_deploy("v1.2.2")
    alice = signed_in(context, console, "alice")
    alice.goto(f"{console.url}/console/threads/{thread_id}")
    alice.get_by_role("button", name="Approve", exact=True).click()
    verifying = alice.get_by_role("region", name=re.compile("^Verifying backend"))
    expect(verifying.get_by_role("button", name="Skip verification")).to_be_visible(timeout=LIVE)
    console.llm.script(reply(intent="done_for_now", message="Skipped."))
    verifying.get_by_label("Reason to skip verification").fill("dashboards down, <b>checked</b> by hand")
    verifying.get_by_role("button", name="Skip verification").click()
    body = console.wait(thread_id, {"done", "failed", "cancelled", "waiting_for_human"})
    [ended] = [e for e in body["events"] if e["type"] == "verification_ended"]
    assert (ended["outcome"], ended["by"]) == ("skipped", "alice"), ended
    said = "verification skipped by alice: dashboards down, <b>checked</b> by hand"  # as text, escaped

    for viewport, name in (({"width": 1280, "height": 860}, "desktop"), ({"width": 390, "height": 844}, "phone")):
        alice.set_viewport_size(viewport)
        alice.goto(f"{console.url}/console/deploys?environment=production")
        record = alice.locator(".record", has_text="v1.2.2").first
        expect(record.locator(".flag-skipped")).to_have_text(said)
        record.get_by_role("link", name="audit").click()
        verdict = alice.locator("ol.audit li", has=alice.get_by_role("heading", name="Verification"))
        expect(verdict).to_contain_text(said)
        console.shot(alice, f"deploy-skipped-verification-{name}")

    for export in ("deploys.csv", "deploys.jsonl"):
        got = alice.request.get(f"{console.url}/console/{export}?environment=production")
        assert got.status == 200, export
        text = got.text()
        assert "verification_skipped_by" in text and "dashboards down, <b>checked</b> by hand" in text, text
    rows = [json.loads(line) for line in alice.request.get(
        f"{console.url}/console/deploys.jsonl?environment=production").text().splitlines()]
    [skipped] = [r for r in rows if r["tag"] == "v1.2.2"]
    assert (skipped["verification_skipped_by"], skipped["verification_skip_reason"], skipped["verified_at"]) == (
        "alice", "dashboards down, <b>checked</b> by hand", None), skipped
    assert datetime.fromisoformat(skipped["verification_skipped_at"]) == datetime.fromisoformat(ended["at"])
