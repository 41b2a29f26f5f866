"""The console without one-click accidents (issue 24), in Chromium against the real bot: what came
of each thread in words and its own colour (a rejected deploy never reads "done"), with who and
when; finished threads offer no Respond or Cancel; Roll back only where there is something earlier,
and it, Cancel and taking a lock ask first in the page, saying what will happen (and "No" does
nothing); one name per person; decided approvals with the rules of then; the sign-in pages
offering only what works; and a phone: the approvals first, Approve on the first screen even
under a long change preview, nothing wider than the screen. Phone screenshots of each page.
"""

from __future__ import annotations

import os
import re
import subprocess
import time
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from playwright.sync_api import FloatRect, Locator, Page, expect

from bot.core import wording
from tests.adapters.http.console.conftest import Console, release
from tests.adapters.http.console.test_console import approve_on_its_page, card, row, section, signed_in
from tests.helpers import reply

pytestmark = [pytest.mark.processes, pytest.mark.network]

PHONE = {"width": 390, "height": 844}
TITLE = "deploy backend v1.2.3 to production"
UNBROKEN = "refactor-" + "x" * 90  # a commit subject with no place to break: it must not widen the page


def outcome_of(page: Page, thread_id: str):
    return page.locator("tr", has=page.locator(f"a[href='/console/threads/{thread_id}']")).locator(".outcome-cell")


def visible_text(page: Page) -> str:
    return page.locator("body").inner_text()  # what is shown: not a closed toggle's raw JSON


def fits(page: Page) -> None:
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= PHONE["width"], (page.url, width)


def cannot_be_used(page: Page) -> None:
    """The page of a used or unknown sign-in link: styled like the console, no markdown's backticks,
    only the ways that work here, and a way back."""
    expect(page.get_by_role("heading", name="This sign-in link cannot be used")).to_be_visible()
    text = visible_text(page)
    assert "`" not in text and "Slack" not in text, text
    assert "Get a new one with python -m bot login-link NAME on the server" in text, text
    assert page.evaluate("getComputedStyle(document.body).backgroundColor") == "rgb(246, 248, 250)"  # its style sheet
    expect(page.get_by_role("link", name="Back to sign-in")).to_be_visible()


def thread_ids(console: Console) -> set[str]:
    with console.api() as api:
        return {t["id"] for t in api.get("/threads", params={"limit": 100}).json()["threads"]}


def test_outcomes_one_name_and_finished_threads(context, console: Console):
    page = signed_in(context, console, "alice")
    deployed = console.start(TITLE)  # exact commands, asked by the shared token as "carol"
    assert console.wait(deployed)["status"] == "waiting_for_approval"
    approve_on_its_page(page, console, deployed)

    rejected = console.start(TITLE)
    assert console.wait(rejected)["status"] == "waiting_for_approval"
    console.llm.script(reply(intent="done_for_now", message="Not deploying it."))
    page.goto(f"{console.url}/console/threads/{rejected}")
    page.locator("article.approval").get_by_label("Feedback for the model").fill("not today")
    page.locator("article.approval").get_by_role("button", name="Reject", exact=True).click()
    assert console.wait(rejected)["status"] == "done"  # the API's status stays what it is

    cancelled = console.start(TITLE)
    assert console.wait(cancelled)["status"] == "waiting_for_approval"
    # Cancel asks first, saying what happens; "No, keep it" closes the question and sends nothing
    page.goto(f"{console.url}/console/threads/{cancelled}")
    asking = page.locator("#confirm-cancel details")
    page.locator("summary", has_text="Cancel").click()
    expect(asking.locator(".confirm-text")).to_have_text(re.compile(r"^Cancel this thread\? Nothing more happens"))
    asking.get_by_role("button", name="No, keep it").click()
    expect(asking).not_to_have_attribute("open", "")
    expect(page).to_have_url(f"{console.url}/console/threads/{cancelled}")
    assert console.thread(cancelled)["status"] == "waiting_for_approval"
    page.locator("summary", has_text="Cancel").click()
    page.get_by_label("Reason", exact=True).fill("wrong tag")
    page.get_by_role("button", name="Yes, cancel it").click()
    expect(page).to_have_url(re.compile(r"notice=cancelled$"))
    assert console.thread(cancelled)["status"] == "cancelled"

    # three threads titled alike, told apart: the outcome in words and colour, who and when
    page.goto(f"{console.url}/console/threads")
    expect(outcome_of(page, deployed)).to_contain_text(re.compile(r"deployed v1\.2\.3 to production by alice"))
    expect(outcome_of(page, rejected)).to_contain_text("rejected v1.2.3 to production by alice")
    expect(outcome_of(page, cancelled)).to_contain_text("cancelled")
    when = {outcome_of(page, t).locator("time").get_attribute("datetime") for t in (deployed, rejected, cancelled)}
    assert len(when) == 3 and None not in when, when
    expect(outcome_of(page, rejected)).not_to_contain_text("done")
    colours = {
        thread_id: outcome_of(page, thread_id).locator(".outcome-badge").evaluate(
            "b => getComputedStyle(b).backgroundColor + ' ' + getComputedStyle(b).color")
        for thread_id in (deployed, rejected, cancelled)
    }
    assert len(set(colours.values())) == 3, colours
    console.shot(page, "threads-outcomes")
    page.set_viewport_size(PHONE)
    console.shot(page, "threads-phone")
    fits(page)
    page.set_viewport_size({"width": 1280, "height": 860})

    # a finished thread keeps its outcome: no Respond, no Cancel
    for thread_id, words in ((deployed, "deployed"), (rejected, "rejected"), (cancelled, "cancelled")):
        page.goto(f"{console.url}/console/threads/{thread_id}")
        # the heading names what the thread deploys, then which thread it is
        expect(page.get_by_role("heading", level=1)).to_have_text(f"backend v1.2.3 to production thread {thread_id}")
        expect(page).to_have_title(f"backend v1.2.3 to production · Thread {thread_id} · deploybot")
        expect(page.locator(".thread-meta .outcome-badge")).to_have_text(words)
        expect(page.get_by_label("Message")).to_have_count(0)
        expect(page.locator("summary", has_text="Cancel")).to_have_count(0)
        expect(page.get_by_role("button", name=re.compile("cancel", re.I))).to_have_count(0)

    # one person, one name: the shared token's "carol" is carol, with its channel as a tag
    for path in ("/console/approvals", "/console/threads", f"/console/threads/{deployed}", "/console/"):
        page.goto(f"{console.url}{path}")
        assert "api:carol" not in visible_text(page), path
    page.goto(f"{console.url}/console/approvals")
    decided = card(page, rejected)
    expect(decided.locator("dt:text-is('Asked by') + dd")).to_have_text("carol api")
    # a decided approval shows the rules it was decided under, not today's "May decide"
    expect(decided).to_contain_text("Rules then")
    expect(decided).not_to_contain_text("May decide")
    expect(decided.locator(".rejected")).to_contain_text("Rejected by alice")

    # the environment names its approvers and how many must approve
    page.goto(f"{console.url}/console/")
    expect(section(page, "staging").locator(".rules")).to_contain_text("Approvals: 2 of alice, erin")
    expect(section(page, "production").locator(".rules")).to_contain_text("Approvals: alice ·")
    expect(section(page, "development").locator(".rules")).to_contain_text("no approval needed")


def laid_out(locator: Locator) -> FloatRect | None:
    """Where the element is on the page, once it is shown: a live update may replace the card
    between finding the button and measuring it (bounding_box is None then), so it is found again."""
    deadline = time.monotonic() + 10
    while True:
        locator.wait_for(state="visible")
        box = locator.bounding_box()
        if box is not None or time.monotonic() > deadline:
            return box


def test_roll_back_asks_first_and_a_phone_sees_approve_under_a_long_preview(context, console: Console):
    page = signed_in(context, console, "alice")
    page.goto(f"{console.url}/console/")
    backend = row(page, "backend", "production")
    expect(backend.locator(".record.ok")).to_contain_text("v1.2.3")  # the module's first test deployed it
    expect(backend.locator("summary", has_text="Roll back")).to_have_count(0)  # nothing earlier to go back to
    newer = console.start("deploy backend v1.3.0 to production")
    assert console.wait(newer)["status"] == "waiting_for_approval"
    approve_on_its_page(page, console, newer)

    page.goto(f"{console.url}/console/")
    backend = row(page, "backend", "production")
    question = backend.locator("details.confirm")
    backend.locator("summary", has_text="Roll back").click()
    expect(question.locator(".confirm-text")).to_have_text(re.compile(
        r"^Roll back backend in production from v1\.3\.0 to v1\.2\.3\?"))
    expect(question.get_by_role("button", name="Yes, roll back")).to_be_visible()
    console.shot(page, "board-confirm")
    before = thread_ids(console)
    question.get_by_role("button", name="No, keep it").click()  # cancelling does nothing
    expect(question).not_to_have_attribute("open", "")
    expect(question.get_by_role("button", name="Yes, roll back")).to_be_hidden()
    expect(page).to_have_url(f"{console.url}/console/")
    assert thread_ids(console) == before

    # a deploy whose change preview is long: 25 commits, one subject with nowhere to break
    repo = Path(console.env["GIT_REPO"])
    env = {**os.environ, "GIT_AUTHOR_NAME": "dana", "GIT_AUTHOR_EMAIL": "d@example.com",
           "GIT_COMMITTER_NAME": "dana", "GIT_COMMITTER_EMAIL": "d@example.com"}
    for n in range(24):
        subprocess.run(["git", "-C", str(repo), "commit", "-q", "--allow-empty", "-m", f"change number {n}"],
                       check=True, capture_output=True, env=env)
    release(repo, "v1.4.0", UNBROKEN)
    long = console.start("deploy backend v1.4.0 to production")
    assert console.wait(long)["status"] == "waiting_for_approval"

    page.set_viewport_size(PHONE)
    page.goto(f"{console.url}/console/approvals")
    waiting = card(page, long)
    expect(waiting.locator(".change")).to_contain_text("25 commits ahead")
    box = laid_out(waiting.get_by_role("button", name="Approve", exact=True))
    assert box is not None and box["y"] + box["height"] <= PHONE["height"], box  # on the first screen
    fits(page)
    console.shot(page, "approvals-phone")
    page.goto(f"{console.url}/console/")
    box = laid_out(card(page, long).get_by_role("button", name="Approve", exact=True))
    assert box is not None and box["y"] + box["height"] <= PHONE["height"], box  # the board: approvals first
    fits(page)
    for name, path in (("thread-phone", f"/console/threads/{newer}"), ("deploys-phone", "/console/deploys")):
        page.goto(f"{console.url}{path}")
        fits(page)
        console.shot(page, name)
    page.locator(".record a", has_text="audit").first.click()
    fits(page)
    console.shot(page, "deploy-phone")
    with console.api() as api:
        api.post(f"/threads/{long}/cancel", json={"reason": "test over"})


def test_sign_in_offers_only_what_works_and_a_bad_link_leads_back(context, console: Console):
    page = context.new_page()
    page.goto(f"{console.url}/console/deploys")  # signed out: the page asked for is remembered
    expect(page.get_by_role("heading", name="Sign in to deploybot")).to_be_visible()
    expect(page.locator(".ways")).to_contain_text("python -m bot login-link NAME")
    # no email channel here, and no Slack: neither is offered
    expect(page.get_by_role("button", name="Email me a link")).to_have_count(0)
    expect(page.get_by_label("Email address")).to_have_count(0)
    assert "Slack" not in visible_text(page) and "email" not in visible_text(page).lower()
    console.shot(page, "sign-in")
    page.set_viewport_size(PHONE)
    fits(page)
    console.shot(page, "sign-in-phone")
    page.set_viewport_size({"width": 1280, "height": 860})

    page.goto(f"{console.url}/auth/link?code=not-a-real-code")
    cannot_be_used(page)
    used = console.link("alice")
    page.goto(used)
    page.get_by_role("button", name="Sign in as alice").click()
    expect(page).to_have_url(re.compile(r"/console/deploys$"))  # back to the page asked for
    expect(page.get_by_role("heading", name="Deploys")).to_be_visible()
    page.context.clear_cookies()
    page.goto(used)  # a link works once
    cannot_be_used(page)
    console.shot(page, "link")
    page.set_viewport_size(PHONE)
    fits(page)
    console.shot(page, "link-phone")
    page.get_by_role("link", name="Back to sign-in").click()
    expect(page.get_by_role("heading", name="Sign in to deploybot")).to_be_visible()


def test_times_read_in_the_browsers_time_zone_with_utc_on_hover(browser, console: Console):
    """A reader in New York sees New York times (December: UTC-5); the server's UTC is on hover."""
    ny = browser.new_context(viewport={"width": 1280, "height": 860}, timezone_id="America/New_York")
    try:
        page = signed_in(ny, console, "alice")
        thread_id = console.start("list tags")
        console.wait(thread_id)
        page.goto(f"{console.url}/console/threads/{thread_id}")
        first = page.locator(".timeline .at time").first
        expect(first).to_have_text(re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d (EST|GMT-5)$"))
        utc = first.get_attribute("title")
        assert utc is not None and utc.endswith(" UTC"), utc
        # the same instant: the UTC on hover is five hours after what is shown
        shown = first.inner_text()[:19]
        assert datetime.fromisoformat(utc[:19]) - datetime.fromisoformat(shown) == timedelta(hours=5)
        # "2 min ago" keeps its words: both times on hover
        page.goto(f"{console.url}/console/threads")
        ago = outcome_of(page, thread_id).locator("time")
        expect(ago).to_have_text(re.compile(r"ago|just now"))
        expect(ago).to_have_attribute("title", re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d (EST|GMT-5) \(.+ UTC\)$"))
    finally:
        ny.close()


def test_retry_of_a_failed_deploy_previews_it_and_asks_again(context, console: Console):
    failing = Path(str(console.ledger) + ".fail")
    failing.touch()  # the deploy command fails from now on
    try:
        thread_id = console.start(TITLE)  # carol asks; alice approves; it fails
        assert console.wait(thread_id)["status"] == "waiting_for_approval"
        page = signed_in(context, console, "alice")
        approve_on_its_page(page, console, thread_id)
        expect(page.locator(".thread-meta .outcome-badge")).to_have_text("failed", timeout=15_000)
    finally:
        failing.unlink()
    console.shot(page, "thread-failed")
    page.get_by_role("link", name="Retry", exact=True).click()
    preview = page.locator("section.preview")  # the same deploy, previewed before anything is sent
    expect(preview).to_contain_text("Deploy backend v1.2.3 to production?")
    expect(page.locator("#d-reason")).to_have_value(f"retry of thread {thread_id}")
    before = thread_ids(console)
    preview.get_by_role("button", name="Ask to deploy backend v1.2.3 to production").click()
    expect(page).to_have_url(re.compile(r"/console/threads/\w+\?notice=deploy$"))
    [again] = thread_ids(console) - before
    body = console.wait(again)
    assert body["status"] == "waiting_for_approval", body["events"]  # asked again: a new approval
    first = body["events"][0]
    said = f"deploy backend v1.2.3 to production (retry of thread {thread_id})"
    assert (first["person"], first["text"]) == ("alice", said)
    with console.api() as api:
        api.post(f"/threads/{again}/cancel", json={"reason": "test over"})

    # a deploy that did not fail offers no Retry, nor does anything to someone signed out
    deployed = console.start("list tags")
    console.wait(deployed)
    page.goto(f"{console.url}/console/threads/{deployed}")
    expect(page.get_by_role("link", name="Retry")).to_have_count(0)
    stranger = context.browser.new_context()
    try:
        other = stranger.new_page()
        other.goto(f"{console.url}/console/threads/{thread_id}")
        expect(other.get_by_role("link", name="Retry")).to_have_count(0)
    finally:
        stranger.close()


def test_a_page_per_service_shows_each_environment_and_its_history(context, console: Console):
    deployed = console.start(TITLE)  # backend v1.2.3 to production, approved by alice
    assert console.wait(deployed)["status"] == "waiting_for_approval"
    page = signed_in(context, console, "alice")
    approve_on_its_page(page, console, deployed)
    page.goto(f"{console.url}/console/matrix")
    page.get_by_role("link", name="backend", exact=True).click()
    expect(page).to_have_url(f"{console.url}/console/services/backend")
    expect(page.get_by_role("heading", level=1)).to_have_text("backend")
    production = page.get_by_role("group", name="backend in production", exact=True)
    expect(production.locator(".now")).to_contain_text("v1.2.3")
    expect(production.locator(".now")).to_contain_text("approved by alice")
    expect(production.get_by_role("link", name="Deploy")).to_have_attribute(
        "href", "/console/deploy?service=backend&environment=production")
    history = page.locator("table.service-history tbody tr")
    expect(history.first).to_contain_text("production")
    expect(history.first).to_contain_text("v1.2.3")
    console.shot(page, "service")
    history.first.get_by_role("link", name="audit").click()
    expect(page).to_have_url(re.compile(r"/console/deploys/production/"))
    page.goto(f"{console.url}/console/services/backend")
    page.set_viewport_size(PHONE)
    fits(page)
    console.shot(page, "service-phone")
    for unknown in ("payments", "<b>x</b>", "a" * 300):
        assert context.request.get(f"{console.url}/console/services/{unknown}").status == 404


def test_a_running_deploy_s_output_shows_as_it_comes_with_secrets_redacted(context, console: Console):
    slow = Path(str(console.ledger) + ".slow")  # the deploy command prints these, one every 0.4 s
    slow.write_text("building image\nusing key sk-console-test-key-0123456789\n\x1b[31mmigrating\x1b[0m\n"
                    + "".join(f"step {i}\n" for i in range(8)) + "all done\n")
    try:
        thread_id = console.start(TITLE)
        assert console.wait(thread_id)["status"] == "waiting_for_approval"
        page = signed_in(context, console, "alice")
        page.goto(f"{console.url}/console/threads/{thread_id}")
        page.locator("article.approval").get_by_role("button", name="Approve", exact=True).click()
        box = page.locator(".live-output pre")
        expect(box).to_contain_text("building image", timeout=15_000)  # while it runs
        expect(box).to_contain_text("step 2", timeout=15_000)  # and more as it comes
        text = box.inner_text()
        assert "sk-console-test-key" not in text and "using key [redacted]" in text, text
        assert "\x1b" not in text and "[31m" not in text, text  # a terminal's colours are no text
        console.shot(page, "thread-output")
        with console.api() as api:  # the shared token reads it too, as text; never cached
            r = api.get(f"/console/threads/{thread_id}/output")
            assert r.status_code in (200, 204) and r.headers["cache-control"] == "no-store"
    finally:
        slow.unlink()
    assert console.wait(thread_id, {"done"}, timeout=30)["status"] == "done"
    expect(page.locator(".live-output")).to_have_count(0, timeout=15_000)  # ended: the result says it
    expect(page.locator(".timeline")).to_contain_text("all done")
    with console.api() as api:
        assert api.get(f"/console/threads/{thread_id}/output").status_code == 204
        assert api.get("/console/threads/not-a-thread/output").status_code == 404


def test_a_phone_navigates_from_one_row_and_the_matrix_scrolls_in_its_box(context, console: Console):
    page = signed_in(context, console, "alice")
    page.goto(f"{console.url}/console/matrix")
    header = page.locator("header.top")
    links = page.get_by_role("navigation", name="Console").get_by_role("link")
    expect(links).to_have_count(6)  # a laptop: every link shown, no menu to open
    expect(page.get_by_role("link", name="Deploys")).to_be_visible()
    expect(page.locator("header.top summary")).to_be_hidden()
    console.shot(page, "matrix")

    page.set_viewport_size(PHONE)
    page.goto(f"{console.url}/console/matrix")
    one_row = header.bounding_box()
    assert one_row is not None and one_row["height"] <= 56, one_row  # the navigation: one row, not three
    expect(page.get_by_role("link", name="Deploys")).to_be_hidden()
    console.shot(page, "matrix-phone")
    page.locator("header.top summary", has_text="Menu").click()  # a menu, no framework
    expect(page.get_by_role("button", name="Sign out")).to_be_visible()
    console.shot(page, "menu-phone")
    page.get_by_role("link", name="Deploys").click()
    expect(page).to_have_url(re.compile(r"/console/deploys$"))
    expect(page.get_by_role("link", name="Deploys")).to_be_hidden()  # closed again on the next page

    page.goto(f"{console.url}/console/matrix")
    fits(page)  # the page itself is no wider than the screen
    box = page.get_by_role("region", name="Services by environment")
    sizes = box.evaluate("b => [b.scrollWidth, b.clientWidth]")
    if sizes[0] > sizes[1]:  # wider than the screen: it scrolls inside its box, and says so
        expect(page.locator(".scroll-hint")).to_be_visible()
        expect(page.locator(".scroll-hint")).to_have_text(wording.matrix_scrolls(3))
        first = box.locator("tbody th").first
        assert first.evaluate("e => getComputedStyle(e).position") == "sticky"
        before = first.bounding_box()
        box.evaluate("b => { b.scrollLeft = b.scrollWidth; }")
        after = first.bounding_box()
        assert before is not None and after is not None and abs(after["x"] - before["x"]) <= 1, (before, after)
        last = box.locator("thead th").last
        last_box = last.bounding_box()
        assert last_box is not None and last_box["x"] + last_box["width"] <= PHONE["width"] + 1, last_box
    else:
        expect(page.locator(".scroll-hint")).to_be_hidden()
    page.set_viewport_size({"width": 1280, "height": 860})
    page.goto(f"{console.url}/console/matrix")
    expect(page.locator(".scroll-hint")).to_be_hidden()  # it fits: no hint
