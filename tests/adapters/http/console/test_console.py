"""The web console in Chromium against the real bot: signing in with a link, approving and
watching the deploy arrive live, rejecting with feedback and watching the model re-plan,
locking and unlocking an environment and a service there, a change preview and a rollback
from the board, what a non-approver sees (and the 403 of a forged form), the CSRF token,
text that holds HTML or markdown (a message, a commit subject) shown as text, stopping the
line from the board (a deploy stopped by it, deployed anyway, then resumed), and a deploy
that needs two approvals from different people.
"""

from __future__ import annotations

import csv
import io
import json
import re

import httpx
import pytest
from playwright.sync_api import Page, expect

from tests.adapters.http.console.conftest import HOSTILE_SUBJECT, Console
from tests.helpers import ledger_lines, reply

pytestmark = pytest.mark.network

LIVE = 15_000  # ms a live update may take (the stream polls every second)


def signed_in(context, console: Console, person: str) -> Page:
    page = context.new_page()
    page.goto(console.link(person))  # the link's page uses nothing: its button signs in
    expect(page.get_by_role("heading", name=f"Sign in as {person}")).to_be_visible()
    page.get_by_role("button", name=f"Sign in as {person}").click()
    expect(page).to_have_url(re.compile(r"/console/$"))  # signed in, the console opens
    expect(page.get_by_role("button", name="Sign out")).to_be_visible()
    expect(page.locator("header .who")).to_contain_text(person)
    return page


def card(page: Page, thread_id: str):
    """The approval card of `thread_id` on the page."""
    return page.locator("article.approval", has=page.locator(f"a[href='/console/threads/{thread_id}']"))


def section(page: Page, name: str):
    return page.get_by_role("region", name=name, exact=True)


def csrf(page: Page) -> str:
    return page.locator("input[name=csrf_token]").first.get_attribute("value")


def row(page: Page, service: str, environment: str):
    """A service's row in an environment's card on the board."""
    return page.get_by_role("group", name=f"{service} in {environment}", exact=True)


def approve_on_its_page(page: Page, console: Console, thread_id: str) -> dict:
    """Approve the thread's pending deploy on the thread's page; the thread once it is done."""
    page.goto(f"{console.url}/console/threads/{thread_id}")
    page.locator("article.approval").get_by_role("button", name="Approve", exact=True).click()
    expect(page).to_have_url(re.compile(r"notice=approved$"))
    body = console.wait(thread_id, {"done", "failed", "cancelled", "waiting_for_human"})
    assert body["status"] == "done", body["events"]
    return body


def deploy_id(body: dict) -> str:
    return next(e["deploy_id"] for e in body["events"] if e["type"] == "deploy_result")


def test_sign_in_approve_and_the_deploy_shows_up_live(context, console: Console):
    thread_id, pending = console.waiting_deploy()
    page = signed_in(context, console, "alice")
    board = context.new_page()  # left open, never reloaded: it must update by itself
    board.goto(f"{console.url}/console/")
    prod = section(board, "production")
    expect(row(board, "backend", "production")).to_contain_text("Nothing deployed yet")
    expect(row(board, "frontend", "production")).to_contain_text("Nothing deployed yet")
    expect(prod.get_by_role("group", name=re.compile(r" in production$"))).to_have_count(2)  # a row per service
    expect(card(board, thread_id)).to_contain_text("v1.2.3")  # waiting, on the board too
    board.evaluate("window.__stayed = true")

    page.goto(f"{console.url}/console/approvals")
    approval = card(page, thread_id)
    expect(approval).to_contain_text("Deploy backend v1.2.3 to production")
    expect(approval).to_contain_text(pending["commit"][:12])
    expect(approval).to_contain_text("carol")  # who asked
    expect(approval).to_contain_text("alice")  # who may decide
    expect(approval.locator("[data-expires]")).to_have_text(re.compile(r"\d+ min \d\d s left"))
    expect(approval.locator(".change")).to_contain_text("nothing deployed there yet")

    console.llm.script(reply(intent="done_for_now", message="Deployed backend v1.2.3 to production."))
    approval.get_by_role("button", name="Approve", exact=True).click()
    expect(page).to_have_url(re.compile(r"/console/approvals\?notice=approved$"))
    expect(page.get_by_role("status")).to_contain_text("Approved")

    backend = row(board, "backend", "production")
    expect(backend.locator(".record.ok")).to_contain_text("v1.2.3", timeout=LIVE)
    expect(backend).to_contain_text("approved by alice")
    expect(backend).to_contain_text("asked by carol")
    expect(backend.locator("details.confirm")).to_have_count(0)  # its first deploy: nothing earlier to roll back to
    expect(row(board, "frontend", "production")).to_contain_text("Nothing deployed yet")
    expect(section(board, "production")).to_contain_text("No approval waiting")
    assert board.evaluate("window.__stayed === true"), "the board was reloaded instead of updated live"

    body = console.wait(thread_id)
    assert body["status"] == "done", body["events"]
    mine = [line for line in ledger_lines(console.ledger) if line.startswith(thread_id)]
    assert len(mine) == 1 and mine[0].endswith("backend v1.2.3 production"), ledger_lines(console.ledger)
    decision = next(e for e in body["events"] if e["type"] == "human_response" and e["approve"])
    assert (decision["person"], decision["via"], decision["channel"]) == ("alice", "session", "console")

    # the history, and the deploy's audit trail: request -> proposal -> approval evidence -> run -> outcome
    page.goto(f"{console.url}/console/deploys?environment=production")
    record = page.locator(".record", has_text="v1.2.3")
    expect(record).to_contain_text("approved by alice")
    record.get_by_role("link", name="audit").click()
    audit = page.locator("ol.audit")
    expect(audit).to_contain_text("deploy the latest backend to production")
    expect(audit).to_contain_text("The model proposed deploying backend v1.2.3 to production")
    expect(audit).to_contain_text("session")  # the channel's evidence: a signed-in session
    expect(audit).to_contain_text(decision["evidence"])
    expect(audit).to_contain_text("deploying backend v1.2.3 production")  # the output's tail
    expect(audit).to_contain_text("Deployed (exit code 0)")
    console.shot(page, "deploy")

    page.goto(f"{console.url}/console/threads/{thread_id}")
    console.shot(page, "thread")
    page.set_viewport_size({"width": 390, "height": 844})  # a phone
    page.goto(f"{console.url}/console/")
    console.shot(page, "board-phone")

    # the exports, with the same filters, carry the audit trail
    rows = list(csv.DictReader(io.StringIO(context.request.get(
        f"{console.url}/console/deploys.csv?environment=production&outcome=ok").text())))
    mine = [r for r in rows if r["thread_id"] == thread_id]
    assert len(mine) == 1 and mine[0]["decided_by"] == "alice" and mine[0]["decided_via"] == "session"
    assert mine[0]["requested_by"] == "carol" and mine[0]["tag"] == "v1.2.3" and mine[0]["ok"] == "True"
    lines = context.request.get(f"{console.url}/console/deploys.jsonl?environment=production").text().splitlines()
    exported = [json.loads(line) for line in lines]
    assert any(e["deploy_id"] == mine[0]["deploy_id"] and e["decision_evidence"] for e in exported)
    assert context.request.get(f"{console.url}/console/deploys.csv?outcome=failed").text().count("\n") <= 1


def test_reject_with_feedback_and_the_model_replans(context, console: Console):
    thread_id, _ = console.waiting_deploy()
    page = signed_in(context, console, "alice")
    page.goto(f"{console.url}/console/threads/{thread_id}")
    before = page.locator("ol.timeline > li").count()
    page.evaluate("window.__stayed = true")
    console.llm.script(reply(intent="deploy", service="backend", tag="v1.2.2", environment="production",
                             reason="v1.2.3 has a bug, so the one before"))
    approval = page.locator("article.approval")
    approval.get_by_label("Feedback for the model").fill("v1.2.3 has a bug: ship v1.2.2")
    console.llm.delay = 1.5  # the new plan comes after the page has loaded: it must arrive live
    try:
        approval.get_by_role("button", name="Reject", exact=True).click()
        expect(page).to_have_url(re.compile(r"notice=rejected"))
        timeline = page.locator("ol.timeline")
        expect(timeline).to_contain_text("alice rejected: v1.2.3 has a bug: ship v1.2.2")
        expect(timeline).not_to_contain_text("v1.2.2 to production")
        page.evaluate("window.__stayed = true")
        expect(timeline).to_contain_text("deploybot proposes: deploy backend v1.2.2 to production", timeout=LIVE)
    finally:
        console.llm.delay = 0
    expect(page.locator("article.approval")).to_contain_text("v1.2.2")
    assert page.evaluate("window.__stayed === true")
    assert page.locator("ol.timeline > li").count() > before
    # a model step shows its parsed form behind a toggle
    step = page.locator("li.event-deploy").last
    step.get_by_text("Model step").click()
    expect(step).to_contain_text('"tag": "v1.2.2"')
    with console.api() as api:
        api.post(f"/threads/{thread_id}/cancel", json={"reason": "test over"})


def test_a_change_preview_then_a_rollback_from_the_board(context, console: Console):
    page = signed_in(context, console, "alice")
    first = console.start("deploy frontend v1.2.3 to production")  # exact commands: the model is not asked
    assert console.wait(first)["status"] == "waiting_for_approval"
    approve_on_its_page(page, console, first)
    second = console.start("deploy frontend v1.3.0 to production")
    assert console.wait(second)["status"] == "waiting_for_approval"

    # what it changes: the one wording every channel uses, a commit subject shown as text
    page.goto(f"{console.url}/console/approvals")
    change = card(page, second).locator(".change")
    expect(change).to_contain_text(re.compile(r"from v1\.2\.3 \(\w{7}\) to \w{7}: 1 commit ahead"))
    expect(change).to_contain_text("commits added:")
    expect(change.locator("li").last).to_contain_text(f"{HOSTILE_SUBJECT} (dana)")
    assert change.locator("img, b").count() == 0 and page.evaluate("window.__pwned === undefined")
    console.shot(page, "approvals")
    approve_on_its_page(page, console, second)
    faulty = deploy_id(console.thread(second))

    # Roll back, on the current deploy: a thread of its own, with the exact command
    page.goto(f"{console.url}/console/")
    frontend = row(page, "frontend", "production")
    expect(frontend.locator(".record.ok")).to_contain_text("v1.3.0")
    frontend.locator("summary", has_text="Roll back").click()  # asks first, saying what will happen
    expect(frontend.locator(".confirm-text")).to_contain_text("Roll back frontend in production from v1.3.0 to v1.2.3?")
    frontend.get_by_role("button", name="Yes, roll back").click()
    expect(page).to_have_url(re.compile(r"/console/threads/[^/?]+\?notice=rollback$"))
    expect(page.get_by_role("status")).to_contain_text("Rollback asked for")
    rollback = page.url.split("/threads/")[1].split("?")[0]
    body = console.wait(rollback)
    assert body["status"] == "waiting_for_approval", body["events"]
    assert body["events"][0]["text"] == "roll back frontend in production" and body["events"][0]["person"] == "alice"
    asking = page.locator("article.approval")
    expect(asking).to_contain_text("Deploy frontend v1.2.3 to production")
    expect(asking).to_contain_text(f"rolls back deploy {faulty}")
    expect(asking.locator(".change")).to_contain_text("goes back 1 commit")
    expect(asking.locator(".change")).to_contain_text(HOSTILE_SUBJECT)
    console.shot(page, "rollback")
    approve_on_its_page(page, console, rollback)
    assert ledger_lines(console.ledger)[-1].endswith("frontend v1.2.3 production"), ledger_lines(console.ledger)

    # the history: the deploy rolled back is faulty, the rollback says what it rolled back,
    # and neither gets a Roll back button (a rollback is rolled forward, not back)
    page.goto(f"{console.url}/console/deploys?environment=production&service=frontend")
    records = page.locator(".record")
    expect(records).to_have_count(3)
    expect(records.nth(0)).to_contain_text(f"rolled back deploy {faulty}")
    expect(records.nth(1)).to_contain_text("v1.3.0")
    expect(records.nth(1)).to_contain_text("faulty: rolled back")
    expect(page.locator("summary", has_text="Roll back")).to_have_count(0)
    expect(page.locator("#f-service")).to_have_value("frontend")
    console.shot(page, "deploys")
    exported = [json.loads(line) for line in context.request.get(
        f"{console.url}/console/deploys.jsonl?environment=production&service=frontend").text().splitlines()]
    assert [(e["service"], e["tag"], e["faulty"], e["rollback_of"]) for e in exported] == [
        ("frontend", "v1.2.3", False, faulty), ("frontend", "v1.3.0", True, None), ("frontend", "v1.2.3", False, None)]
    header = context.request.get(f"{console.url}/console/deploys.csv?service=frontend").text().splitlines()[0]
    assert {"rollback_of", "force", "forced_by", "faulty"} <= set(header.split(","))

    # a rollback locks the service there, until someone has looked: unlocked from its row
    page.goto(f"{console.url}/console/")
    frontend = row(page, "frontend", "production")
    expect(frontend).to_contain_text("Locked by alice: rolled back from v1.3.0 by alice")
    expect(frontend.locator("summary", has_text="Roll back")).to_have_count(0)
    console.shot(page, "board")
    frontend.get_by_role("button", name="Unlock frontend in production", exact=True).click()
    expect(frontend).to_contain_text("Not locked.", timeout=LIVE)

    # the shared token reads, and may not ask; nor may a forged or stale form
    token = csrf(page)
    base = f"{console.url}/console/environments/production/services"
    r = context.request.post(f"{base}/frontend/rollback", form={"csrf_token": token, "deploy_id": faulty})
    assert r.status == 409 and "reload the page" in r.text()
    r = context.request.post(f"{base}/payments/rollback", form={"csrf_token": token})
    assert r.status == 404 and "unknown service" in r.text()
    r = context.request.post(f"{base}/frontend/rollback", form={"csrf_token": "forged"})
    assert r.status == 403
    with console.api() as api:
        assert "Roll back" not in api.get("/console/").text
        assert api.post(f"{base}/backend/rollback", data={"csrf_token": "x"}).status_code == 403


def test_lock_and_unlock(context, console: Console):
    page = signed_in(context, console, "alice")
    staging = section(page, "staging")
    expect(staging).to_contain_text("Not locked.")
    staging.get_by_label("Reason to lock staging", exact=True).fill("release freeze <b>until Monday</b>")
    staging.get_by_role("button", name="Lock staging", exact=True).click()
    expect(staging).to_contain_text("Locked by alice: release freeze <b>until Monday</b>", timeout=LIVE)
    expect(staging.locator("b")).to_have_count(0)
    # the services there are stopped by it, and cannot be locked on their own meanwhile
    expect(row(page, "backend", "staging")).to_contain_text("the lock on staging stops its deploys")
    expect(staging.get_by_role("button", name=re.compile("^Lock"))).to_have_count(0)
    console.shot(page, "board-locked")
    staging.get_by_role("button", name="Unlock staging", exact=True).click()
    expect(staging).to_contain_text("Not locked.", timeout=LIVE)
    expect(staging.get_by_role("button", name="Lock staging", exact=True)).to_be_visible()

    # one service there: `lock backend in staging: REASON`, as in chat. A fresh page first: the
    # unlock's live update can still replace the board while the form is filled (under load the
    # typed reason went with the replaced form)
    page.reload()
    backend = row(page, "backend", "staging")
    backend.get_by_label("Reason to lock backend in staging", exact=True).fill("hotfix <i>first</i>")
    backend.get_by_role("button", name="Lock backend in staging", exact=True).click()
    expect(backend).to_contain_text("Locked by alice: hotfix <i>first</i>", timeout=LIVE)
    expect(row(page, "frontend", "staging").get_by_role("button", name="Lock frontend in staging")).to_be_visible()
    expect(staging.get_by_role("button", name="Lock staging", exact=True)).to_be_visible()
    with console.api() as api:
        held = api.get("/deploys", params={"environment": "staging"}).json()
    assert [(lock["service"], lock["owner"], lock["reason"]) for lock in held["locks"]] == [
        ("backend", "manual:alice", "hotfix <i>first</i>")], held
    backend.get_by_role("button", name="Unlock backend in staging", exact=True).click()
    expect(backend).to_contain_text("Not locked.", timeout=LIVE)
    # development names nobody: nobody may lock it, so there is no button
    expect(section(page, "development").get_by_role("button", name=re.compile("^Lock"))).to_have_count(0)


def test_a_non_approver_sees_no_buttons_and_a_forged_post_is_refused(context, console: Console):
    thread_id, pending = console.waiting_deploy()
    page = signed_in(context, console, "bob")
    page.goto(f"{console.url}/console/approvals")
    approval = card(page, thread_id)
    expect(approval).to_contain_text("Deploy backend v1.2.3 to production")
    expect(approval).to_contain_text("bob is not an approver for production")
    expect(page.get_by_role("button", name="Approve")).to_have_count(0)
    expect(page.get_by_role("button", name="Reject")).to_have_count(0)
    page.goto(f"{console.url}/console/")
    expect(section(page, "staging").get_by_role("button", name=re.compile("^Lock"))).to_have_count(0)
    expect(page.get_by_role("button", name=re.compile("^(Stop|Resume) deploys"))).to_have_count(0)
    expect(page.locator("details.stop")).to_have_count(0)

    token = csrf(page)  # bob's own, valid token: the refusal is the policy's, not the CSRF check's
    for path in ("/console/environments/production/stop", "/console/stop"):
        r = context.request.post(f"{console.url}{path}", form={"csrf_token": token, "reason": "mine now"})
        assert r.status == 403 and "bob may not stop or resume deploys" in r.text(), (path, r.status)
    r = context.request.post(f"{console.url}/console/environments/production/resume", form={"csrf_token": token})
    assert r.status == 403
    base = f"{console.url}/console/approvals/{thread_id}/{pending['approval_id']}"
    r = context.request.post(f"{base}/approve", form={"csrf_token": token})
    assert r.status == 403 and "bob is not an approver for production" in r.text()
    r = context.request.post(f"{base}/reject", form={"csrf_token": token, "feedback": "no"})
    assert r.status == 403
    r = context.request.post(f"{console.url}/console/environments/staging/lock",
                             form={"csrf_token": token, "reason": "mine now"})
    assert r.status == 403 and "bob may not lock staging" in r.text()
    r = context.request.post(f"{console.url}/console/environments/staging/services/backend/lock",
                             form={"csrf_token": token, "reason": "mine now"})
    assert r.status == 403 and "bob may not lock staging" in r.text()
    after = console.wait(thread_id)
    assert after["status"] == "waiting_for_approval" and not any(e["type"] == "human_response" for e in after["events"])
    with console.api() as api:  # the shared token may not decide through the console either
        r = api.post(f"{base}/approve", data={"csrf_token": "x"})
        assert r.status_code == 403
    with console.api() as api:
        api.post(f"/threads/{thread_id}/cancel", json={"reason": "test over"})


def test_a_post_without_the_csrf_token_is_refused(context, console: Console):
    thread_id, pending = console.waiting_deploy()
    page = signed_in(context, console, "alice")
    base = f"{console.url}/console/approvals/{thread_id}/{pending['approval_id']}/approve"
    versions = len(console.thread(thread_id)["events"])
    for form in ({}, {"csrf_token": ""}, {"csrf_token": "forged"}):
        r = context.request.post(base, form=form)
        assert r.status == 403 and "CSRF" in r.text(), (form, r.status)
    other = signed_in(context.browser.new_context(), console, "bob")  # bob's token is not alice's
    r = context.request.post(base, form={"csrf_token": csrf(other)})
    assert r.status == 403
    other.context.close()
    assert len(console.thread(thread_id)["events"]) == versions
    assert console.thread(thread_id)["status"] == "waiting_for_approval"
    # the JSON API keeps its header check for the same session
    r = context.request.post(f"{console.url}/threads/{thread_id}/responses",
                             data={"approval_id": pending["approval_id"], "approve": True})
    assert r.status == 403
    page.goto(f"{console.url}/console/threads/{thread_id}")
    page.locator("summary", has_text="Cancel").click()
    page.get_by_role("button", name="Yes, cancel it", exact=True).click()
    expect(page.locator(".thread-meta")).to_contain_text("cancelled")


def test_html_and_markdown_in_a_message_render_as_text(context, console: Console):
    hostile = ("<script>window.__pwned = 1</script><img src=x onerror=\"window.__pwned = 2\"> **bold** "
               "[link](javascript:alert(1))\n- 12:00:00 deploybot: deployed backend v9 to production")
    thread_id = console.start(hostile, reply(intent="request_more_information", message="<i>which</i> tag?"))
    console.wait(thread_id)
    page = signed_in(context, console, "alice")
    page.goto(f"{console.url}/console/threads/{thread_id}")
    timeline = page.locator("ol.timeline")
    first = timeline.locator("li").first.locator(".words")
    expect(first).to_contain_text("<script>window.__pwned = 1</script>")
    expect(first).to_contain_text("**bold** [link](javascript:alert(1))")
    expect(timeline).to_contain_text("deploybot asks: <i>which</i> tag?")
    assert timeline.locator("script, img, i, b, a[href^=javascript]").count() == 0
    assert page.evaluate("window.__pwned === undefined")
    # the forged line stays inside its own event: one item per event, no more
    events = console.thread(thread_id)["events"]
    expect(timeline.locator(":scope > li")).to_have_count(len(events))
    page.goto(f"{console.url}/console/threads?q=pwned")
    expect(page.locator("table.threads tbody")).to_contain_text("<script>window.__pwned")
    assert page.locator("table.threads script").count() == 0
    console.shot(page, "threads")


def test_pages_refuse_bad_input_with_a_page_and_ask_strangers_to_sign_in(console: Console):
    with httpx.Client(base_url=console.url, timeout=10) as anonymous:
        r = anonymous.get("/console/")
        assert r.status_code == 401 and "Sign in to deploybot" in r.text and "csrf" not in r.text.lower()
        assert anonymous.get("/console/deploys.csv").status_code == 401
        assert anonymous.get("/console/changes").status_code == 401
        assert anonymous.get("/").status_code == 307
        assert anonymous.get("/threads").status_code == 401  # the API is as closed as before
        assert anonymous.get("/console/static/console.js").status_code == 200
    with console.api() as api:  # the shared token reads the console (and decides nothing)
        assert api.get("/console/").status_code == 200
        for path, status in [
            ("/console/threads/0123456789abcdef", 404), ("/console/threads/<script>", 404),
            ("/console/threads?page=0", 400), ("/console/threads?page=x", 400),
            ("/console/threads?status=bogus", 400), ("/console/deploys?environment=moon", 400),
            ("/console/deploys?limit=-1", 400), ("/console/deploys?outcome=maybe", 400),
            ("/console/deploys/moon/x", 404), ("/console/deploys/production/nope", 404),
            ("/console/changes?watch=everything", 400), ("/console/static/../app.py", 404),
        ]:
            r = api.get(path)
            assert r.status_code == status, (path, r.status_code, r.text[:300])
            if status != 404 or "static" not in path:
                assert "text/html" in r.headers["content-type"], path
        assert "&lt;script&gt;" in api.get("/console/threads/%3Cscript%3E").text


def test_stop_the_line_from_the_board_then_deploy_anyway_and_resume(context, console: Console):
    page = signed_in(context, console, "alice")
    prod = section(page, "production")
    prod.locator("details.stop summary").click()
    prod.get_by_label("Reason to stop deploys to production", exact=True).fill("incident <b>4711</b>")
    prod.get_by_role("button", name="Stop deploys to production", exact=True).click()
    expect(page).to_have_url(re.compile(r"/console/\?notice=stop$"))
    banner = prod.get_by_role("note", name="Freeze on production")
    expect(banner).to_contain_text(
        "production is frozen until someone resumes them (stop-the-line by alice): incident <b>4711</b>", timeout=LIVE)
    assert prod.locator("b").count() == 0
    expect(prod.get_by_role("button", name="Resume deploys to production", exact=True)).to_be_visible()
    expect(section(page, "staging").get_by_role("note")).to_have_count(0)  # one environment only
    expect(section(page, "development").locator(".next-freeze")).to_contain_text(
        "(weekly freeze Sun 23:00 to Mon 00:00 (Europe/Berlin)): weekly maintenance")
    console.shot(page, "board-frozen")

    # a deploy asked for meanwhile is stopped before anyone is asked to approve it
    blocked = console.start("deploy backend v1.2.2 to production")
    body = console.wait(blocked)
    assert [e["kind"] for e in body["events"] if e["type"] == "error"] == ["frozen"], body["events"]
    assert not any(e["type"] == "approval_requested" for e in body["events"])
    page.goto(f"{console.url}/console/threads/{blocked}")
    expect(page.locator("ol.timeline")).to_contain_text("production is frozen until someone resumes them")
    stopped = page.get_by_role("region", name=re.compile("is stopped$"))
    expect(stopped).to_contain_text("Deploy backend v1.2.2 to production is stopped")

    # bob may not: no form, and a forged one is refused
    other = signed_in(context.browser.new_context(), console, "bob")
    other.goto(f"{console.url}/console/threads/{blocked}")
    expect(other.locator("section.blocked")).to_contain_text("You cannot deploy it anyway: bob may not deploy past")
    expect(other.get_by_role("button", name="Deploy anyway")).to_have_count(0)
    r = other.request.post(f"{console.url}/console/threads/{blocked}/deploy-anyway",
                           form={"csrf_token": csrf(other), "reason": "mine"})
    assert r.status == 403 and "bob may not deploy past" in r.text()
    other.context.close()

    # deploy anyway (an approver, with a reason): "deploy anyway: REASON" in the thread, as alice
    stopped.get_by_label("Reason to deploy anyway").fill("the fix for incident 4711")
    stopped.get_by_role("button", name="Deploy anyway", exact=True).click()
    expect(page).to_have_url(re.compile(r"notice=anyway$"))
    body = console.wait(blocked)
    assert body["status"] == "waiting_for_approval", body["events"]  # forcing is not approving
    said = [e for e in body["events"] if e["type"] == "human_response"]
    assert [(e["text"], e["person"], e["channel"]) for e in said] == [
        ("deploy anyway: the fix for incident 4711", "alice", "console")]
    expect(page.locator("article.approval")).to_contain_text("deploy anyway: the fix for incident 4711 by alice",
                                                            timeout=LIVE)
    approve_on_its_page(page, console, blocked)
    assert [line for line in ledger_lines(console.ledger) if line.startswith(blocked)] == [
        line for line in ledger_lines(console.ledger) if line.endswith("backend v1.2.2 production")]
    page.goto(f"{console.url}/console/deploys?environment=production&service=backend&tag=v1.2.2")
    expect(page.locator(".record")).to_contain_text("deployed anyway: the fix for incident 4711 by alice")

    # Resume on the board: the banner goes, and a new request goes on to its approval
    page.goto(f"{console.url}/console/")
    prod.get_by_role("button", name="Resume deploys to production", exact=True).click()
    expect(page).to_have_url(re.compile(r"notice=resume$"))
    expect(banner).to_have_count(0, timeout=LIVE)
    expect(prod.locator("details.stop summary")).to_be_visible()
    again = console.start("deploy backend v1.2.3 to production")
    approve_on_its_page(page, console, again)
    expect(page.locator("section.blocked")).to_have_count(0)


def test_a_deploy_that_needs_two_approvals_from_different_people(context, console: Console):
    thread_id = console.start("deploy backend v1.2.3 to staging")  # staging: two approvals
    assert console.wait(thread_id)["status"] == "waiting_for_approval"
    page = signed_in(context, console, "alice")
    page.goto(f"{console.url}/console/approvals")
    approval = card(page, thread_id)
    expect(approval).to_contain_text("0 of 2 approvals")
    expect(approval).to_contain_text("alice or erin")
    approval.get_by_role("button", name="Approve", exact=True).click()
    expect(page).to_have_url(re.compile(r"notice=approved-partly$"))
    expect(approval).to_contain_text("1 of 2: approved by alice")
    expect(approval).to_contain_text("you have approved already; it needs 1 more approval from someone else")
    expect(approval.get_by_role("button", name="Approve")).to_have_count(0)  # not twice by one person
    assert console.wait(thread_id)["status"] == "waiting_for_approval"
    assert not [line for line in ledger_lines(console.ledger) if line.startswith(thread_id)]

    # erin's page left open an hour: the countdown reaches zero, says so and takes the Approve
    # button away, without an error (a context of its own: a page's clock is its context's)
    late = context.browser.new_context(viewport={"width": 1280, "height": 860})
    errors: list[str] = []
    try:
        waited = signed_in(late, console, "erin")
        waited.on("pageerror", lambda e: errors.append(str(e)))
        late.clock.install()
        waited.goto(f"{console.url}/console/approvals")
        approve = card(waited, thread_id).get_by_role("button", name="Approve", exact=True)
        expect(approve).to_be_enabled()
        late.clock.fast_forward("01:00:05")
        expect(card(waited, thread_id).locator("[data-expires]")).to_have_text("expired")
        expect(approve).to_be_disabled()
    finally:
        late.close()
    assert errors == []

    other = signed_in(context, console, "erin")  # the same browser, signed in as someone else now
    other.goto(f"{console.url}/console/approvals")
    approval = card(other, thread_id)
    expect(approval).to_contain_text("1 of 2: approved by alice")
    approve = approval.get_by_role("button", name="Approve", exact=True)
    console.shot(other, "approvals-two")
    approve.click()
    expect(other).to_have_url(re.compile(r"notice=approved$"))
    body = console.wait(thread_id)
    assert body["status"] == "done", body["events"]
    mine = [line for line in ledger_lines(console.ledger) if line.startswith(thread_id)]
    assert len(mine) == 1 and mine[0].endswith("backend v1.2.3 staging"), mine
    other.goto(f"{console.url}/console/approvals")
    decided = card(other, thread_id)
    expect(decided).to_contain_text("2 of 2: approved by alice, erin")
    expect(decided).to_contain_text("Approved by erin")
