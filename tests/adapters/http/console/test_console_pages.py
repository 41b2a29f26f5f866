"""The console's templates and board rows without a browser: what a forced deploy, a rollback
and a deploy's own lock look like, an approval reminded, escalated, half approved or expired,
freezes, the line of waiting deploys and "deploy anyway", from values no browser test can make
cheaply (a forced deploy needs a CI that fails, an expiry an hour). Every value printed is text."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from bot.adapters.http.console import model, routes
from bot.adapters.http.console.forms import Page, until
from bot.core import freeze_windows as freezes
from bot.core import wording
from bot.core.events import (
    ApprovalEscalated,
    ApprovalExpired,
    ApprovalReminded,
    ApprovalRequested,
    Change,
    CommitSummary,
    DeployQueued,
    DeployService,
    Error,
    HumanResponse,
    UserMessage,
)
from bot.core.people import SERVICE, SESSION, Identity
from bot.core.policy import Policy
from bot.core.thread import Thread
from bot.runtime.ports import DeployRecord, Lock

NOW = datetime(2026, 11, 25, 12, 0, tzinfo=UTC)
ALICE = Identity("alice", SESSION, "s1")
POLICY = Policy.configured(environments=frozenset({"production"}))


def record(deploy_id: str, tag: str, minutes: int, **fields: object) -> DeployRecord:
    values: dict[str, object] = {
        "environment": "production", "service": "frontend", "tag": tag, "commit": f"{tag}-commit".ljust(40, "0"),
        "ok": True, "at": NOW - timedelta(minutes=minutes), "approved_by": "alice", "thread_id": "t1",
        "deploy_id": deploy_id, **fields,
    }
    return DeployRecord(**values)  # type: ignore[arg-type]


def page(name: str, **context: object) -> str:
    viewer = routes.Viewer(ALICE, None, "csrf-token", open_mode=False)
    values: dict[str, object] = {"now": NOW, **context}
    return routes.templates().get_template(name).render(
        viewer=viewer, notice=None, path="/console/", prefix=routes.PREFIX, can_mail_links=False,
        version="v", watch="board", **values,
    )


def test_a_forced_rollback_awaiting_approval_says_so_and_its_words_stay_text():
    request = ApprovalRequested(
        step_id="s", thread_id="t2", args_hash="h", service="frontend", tag="v1.2.3", commit="c" * 40,
        environment="production", requested_by="alice", expires_at=NOW + timedelta(hours=1),
        rollback_of="t1-0123456789abcdef", force="<b>CI</b> is down", forced_by="carol",
        change=Change(from_tag="v1.3.0", from_commit="d" * 40, to_commit="c" * 40, behind=1,
                      commits=[CommitSummary(sha="d" * 40, subject="<i>tidy</i>", author="dana")]),
    )
    approval = model.Approval("t2", request, "roll back frontend in production", "alice", None, None, True, False)
    html = page("approvals.html", pending=[approval], decided=[])
    assert "rolls back deploy <a href=\"/console/deploys/production/t1-0123456789abcdef\">" in html
    assert "deploy anyway: <span class=\"said\">&lt;b&gt;CI&lt;/b&gt; is down</span> by carol" in html
    assert "goes back 1 commit" in html and "commits removed:" in html
    assert "ddddddd &lt;i&gt;tidy&lt;/i&gt; (dana)" in html and "<i>" not in html and "<b>" not in html


def test_the_record_says_faulty_rolled_back_and_forced_and_only_the_current_deploy_rolls_back():
    records = [
        record("t3-3", "v1.2.3", 1, rollback_of="t2-2"),
        record("t2-2", "v1.3.0", 5, faulty=True, force="<b>flaky</b> test", forced_by="carol"),
        record("t1-1", "v1.2.3", 9),
    ]
    assert model.rollbackable(records) == set()  # the current one is a rollback
    assert model.rollbackable(records[1:]) == set()  # the current one is faulty
    assert model.rollbackable(records[2:]) == {"t1-1"}
    assert model.rollbackable([record("t4-4", "v1.3.1", 0, ok=False), *records[2:]]) == {"t1-1"}
    older = record("t0-0", "v1.2.0", 20)
    assert model.rollback_target(records[2:], records[2]) is None  # nothing earlier: no Roll back
    assert model.rollback_target([*records[2:], older], records[2]) == older
    rows = [model.Deployed(r, "alice", may_roll_back=r.deploy_id == "t1-1", rollback_to=older) for r in records]
    html = page("deploys.html", rows=rows, filters={"environment": "", "service": "frontend", "tag": "",
                "outcome": "", "person": "", "limit": ""}, query="service=frontend",
                environments=["production"], services=["backend", "frontend"])
    assert "rolled back deploy <a href=\"/console/deploys/production/t2-2\">t2-2</a>" in html
    assert "faulty: rolled back" in html
    assert "deployed anyway: <span class=\"said\">&lt;b&gt;flaky&lt;/b&gt; test</span> by carol" in html
    assert html.count("Yes, roll back</button>") == 1 and 'name="deploy_id" value="t1-1"' in html
    assert "Roll back frontend in production from v1.2.3 to v1.2.0?" in html
    assert '<option value="frontend" selected>' in html


def test_the_board_has_a_row_per_service_with_its_own_lock_and_a_deploy_lock_links_its_thread():
    deploying = Lock("production", "thread-7-0123456789abcdef", "deploying frontend v1.3.0", NOW, "frontend")
    whole = Lock("production", "manual:alice", "freeze", NOW)
    history = [record("t1-1", "v1.2.3", 9), record("t0-0", "v1.2.0", 20)]
    rows = model.service_rows("production", ["backend", "frontend"], history,
                              [whole, deploying], POLICY, ALICE, {}, may_start=True)
    assert [(r.name, r.current is not None, r.lock is not None) for r in rows] == [
        ("backend", False, False), ("frontend", True, True)]
    assert rows[1].lock is not None and rows[1].lock.thread_id == "thread-7"
    assert rows[1].current is not None and rows[1].current.may_roll_back
    assert rows[1].current.rollback_to == history[1]
    alone = model.service_rows("production", ["frontend"], history[:1], [], POLICY, ALICE, {}, may_start=True)
    assert alone[0].current is not None and not alone[0].current.may_roll_back  # nothing earlier to go back to
    reading = model.service_rows("production", ["backend", "frontend"], history,
                                 [], POLICY, ALICE, {}, may_start=False)
    assert reading[1].current is not None and not reading[1].current.may_roll_back


# --- approvals over time, freezes, the line ---------------------------------------------------


def _asking(required: int = 1, **fields: object) -> tuple[DeployService, ApprovalRequested]:
    step = DeployService(service="backend", tag="v1.2.3", environment="production", reason="r", at=NOW)
    request = ApprovalRequested(
        step_id=step.id, thread_id="t5", args_hash="h", service="backend", tag="v1.2.3", commit="c" * 40,
        environment="production", requested_by="carol", expires_at=NOW + timedelta(hours=1), required=required,
        at=NOW, **fields,  # type: ignore[arg-type]
    )
    return step, request


def _approved(request: ApprovalRequested, person: str, minutes: int) -> HumanResponse:
    return HumanResponse(user=person, person=person, via="session", channel="console", text="approved",
                         approval_id=request.approval_id, approve=True, at=NOW + timedelta(minutes=minutes))


def test_two_approvals_escalation_and_reminders_show_on_the_card_and_whoever_approved_cannot_again():
    step, request = _asking(required=2)
    thread = Thread("t5", (
        UserMessage(text="deploy backend v1.2.3 to production", user="carol", person="carol", at=NOW), step, request,
        ApprovalReminded(approval_id=request.approval_id, count=1, at=NOW + timedelta(minutes=15)),
        ApprovalReminded(approval_id=request.approval_id, count=2, at=NOW + timedelta(minutes=30)),
        ApprovalEscalated(approval_id=request.approval_id, to=["bob"], at=NOW + timedelta(minutes=31)),
        _approved(request, "alice", 32),
    ))
    now = NOW + timedelta(minutes=33)
    [mine] = model.approvals(thread, ALICE, POLICY, now)
    assert mine.pending and mine.progress == "1 of 2: approved by alice" and not mine.may_decide
    assert mine.why_not == "you have approved already; it needs 1 more approval from someone else"
    [theirs] = model.approvals(thread, Identity("dave", SESSION, "s2"), POLICY, now)
    assert theirs.may_decide and theirs.reminders == 2
    html = page("approvals.html", pending=[mine, theirs], decided=[], now=now)
    assert html.count("1 of 2: approved by alice") == 2 and html.count("Approve</button>") == 1
    assert "asked bob too, <time" in html and "2 sent" in html


def test_an_expired_approval_is_closed_not_deployed_and_a_lapsed_one_has_no_approve_button():
    step, request = _asking()
    lapsed = Thread("t6", (step, request))
    later = request.expires_at + timedelta(seconds=1)
    [waiting] = model.approvals(lapsed, ALICE, POLICY, later)
    assert waiting.expired and not waiting.pending and waiting.closed_at is None
    expired = lapsed.extended([ApprovalExpired(approval_id=request.approval_id, step_id=step.id,
                                               expires_at=request.expires_at, at=later)])
    [closed] = model.approvals(expired, ALICE, POLICY, later)
    assert closed.expired and closed.expiry is not None and closed.closed_at == later and not closed.pending
    html = page("approvals.html", pending=[], decided=[closed], now=later)
    assert "Expired at " + f"{request.expires_at:%Y-%m-%d %H:%M}" + " UTC, not deployed" in html
    assert "Approve</button>" not in html and "data-expires" not in html


def test_the_board_shows_freezes_the_next_window_the_line_and_stop_buttons_for_who_may():
    weekly = freezes.weekly("production", "Fri 16:00", "Mon 08:00", timezone="Europe/Berlin", reason="weekend")
    everywhere = freezes.stop_the_line("*", reason="incident <b>4711</b>", set_by="alice", since=NOW)
    policy = Policy.configured(environments=frozenset({"production", "staging"}), freezes=[weekly])
    card = model.environment("production", policy, ALICE)
    card.freeze = model.freezing([weekly, everywhere], "production", NOW)
    card.next_freeze = model.next_window(policy.freezes, "production", NOW)  # NOW: a Wednesday
    card.stop = model.stop("production", [everywhere], policy, ALICE, True)
    step, _ = _asking()
    line = Thread("t7", (step, DeployQueued(step_id=step.id, position=2, behind="production is locked by bob",
                                            at=NOW)))
    queued = model.queued(line, NOW)
    assert queued is not None
    card.in_line.append(queued)
    stop_all = model.stop("*", [everywhere], policy, ALICE, True)
    html = page("board.html", environments=[card], everywhere=model.freezing([weekly, everywhere], "*", NOW),
                stop_all=stop_all)
    assert "every environment is frozen until someone resumes them (stop-the-line by alice): " \
           "incident &lt;b&gt;4711&lt;/b&gt;" in html
    assert "production is frozen until someone resumes them (stop-the-line by alice)" in html
    assert 'action="/console/resume"' in html and 'aria-label="Resume deploys to every environment"' in html
    assert 'action="/console/environments/production/stop"' in html  # its own stop, besides all
    assert "Next freeze: <time datetime=\"2026-11-27T15:00:00+00:00\"" in html
    assert "(weekly freeze Fri 16:00 to Mon 08:00 (Europe/Berlin))" in html
    assert ("Approved; deploying backend v1.2.3 to production waits in line (number 2): production is locked by "
            "bob.") in html and 'href="/console/threads/t7"' in html
    reading = model.stop("production", [], policy, SERVICE, True)
    assert reading.why_not and not reading.may_stop  # the shared token reads
    assert model.stop("production", [], policy, ALICE, False).why_not == wording.cannot_stop_here()


def test_deploy_anyway_is_offered_for_a_frozen_or_failing_deploy_to_who_may_force():
    step, _ = _asking()
    frozen = Thread("t8", (step, Error(kind="frozen", step_id=step.id, message="production is frozen", at=NOW)))
    found = model.blocked(frozen, ALICE, POLICY)
    assert found is not None and found.may_force and (found.service, found.tag, found.kind) == (
        "backend", "v1.2.3", "frozen")
    forced = DeployService(service="backend", tag="v1.2.3", environment="production", force="why", forced_by="x")
    refused = frozen.extended([forced, Error(kind="validation", step_id=forced.id, message="x may not", at=NOW)])
    assert model.blocked(refused, ALICE, POLICY) is not None  # a refused "deploy anyway" leaves it blocked
    failed = Thread("t9", (step, Error(kind="deployer", step_id=step.id, message="boom", at=NOW)))
    assert model.blocked(failed, ALICE, POLICY) is None
    html = page("thread.html", thread=frozen, status="done", items=model.timeline(frozen, ()), approvals=[],
                blocked=found)
    assert 'action="/console/threads/t8/deploy-anyway"' in html and "production is frozen" in html


def test_until_is_read_as_utc_and_anything_else_refused():
    assert until("") is None
    assert until("2026-11-26T08:00") == datetime(2026, 11, 26, 8, 0, tzinfo=UTC)
    assert until("2026-11-26 8:05") == datetime(2026, 11, 26, 8, 5, tzinfo=UTC)
    assert until("2026-11-26") == datetime(2026, 11, 26, tzinfo=UTC)
    for bad in ("tomorrow", "2026-13-01T08:00", "2026-11-26T25:00"):
        with pytest.raises(Page):
            until(bad)


def test_a_decided_approval_shows_the_rules_it_was_asked_under_not_todays():
    step, asked = _asking(required=2, approvers=["alice", "erin"])
    request = asked.model_copy(update={"requested_by": "api:carol"})  # the shared token said "carol"
    thread = Thread("t6", (
        UserMessage(text="deploy backend v1.2.3 to production", user="carol", via="api", at=NOW), step, request,
        _approved(request, "alice", 1), _approved(request, "erin", 2),
    ))
    [decided] = model.approvals(thread, ALICE, POLICY, NOW + timedelta(minutes=3))
    assert decided.rules_then == "2 of alice, erin"  # today's POLICY lets anyone decide: not what applied then
    html = page("approvals.html", pending=[], decided=[decided], now=NOW)
    assert "Rules then" in html and "May decide" not in html and "2 of alice, erin" in html
    assert "api:carol" not in html and '<span class="person">carol</span> <small class="via">api</small>' in html
    old = request.model_copy(update={"approvers": []})  # asked before the approvers were kept
    [unknown] = model.approvals(Thread("t7", (step, old, _approved(old, "alice", 1), _approved(old, "erin", 2))),
                                ALICE, POLICY, NOW)
    assert unknown.rules_then == "2 approvals (who could decide was not recorded then)"
    [pending] = model.approvals(Thread("t8", (step, request)), ALICE, POLICY, NOW)
    assert pending.rules_then == "" and pending.pending  # an open one: today's rules decide


def test_no_format_character_reaches_the_page():
    # U+202E would show "fixes nigol" reversed, zero-width characters hide or join words:
    # whatever a person, an agent or git wrote is printed without them (the page's own
    # Jinja2 environment drops them from every value it prints).
    hidden = "\u202e\u2066\u2069\u200b\u200d\u2060\ufeff"
    request = ApprovalRequested(
        step_id="s", thread_id="t2", args_hash="h", service="frontend", tag="v1.2.3", commit="c" * 40,
        environment="production", requested_by="alice", expires_at=NOW + timedelta(hours=1),
        reason=f"fixes {hidden}login", force=f"CI{hidden} is down", forced_by="carol",
        change=Change(from_tag="v1.3.0", from_commit="d" * 40, to_commit="c" * 40, behind=1,
                      commits=[CommitSummary(sha="d" * 40, subject=f"tidy{hidden} up", author=f"da{hidden}na")]),
    )
    approval = model.Approval("t2", request, f"deploy{hidden} frontend", f"al{hidden}ice", None, None, True, False)
    html = page("approvals.html", pending=[approval], decided=[])
    assert "fixes login" in html and "CI is down" in html and "tidy up" in html and "dana" in html
    assert [c for c in hidden if c in html] == []
