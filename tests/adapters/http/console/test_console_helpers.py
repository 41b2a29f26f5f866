"""The console's helpers, alone (bot/adapters/http/console/forms.py and the small functions of
its page modules): no app, no server, no Redis."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from bot.adapters.http.console import model
from bot.adapters.http.console.environments import unlock_command
from bot.adapters.http.console.forms import (
    Page,
    back,
    browser_id,
    csrf_token,
    csv_cell,
    id_like,
    indexed_as,
    read_form,
    reason,
    refusal_page,
    text,
    until,
    whole_number,
)
from bot.adapters.http.console.live import watched
from bot.adapters.http.console.routes import Viewer
from bot.adapters.http.console.threads import link
from bot.core import wording
from bot.core.audit import audit_trail
from bot.core.events import ApprovalRequested, DeployResult, DeployService, DeployStarted, HumanResponse, UserMessage
from bot.core.people import SESSION, Identity
from bot.core.policy import lock_owner
from bot.core.thread import Thread
from bot.runtime.ports import DeployRecord, Lock
from bot.runtime.service import Forbidden, Invalid, NotFound, Refused, WrongState

ALICE = Identity("alice", SESSION, "s1")
BOB = Identity("bob", SESSION, "s2")


def test_a_form_is_read_only_with_its_csrf_token():
    assert read_form(b"csrf_token=abc&text=hi+there&next=", "abc") == {"csrf_token": "abc", "text": "hi there",
                                                                        "next": ""}
    for body in (b"text=hi", b"csrf_token=abd&text=hi", b"csrf_token=&text=hi"):
        with pytest.raises(Page) as refused:
            read_form(body, "abc")
        assert refused.value.status == 403
    with pytest.raises(Page) as unreadable:  # more fields than any form of the console has
        read_form("&".join(f"f{i}=x" for i in range(50)).encode(), "abc")
    assert unreadable.value.status == 400


def test_csrf_tokens_are_signed_the_new_way():
    """Without sign-in support the key is made when the process starts, so no token signed
    the old way (a hex HMAC) outlives the restart that brings this code: none is read."""
    old = "9f22e43716b0228c9a156d629d15a7751c1639ce1cb3d081ce83e2a20adae743"  # b"k" * 32, browser:1
    assert csrf_token(b"k" * 32, "browser:1") != old
    assert len(csrf_token(b"k" * 32, "browser:1")) >= 43  # 256 bits, as before


def test_csrf_tokens_differ_per_owner_and_per_key():
    assert csrf_token(b"k" * 32, "browser:1") == csrf_token(b"k" * 32, "browser:1")
    assert csrf_token(b"k" * 32, "browser:1") != csrf_token(b"k" * 32, "browser:2")
    assert csrf_token(b"k" * 32, "browser:1") != csrf_token(b"j" * 32, "browser:1")


def test_a_browser_keeps_a_well_formed_id_and_gets_one_new_id_otherwise():
    mine = "0123456789abcdef" * 2
    assert browser_id(mine, {}) == mine
    state: dict = {}
    new = browser_id("not-an-id", state)
    assert len(new) == 32 and new != mine and state["new_browser"] == new
    assert browser_id("", state) == new  # one request, one id


def test_back_goes_only_to_a_console_page_and_says_one_notice():
    def target(fields: dict[str, str]) -> str:
        return back(fields, "/console/", "sent").headers["location"]

    assert target({"next": "/console/threads?status=done"}) == "/console/threads?status=done&notice=sent"
    assert target({"next": "/console/threads/t1?notice=approved"}) == "/console/threads/t1?notice=sent"
    for elsewhere in ("https://evil.example/", "//evil.example/console/", "/console/\\evil", "/other", ""):
        assert target({"next": elsewhere}) == "/console/?notice=sent"
    assert back({}, "/console/", "sent").status_code == 303


def test_text_and_reason_are_bounded_and_a_required_one_is_said():
    assert text({"text": "hello"}, "text", 10) == "hello"
    assert text({}, "feedback", 10) == ""
    with pytest.raises(Page) as long:
        text({"text": "x" * 11}, "text", 10)
    assert long.value.status == 413
    with pytest.raises(Page) as empty:
        text({"text": "  "}, "text", 10, required=True)
    assert empty.value.status == 422
    assert reason({"reason": " the \n migration  runs "}, 100) == "the migration runs"


def test_whole_numbers_are_ascii_digits_in_range():
    assert whole_number(" 7 ", "page", 1, 10) == 7
    for bad in ("0", "11", "-1", "²", "1e3", "", "1234567890"):
        with pytest.raises(Page):
            whole_number(bad, "page", 1, 10)


def test_until_is_utc_and_anything_else_is_refused():
    assert until("  ") is None
    assert until("2026-11-26T08:00Z") == datetime(2026, 11, 26, 8, 0, tzinfo=UTC)
    with pytest.raises(Page):
        until("2026-11-26T08:00+02:00")


def test_ids_watches_and_cells():
    assert id_like("t-1.a:b_c") and not id_like("t/1") and not id_like("x" * 201) and not id_like("")
    assert watched("board") and watched("thread:t1")
    assert not watched("thread:../x") and not watched("threads") and not watched("thread:")
    assert [csv_cell(v) for v in ("=1+1", "+x", "-x", "@x", "\tx", "ok", 3)] == \
        ["'=1+1", "'+x", "'-x", "'@x", "'\tx", "ok", 3]
    assert indexed_as("waiting_for_human") == ("waiting_for_human", "waiting_for_approval")
    assert indexed_as("done") == ("done",)


def test_refusals_become_pages_with_the_apis_status():
    cases = {Forbidden("no"): (403, "Not allowed"), NotFound("gone"): (404, "Not found"),
             WrongState("later"): (409, "Not possible now"), Invalid("bad"): (422, "Not valid"),
             Refused("other"): (400, "Not valid")}
    for refusal, (status, title) in cases.items():
        page = refusal_page(refusal)
        assert (page.status, page.title, page.detail) == (status, title, refusal.message)


def test_the_threads_list_links_keep_only_what_is_set():
    assert link("", "", 1) == "/console/threads?page=1"
    assert link("done", "a b", 2, "c1") == "/console/threads?status=done&q=a+b&page=2&cursor=c1"


def test_someone_elses_lock_is_unlocked_only_with_a_reason():
    viewer = Viewer(ALICE, None, "csrf", open_mode=False)
    mine = Lock("production", lock_owner(ALICE), "release", datetime(2026, 11, 5, tzinfo=UTC))
    theirs = Lock("production", lock_owner(BOB), "release", datetime(2026, 11, 5, tzinfo=UTC))
    assert unlock_command("production", mine, viewer, {}) == "unlock production"
    assert unlock_command("production", theirs, viewer, {"reason": " the  release is done "}) == \
        "unlock production --force: the release is done"
    with pytest.raises(Page) as unsaid:
        unlock_command("production", theirs, viewer, {"reason": " "})
    assert unsaid.value.status == 400


# --- the audit trail: one derivation, the runtime's ------------------------------------------


def _deployed_thread() -> tuple[Thread, DeployResult]:
    now = datetime(2026, 11, 25, 12, 0, tzinfo=UTC)
    ask = UserMessage(text="deploy backend v1.2.3 to production", user="U1", person="carol", via="slack",
                      channel="slack", evidence="U1", at=now)
    step = DeployService(service="backend", tag="v1.2.3", environment="production", reason="newest", source="llm",
                         at=now + timedelta(seconds=1))
    asked = ApprovalRequested(step_id=step.id, thread_id="t1", args_hash="h", service="backend", tag="v1.2.3",
                              commit="c" * 40, environment="production", requested_by="carol",
                              expires_at=now + timedelta(hours=1), at=now + timedelta(seconds=2))
    yes = HumanResponse(user="bob", person="bob", via="session", channel="console", evidence="s9", text="",
                        approval_id=asked.approval_id, approve=True, at=now + timedelta(seconds=3))
    started = DeployStarted(step_id=step.id, deploy_id="t1-1", commit="c" * 40, at=now + timedelta(seconds=4))
    result = DeployResult(step_id=step.id, deploy_id="t1-1", service="backend", tag="v1.2.3",
                          environment="production", commit="c" * 40, ok=True, exit_code=0, approved_by="bob",
                          output="building\ndeploying backend v1.2.3 with sekrit-1\x1b[31m\n",
                          at=now + timedelta(seconds=9))
    return Thread("t1", (ask, step, asked, yes, started, result)), result


def test_the_console_shows_the_audit_trail_the_history_keeps_whether_the_thread_is_there_or_gone():
    thread, result = _deployed_thread()
    bare = DeployRecord("production", "backend", "v1.2.3", "c" * 40, True, result.at, "bob", "t1", "t1-1")
    kept = replace(bare, **audit_trail(thread, result, ("sekrit-1",)))  # what the deploy path stores
    live, gone = model.audit(bare, thread, ("sekrit-1",)), model.audit(kept, None)
    assert live.record == gone.record == kept
    assert live.asked_by == gone.asked_by == "carol"
    assert live.record.decided_by == "bob" and live.record.decision_evidence == "s9"
    assert "sekrit-1" not in live.output_tail and "\x1b" not in live.output_tail
    assert "deploying backend v1.2.3" in live.output_tail
    assert model.record_fields(live) == model.record_fields(gone)
    row = model.record_fields(gone)
    assert (row["requested_by"], row["request"], row["finished_at"]) == (
        "carol", "deploy backend v1.2.3 to production", result.at.isoformat())
    assert model.audit(bare, None).asked_by == "" and model.record_fields(model.audit(bare, None))["started_at"] == ""


def _card(**asked) -> model.Approval:
    request = ApprovalRequested(
        step_id="s1", thread_id="t1", args_hash="h", service="backend", tag="v1.2.2", commit="c" * 40,
        environment="production", requested_by="api:carol", expires_at=datetime(2026, 12, 2, tzinfo=UTC), **asked)
    return model.Approval("t1", request, "", "alice", None, None, pending=True, expired=False)


def test_an_approval_card_warns_of_a_faulty_commit_and_of_going_back_but_not_of_a_rollback():
    from bot.core.events import Change

    back = Change(from_tag="v1.2.3", from_commit="b" * 40, to_commit="c" * 40, behind=2)
    going_back = _card(change=back)
    assert going_back.warnings == [wording.goes_back_warning(2, "production")]
    assert going_back.key_facts == "asked by carol · goes back 2 commits"
    assert _card(change=back, rollback_of="d1").warnings == []  # its rollback flag says so
    assert _card(change=back.model_copy(update={"behind": 0, "ahead": 3})).warnings == []

    def rec(env: str, service: str, commit: str, faulty: bool) -> DeployRecord:
        return DeployRecord(env, service, "v1.2.2", commit, True, datetime(2026, 12, 1, tzinfo=UTC), None, "t", "d",
                            faulty=faulty)

    records = [rec("staging", "backend", "c" * 40, True), rec("development", "frontend", "c" * 40, True),
               rec("production", "backend", "c" * 40, False), rec("development", "backend", "c" * 40, True)]
    [marked] = model.marked_faulty([_card()], records)
    assert marked.faulty_in == ("development", "staging")  # its own service's deploys, where marked
    assert marked.warnings == [wording.faulty_warning("c" * 40, ["development", "staging"])]
    decided = replace(_card(), pending=False)
    assert model.marked_faulty([decided], records) == [decided]  # only what may still be approved
