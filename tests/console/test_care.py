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
from pathlib import Path

from playwright.sync_api import FloatRect, Locator, Page, expect

from bot.core import wording
from tests.console.conftest import Console, release
from tests.console.test_console import approve_on_its_page, card, row, section, signed_in
from tests.helpers import reply

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
