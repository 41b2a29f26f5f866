"""The web console in Chromium against the real bot: signing in with a link, approving and
watching the deploy arrive live, rejecting with feedback and watching the model re-plan,
locking and unlocking, what a non-approver sees (and the 403 of a forged form), the CSRF
token, and text that holds HTML or markdown shown as text.
"""

from __future__ import annotations

import csv
import io
import json
import re

import httpx
from playwright.sync_api import Page, expect

from tests.console.conftest import Console
from tests.helpers import ledger_lines, reply

LIVE = 15_000  # ms a live update may take (the stream polls every second)


def signed_in(context, console: Console, person: str) -> Page:
    page = context.new_page()
    page.goto(console.link(person))
    expect(page).to_have_url(re.compile(r"/console/$"))  # the link signs in and opens the console
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


def test_sign_in_approve_and_the_deploy_shows_up_live(context, console: Console):
    thread_id, pending = console.waiting_deploy()
    page = signed_in(context, console, "alice")
    board = context.new_page()  # left open, never reloaded: it must update by itself
    board.goto(f"{console.url}/console/")
    prod = section(board, "production")
    expect(prod).to_contain_text("Nothing deployed yet")
    expect(card(board, thread_id)).to_contain_text("v1.2.3")  # waiting, on the board too
    board.evaluate("window.__stayed = true")

    page.goto(f"{console.url}/console/approvals")
    approval = card(page, thread_id)
    expect(approval).to_contain_text("Deploy backend v1.2.3 to production")
    expect(approval).to_contain_text(pending["commit"][:12])
    expect(approval).to_contain_text("carol")  # who asked
    expect(approval).to_contain_text("alice")  # who may decide
    expect(approval.locator("[data-expires]")).to_have_text(re.compile(r"\d+ min \d\d s left"))
    console.shot(page, "approvals")

    console.llm.script(reply(intent="done_for_now", message="Deployed backend v1.2.3 to production."))
    approval.get_by_role("button", name="Approve", exact=True).click()
    expect(page).to_have_url(re.compile(r"/console/approvals\?notice=approved$"))
    expect(page.get_by_role("status")).to_contain_text("Approved")

    expect(prod.locator(".record.ok")).to_contain_text("v1.2.3", timeout=LIVE)
    expect(prod).to_contain_text("approved by alice")
    expect(prod).to_contain_text("asked by carol")
    expect(section(board, "production")).to_contain_text("No approval waiting")
    assert board.evaluate("window.__stayed === true"), "the board was reloaded instead of updated live"

    body = console.wait(thread_id)
    assert body["status"] == "done", body["events"]
    mine = [line for line in ledger_lines(console.ledger) if line.startswith(thread_id)]
    assert len(mine) == 1 and mine[0].endswith("backend v1.2.3 production"), ledger_lines(console.ledger)
    decision = next(e for e in body["events"] if e["type"] == "human_response" and e["approve"])
    assert (decision["person"], decision["via"], decision["channel"]) == ("alice", "session", "console")
    console.shot(board, "board")

    # the history, and the deploy's audit trail: request -> proposal -> approval evidence -> run -> outcome
    page.goto(f"{console.url}/console/deploys?environment=production")
    row = page.locator(".record", has_text="v1.2.3")
    expect(row).to_contain_text("approved by alice")
    console.shot(page, "deploys")
    row.get_by_role("link", name="audit").click()
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


def test_lock_and_unlock(context, console: Console):
    page = signed_in(context, console, "alice")
    staging = section(page, "staging")
    expect(staging).to_contain_text("Not locked.")
    staging.get_by_label("Reason").fill("release freeze <b>until Monday</b>")
    staging.get_by_role("button", name="Lock", exact=True).click()
    expect(staging).to_contain_text("Locked by alice: release freeze <b>until Monday</b>", timeout=LIVE)
    expect(staging.locator("b")).to_have_count(0)
    console.shot(page, "board-locked")
    staging.get_by_role("button", name="Unlock", exact=True).click()
    expect(staging).to_contain_text("Not locked.", timeout=LIVE)
    expect(staging.get_by_role("button", name="Lock", exact=True)).to_be_visible()
    # development names nobody: nobody may lock it, so there is no button
    expect(section(page, "development").get_by_role("button", name="Lock", exact=True)).to_have_count(0)


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
    expect(section(page, "staging").get_by_role("button", name="Lock", exact=True)).to_have_count(0)

    token = csrf(page)  # bob's own, valid token: the refusal is the policy's, not the CSRF check's
    base = f"{console.url}/console/approvals/{thread_id}/{pending['approval_id']}"
    r = context.request.post(f"{base}/approve", form={"csrf_token": token})
    assert r.status == 403 and "bob is not an approver for production" in r.text()
    r = context.request.post(f"{base}/reject", form={"csrf_token": token, "feedback": "no"})
    assert r.status == 403
    r = context.request.post(f"{console.url}/console/environments/staging/lock",
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
    page.get_by_role("button", name="Cancel", exact=True).click()
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
