"""The console's templates and board rows without a browser: what a forced deploy, a rollback
and a deploy's own lock look like, from values no browser test can make cheaply (a forced
deploy needs a CI that fails). Every value printed is text."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from bot.console import model, routes
from bot.events import ApprovalRequested, Change, CommitSummary
from bot.people import SESSION, Identity
from bot.policy import Policy
from bot.ports import DeployRecord, Lock

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
    return routes.templates().get_template(name).render(
        viewer=viewer, notice=None, path="/console/", now=NOW, prefix=routes.PREFIX, can_mail_links=False,
        version="v", watch="board", **context,
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
    rows = [model.Deployed(r, "alice", may_roll_back=r.deploy_id == "t1-1") for r in records]
    html = page("deploys.html", rows=rows, filters={"environment": "", "service": "frontend", "tag": "",
                "outcome": "", "person": "", "limit": ""}, query="service=frontend",
                environments=["production"], services=["backend", "frontend"])
    assert "rolled back deploy <a href=\"/console/deploys/production/t2-2\">t2-2</a>" in html
    assert "faulty: rolled back" in html
    assert "deployed anyway: <span class=\"said\">&lt;b&gt;flaky&lt;/b&gt; test</span> by carol" in html
    assert html.count("Roll back</button>") == 1 and 'name="deploy_id" value="t1-1"' in html
    assert '<option value="frontend" selected>' in html


def test_the_board_has_a_row_per_service_with_its_own_lock_and_a_deploy_lock_links_its_thread():
    deploying = Lock("production", "thread-7-0123456789abcdef", "deploying frontend v1.3.0", NOW, "frontend")
    whole = Lock("production", "manual:alice", "freeze", NOW)
    rows = model.service_rows("production", ["backend", "frontend"], [record("t1-1", "v1.2.3", 9)],
                              [whole, deploying], POLICY, ALICE, {}, may_start=True)
    assert [(r.name, r.current is not None, r.lock is not None) for r in rows] == [
        ("backend", False, False), ("frontend", True, True)]
    assert rows[1].lock is not None and rows[1].lock.thread_id == "thread-7"
    assert rows[1].current is not None and rows[1].current.may_roll_back
    reading = model.service_rows("production", ["backend", "frontend"], [record("t1-1", "v1.2.3", 9)],
                                 [], POLICY, ALICE, {}, may_start=False)
    assert reading[1].current is not None and not reading[1].current.may_roll_back
