"""Deploying from the console, in Chromium against the real bot (one server for the module):
the matrix before anything is deployed (its empty state), the Deploy form from a matrix cell
(the service's tags newest first with their commit subjects, the change preview shown before
anything is sent), a deploy to development that runs at once and one to production that waits
for alice's approval ("Waiting for you (1)" at the top of the page and in the tab's title, for
her and not for bob), the matrix showing what is where and what differs, screenshots of both
pages on a laptop and on a phone, and refused input (an unknown service, environment or tag,
a reason the command cannot say, a form without its CSRF token, the shared token) said in the
page with nothing stored; a forged requester field changes nothing: the thread is the
signed-in person's.
"""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from tests.adapters.http.console.conftest import HOSTILE_SUBJECT, Console
from tests.helpers import ledger_lines

pytestmark = pytest.mark.network

LIVE = 15_000  # ms a live update may take (the stream polls every second)
PHONE = {"width": 390, "height": 844}


def signed_in(context, console: Console, person: str) -> Page:
    page = context.new_page()
    page.goto(console.link(person))
    page.get_by_role("button", name=f"Sign in as {person}").click()
    expect(page.get_by_role("button", name="Sign out")).to_be_visible()
    return page


def cell(page: Page, service: str, environment: str):
    """A cell of the matrix (its aria-label names it)."""
    return page.locator("table.matrix td").and_(page.get_by_label(f"{service} in {environment}", exact=True))


def fits(page: Page) -> None:
    """Nothing is wider than the screen (the matrix scrolls inside its own box)."""
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= page.viewport_size["width"], f"{page.url} is {width} px wide"


def threads(console: Console) -> set[str]:
    with console.api() as api:
        return {t["id"] for t in api.get("/threads", params={"limit": 100}).json()["threads"]}


def test_deploy_from_the_form_then_the_matrix_shows_what_is_where(context, console: Console):
    page = signed_in(context, console, "alice")
    page.get_by_role("link", name="Matrix").click()
    expect(page.get_by_role("heading", name="Matrix")).to_be_visible()
    expect(page.get_by_role("note")).to_contain_text("Nothing deployed yet")
    expect(page.locator("table.matrix tbody tr")).to_have_count(2)  # backend, frontend
    expect(page.locator("table.matrix thead th")).to_have_text(["Service", "development", "production", "staging"])
    expect(page.locator(".mine")).to_have_count(0)  # nothing waits for alice yet

    # the form, from a cell: the tags newest first, each with its commit's subject (as text)
    page.get_by_role("link", name="Deploy backend to development").click()
    expect(page.get_by_role("heading", name="Deploy backend to development")).to_be_visible()
    tags = page.locator("fieldset.tags label")
    offered = [o.get_attribute("value") for o in page.get_by_role("radio").all()]
    assert offered == ["v1.3.0", "v1.2.3", "v1.2.2", "v1.2.1"]  # newest first
    expect(page.get_by_role("radio").first).to_be_checked()
    expect(tags.first.locator(".subject")).to_have_text(HOSTILE_SUBJECT)
    expect(tags.nth(1).locator(".subject")).to_have_text("release v1.2.3")
    assert tags.locator("img, b").count() == 0 and page.evaluate("window.__pwned === undefined")
    expect(page.locator("section.preview")).to_have_count(0)  # nothing previewed, nothing to send yet

    # the preview comes before anything is sent
    page.locator("#d-reason").fill("first one from the console")
    page.get_by_role("button", name="Preview").click()
    preview = page.locator("section.preview")
    expect(preview).to_contain_text("Deploy backend v1.3.0 to development?")
    expect(preview.locator(".change")).to_contain_text("nothing deployed there yet")
    expect(preview).to_contain_text("none needed")
    assert not any(line.endswith("development") for line in ledger_lines(console.ledger))

    preview.get_by_role("button", name="Deploy backend v1.3.0 to development").click()
    expect(page).to_have_url(re.compile(r"/console/threads/[^/?]+\?notice=deploy$"))
    first = page.url.split("/threads/")[1].split("?")[0]
    body = console.wait(first, {"done", "failed", "cancelled"})
    assert body["status"] == "done", body["events"]
    said = body["events"][0]
    assert said["text"] == "deploy backend v1.3.0 to development (first one from the console)", said
    assert (said["person"], said["channel"]) == ("alice", "console")
    assert any(line.startswith(first) and line.endswith("backend v1.3.0 development")
               for line in ledger_lines(console.ledger))

    # to production: the preview against what is there (nothing) names who must approve
    watching = context.new_page()  # left open, never reloaded: what waits for alice shows up by itself
    watching.goto(f"{console.url}/console/matrix")
    expect(watching).to_have_title("Matrix · deploybot")
    watching.evaluate("window.__stayed = true")
    page.bring_to_front()
    page.goto(f"{console.url}/console/deploy?service=backend&environment=production&tag=v1.2.3")
    preview = page.locator("section.preview")
    expect(preview).to_contain_text("needs an approval from alice")
    preview.get_by_role("button", name="Ask to deploy backend v1.2.3 to production").click()
    second = page.url.split("/threads/")[1].split("?")[0]
    assert console.wait(second)["status"] == "waiting_for_approval"

    # my work first: on every page, for alice (who may decide), not for bob (who may not)
    expect(watching.locator(".mine")).to_have_text(re.compile(r"^Waiting for you \(1\)"), timeout=LIVE)
    expect(watching).to_have_title("(1) Matrix · deploybot")
    expect(cell(watching, "backend", "production")).to_contain_text("waiting for approval")
    assert watching.evaluate("window.__stayed === true"), "the matrix was reloaded instead of updated live"
    watching.close()
    page.goto(f"{console.url}/console/matrix")
    expect(page.locator(".mine")).to_have_text(re.compile(r"^Waiting for you \(1\)"))
    expect(page).to_have_title("(1) Matrix · deploybot")
    waiting = cell(page, "backend", "production")
    expect(waiting.locator(".cell-state").first).to_have_text("waiting for approval")
    expect(waiting.get_by_role("link", name="thread")).to_have_attribute("href", f"/console/threads/{second}")
    page.goto(f"{console.url}/console/threads")
    expect(page).to_have_title(re.compile(r"^\(1\) Threads"))
    bob = signed_in(context.browser.new_context(), console, "bob")
    bob.goto(f"{console.url}/console/matrix")
    expect(bob.locator(".mine")).to_have_count(0)
    expect(bob).to_have_title("Matrix · deploybot")
    bob.context.close()

    page.goto(f"{console.url}/console/matrix")
    page.locator(".mine").get_by_role("link").click()
    expect(page).to_have_url(re.compile(r"/console/approvals$"))
    page.locator("article.approval.pending").get_by_role("button", name="Approve", exact=True).click()
    assert console.wait(second, {"done", "failed", "cancelled"})["status"] == "done"

    # what is where: one service in two environments, another tag in each; the other, nowhere
    page.goto(f"{console.url}/console/matrix")
    dev, prod = cell(page, "backend", "development"), cell(page, "backend", "production")
    expect(dev.locator(".tag")).to_have_text("v1.3.0")
    expect(dev.locator(".age")).to_have_text(re.compile(r"just now|min ago"))
    expect(dev.locator(".cell-state")).to_have_text(["deployed"])
    expect(prod.locator(".tag")).to_have_text("v1.2.3")
    expect(prod).to_have_class(re.compile(r"\bdiffers\b"))
    expect(prod.locator(".differs-key")).to_contain_text("development")
    expect(dev).not_to_have_class(re.compile(r"\bdiffers\b"))
    for env in ("development", "production", "staging"):
        frontend = cell(page, "frontend", env)
        expect(frontend).to_contain_text("nothing deployed")
        expect(frontend).not_to_have_class(re.compile(r"\bdiffers\b"))
    expect(page.locator(".mine")).to_have_count(0)  # decided: nothing waits for alice now
    expect(page).to_have_title("Matrix · deploybot")
    expect(page.get_by_role("note")).to_have_count(0)  # no longer "nothing deployed yet"
    console.shot(page, "matrix")

    # the preview is against what is deployed there now: v1.3.0 over production's v1.2.3
    prod.get_by_role("link", name="Deploy backend to production").click()
    page.get_by_role("radio", name=re.compile("v1.3.0")).check()
    page.locator("#d-reason").fill("faster sign-in for everyone")
    page.get_by_role("button", name="Preview").click()
    change = page.locator("section.preview .change")
    expect(change).to_contain_text(re.compile(r"from v1\.2\.3 \(\w{7}\) to \w{7}: 1 commit ahead"))
    expect(change.locator("li").last).to_contain_text(HOSTILE_SUBJECT)
    expect(page.locator("fieldset.tags label", has_text="v1.2.3")).to_contain_text("deployed there now")
    console.shot(page, "deploy-form")
    page.set_viewport_size(PHONE)
    fits(page)
    console.shot(page, "deploy-form-phone")
    page.goto(f"{console.url}/console/matrix")
    fits(page)
    console.shot(page, "matrix-phone")


def test_a_refused_form_says_why_and_stores_nothing(context, console: Console):
    page = signed_in(context, console, "alice")
    before = threads(console)
    base = f"{console.url}/console/deploy"
    for query, words in (
        ("service=backend&environment=production&tag=v9.9.9", "tag 'v9.9.9' does not exist"),
        ("service=payments&environment=production&tag=v1.2.3", "unknown service 'payments'"),
        ("service=backend&environment=moon&tag=v1.2.3", "unknown environment 'moon'"),
    ):
        response = page.goto(f"{base}?{query}")
        assert response is not None and response.status == 422, query
        expect(page.get_by_role("alert")).to_contain_text(words)
        expect(page.locator("form.send")).to_have_count(0)

    page.goto(f"{base}?service=backend&environment=development&tag=v1.2.2")
    token = page.locator("form.send input[name=csrf_token]").get_attribute("value")
    form = {"csrf_token": token, "service": "backend", "environment": "development", "tag": "v1.2.2"}
    for changed, status, words in (
        ({"tag": "v9.9.9"}, 422, "does not exist"),
        ({"service": "payments"}, 422, "unknown service"),
        ({"environment": "moon"}, 422, "unknown environment"),
        ({"tag": ""}, 422, "choose a tag"),
        ({"reason": "because (it is Friday)"}, 422, "cannot hold ( or )"),
        ({"reason": "ready now?"}, 422, "question mark"),
        ({"commit": "0" * 40}, 409, "preview it again"),
        ({"csrf_token": "forged"}, 403, "CSRF"),
    ):
        r = context.request.post(base, form={**form, **changed}, max_redirects=0)
        assert r.status == status and words in r.text(), (changed, r.status, r.text()[:300])
    with console.api() as api:  # the shared token reads the form and may not send it
        assert api.get("/console/deploy?service=backend&environment=development&tag=v1.2.2").status_code == 200
        assert api.post("/console/deploy", data=form).status_code == 403
    assert threads(console) == before  # nothing stored for any of them

    # who asks is the session's person, whatever the form says
    r = context.request.post(base, form={**form, "user": "bob", "person": "bob"}, max_redirects=0)
    assert r.status == 303, r.text()
    thread_id = r.headers["location"].split("/threads/")[1].split("?")[0]
    said = console.thread(thread_id)["events"][0]
    assert (said["person"], said["text"]) == ("alice", "deploy backend v1.2.2 to development")


def test_a_tag_is_found_by_name_and_enter_in_the_reason_still_previews(context, console: Console):
    page = signed_in(context, console, "alice")
    page.goto(f"{console.url}/console/deploy?service=backend&environment=development")
    page.locator("#d-reason").fill("an older one")
    page.get_by_role("searchbox", name="Find a tag").fill("2.2")
    page.get_by_role("searchbox", name="Find a tag").press("Enter")  # its own form: finds, previews nothing
    expect(page.locator("fieldset.tags legend")).to_contain_text("names holding “2.2”")
    assert [o.get_attribute("value") for o in page.get_by_role("radio").all()] == ["v1.2.2"]
    expect(page.locator("section.preview")).to_have_count(0)
    expect(page.locator("#d-reason")).to_have_value("an older one")  # what was typed stays
    page.locator("#d-reason").press("Enter")  # the deploy form's own: previews the tag found
    expect(page.locator("section.preview")).to_contain_text("Deploy backend v1.2.2 to development?")

    page.get_by_role("searchbox", name="Find a tag").fill("<b>9.9</b>")
    page.get_by_role("button", name="Find", exact=True).click()
    expect(page.locator(".empty-state")).to_have_text("No tag of backend holds “<b>9.9</b>”.")
    expect(page.get_by_role("radio")).to_have_count(0)
    page.set_viewport_size(PHONE)
    fits(page)
