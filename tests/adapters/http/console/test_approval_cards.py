"""Approval cards say what an approver must know before approving, in Chromium against a bot with
no model configured (exact commands only): a request whose commit was marked faulty since it was
asked (a rollback replaced a deploy of it elsewhere), and one that goes back to an older commit,
say so on the card; no "Feedback for the model" where there is no model; and on a phone the key
facts (service, tag, environment, who asked, how many changes) stand above Approve, all on the
first screen."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from playwright.sync_api import expect

from bot.testing.cluster import make_repo
from tests.adapters.http.console.conftest import PEOPLE, Console, serve_console
from tests.adapters.http.console.test_care import PHONE, fits, laid_out
from tests.adapters.http.console.test_console import approve_on_its_page, card, signed_in

pytestmark = [pytest.mark.redis, pytest.mark.processes, pytest.mark.network]

DONE = {"done", "failed", "cancelled", "waiting_for_human"}


@pytest.fixture(scope="module")
def console(redis_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Console]:
    tmp = tmp_path_factory.mktemp("console-cards")
    yield from serve_console(redis_url, tmp, PEOPLE, make_repo(tmp / "repo"), model=False)


def asked(console: Console, command: str, until: set[str] | None = None) -> str:
    thread_id = console.start(command)
    console.wait(thread_id, until or DONE | {"waiting_for_approval"})
    return thread_id


def test_cards_warn_of_a_faulty_commit_and_of_going_back_and_offer_no_feedback_without_a_model(
    context, console: Console,
):
    alice = signed_in(context, console, "alice")
    approve_on_its_page(alice, console, asked(console, "deploy backend v1.2.3 to production"))
    for tag in ("v1.2.2", "v1.2.3"):  # development: unprotected, deployed at once
        assert console.wait(asked(console, f"deploy backend {tag} to development"))["status"] == "done"
    back = asked(console, "deploy backend v1.2.2 to production")  # older than what runs there
    forward = asked(console, "deploy frontend v1.2.3 to production")  # the first there: nothing to warn of
    again = asked(console, "deploy backend v1.2.3 to production")  # what development is about to roll back
    assert console.wait(asked(console, "roll back backend in development"))["status"] == "done"

    alice.goto(f"{console.url}/console/approvals")
    going_back = card(alice, back)
    expect(going_back.locator(".warning")).to_have_text(
        [re.compile(r"^Goes back to an older commit: 1 commit deployed on production now would be removed")])
    faulty = card(alice, again)
    expect(faulty.locator(".warning")).to_have_text(
        [re.compile(r"^Commit [0-9a-f]{7} was marked faulty in development")])
    expect(card(alice, forward).locator(".warning")).to_have_count(0)
    # No model: nobody to give feedback to, so none is asked for; Reject still works
    expect(alice.get_by_label("Feedback for the model")).to_have_count(0)
    expect(going_back.get_by_role("button", name="Reject")).to_be_visible()
    console.shot(alice, "approvals-warnings")

    alice.set_viewport_size(PHONE)
    alice.goto(f"{console.url}/console/approvals")
    fits(alice)
    first = card(alice, back)
    approve = laid_out(first.get_by_role("button", name="Approve", exact=True))
    assert approve is not None and approve["y"] + approve["height"] <= PHONE["height"], approve  # the first screen
    expect(first.locator(".key-facts")).to_have_text("asked by carol · goes back 1 commit")
    for fact in (first.locator("h3"), first.locator(".key-facts"), first.locator(".warning")):
        box = laid_out(fact)
        assert box is not None and box["y"] + box["height"] <= approve["y"], (fact, box, approve)  # above Approve
    expect(first.locator("h3")).to_have_text(re.compile(r"^Deploy backend v1\.2\.2 to production"))
    console.shot(alice, "approvals-warnings-phone")
    with console.api() as api:
        for thread_id in (back, forward, again):
            api.post(f"/threads/{thread_id}/cancel", json={"reason": "test over"})
