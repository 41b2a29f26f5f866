"""Deploying from the console without a browser: the matrix's cells (what is where, what
holds it, what differs from the environment before; the "verifying" hook), how many approvals
wait for someone (the policy's rule), the deploy form's tags (subjects, CI, what is there
now), its refusals and its change preview, and the pages' empty states and "Waiting for you"."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from bot.adapters.http.console import grid, mine, offering, routes
from bot.adapters.http.console.deploy_form import Asked
from bot.core.catalog import Catalog, Service
from bot.core.events import ApprovalRequested, DeployService, UserMessage
from bot.core.freeze_windows import one_off
from bot.core.people import SESSION, Identity, Written
from bot.core.policy import Policy, Timing
from bot.core.promotion import Order, Promotion
from bot.core.thread import Thread
from bot.runtime.deploying import Deploying
from bot.runtime.ports import Check, DeployRecord, Lock
from bot.testing.memory import MemoryDeployer, MemoryEnvironments
from tests.people_kinds import a_person, directory_of

NOW = datetime(2026, 11, 27, 12, 0, tzinfo=UTC)
PEOPLE = directory_of([a_person("alice", (), ("alice@example.com",)), a_person("bob", (), ("bob@example.com",))])
ASKER = PEOPLE.by_name("bob", via=SESSION)  # who previews: asks, approves nothing here but staging
ENVIRONMENTS = ["development", "production", "staging"]
POLICY = Policy.configured(
    environments=frozenset(ENVIRONMENTS), directory=PEOPLE,
    written={"production": Written(approvers=("alice",), protected=True), "development": Written(),
             "staging": Written(approvers=("alice", "bob"), protected=True)},
    timing={"staging": Timing(required=2)},
    catalog=Catalog.of([Service("backend"), Service("frontend", frozenset({"development", "production"}))]),
)


def record(env: str, service: str, tag: str, minutes: int, ok: bool = True) -> DeployRecord:
    return DeployRecord(env, service, tag, tag.ljust(40, "0"), ok, NOW - timedelta(minutes=minutes), None,
                        f"t-{env}-{service}-{tag}", f"t-{env}-{service}-{tag}-0123456789abcdef")


def test_the_matrix_shows_what_is_where_what_holds_it_and_what_differs():
    histories = {
        "development": [record("development", "backend", "v1.3.0", 5), record("development", "frontend", "v2.0", 9)],
        "production": [record("production", "backend", "v1.2.3", 60, ok=False),
                       record("production", "backend", "v1.2.3", 90),
                       record("production", "frontend", "v2.0", 30)],
    }
    locks = {"production": [Lock("production", "manual:alice", "release", NOW, service="backend")]}
    busy = {("backend", "staging"): grid.Busy(waiting="t-waiting"),
            ("frontend", "production"): grid.Busy(running="t-run")}
    rows = grid.cells(POLICY, ENVIRONMENTS, histories, locks, ["staging"], busy,
                      verifying={("frontend", "development"): "t-verify"})
    backend, frontend = rows
    dev, prod, staging = backend.cells
    assert (dev.tag, dev.states, dev.differs_from) == ("v1.3.0", ("deployed",), "")
    assert (prod.tag, prod.states, prod.differs_from) == ("v1.2.3", ("locked", "failed", "deployed"), "development")
    assert prod.current is not None and prod.current.ok  # the newest that succeeded, not the failed one
    assert (staging.tag, staging.state, staging.thread_id) == ("", "waiting for approval", "t-waiting")
    assert staging.states == ("waiting for approval", "frozen") and staging.differs_from == "production"
    f_dev, f_prod, f_staging = frontend.cells
    assert (f_dev.state, f_dev.thread_id, f_dev.differs_from) == ("verifying", "t-verify", "")
    assert (f_prod.state, f_prod.thread_id, f_prod.differs_from) == ("running", "t-run", "")  # the same tag
    assert not f_staging.deploys_here and f_staging.states == ()
    assert grid.anything_deployed(rows)
    empty = grid.cells(POLICY, ENVIRONMENTS, {}, {}, [], {})
    assert not grid.anything_deployed(empty)
    assert all(c.state == "nothing deployed" and not c.differs_from for r in empty for c in r.cells if c.deploys_here)


def test_an_environment_lock_holds_every_service_there():
    locks = {"development": [Lock("development", "manual:bob", "tidy", NOW)]}
    rows = grid.cells(POLICY, ENVIRONMENTS, {}, locks, [], {})
    assert [r.cells[0].states for r in rows] == [("locked",), ("locked",)]


def asked_thread(thread_id: str, environment: str, by: str) -> Thread:
    ask = UserMessage(text=f"deploy backend v1.2.3 to {environment}", user=by, person=by, at=NOW)
    step = DeployService(service="backend", tag="v1.2.3", environment=environment, at=NOW)
    request = ApprovalRequested(step_id=step.id, thread_id=thread_id, args_hash="h", service="backend",
                                tag="v1.2.3", commit="c" * 40, environment=environment, requested_by=by,
                                expires_at=NOW + timedelta(hours=1), at=NOW)
    return Thread(thread_id, (ask, step, request))


def test_waiting_for_you_counts_what_the_policy_lets_each_person_decide():
    threads = [asked_thread("t1", "production", "bob"), asked_thread("t2", "staging", "bob")]
    alice, bob = Identity("alice", SESSION, "s1"), Identity("bob", SESSION, "s2")
    assert mine.count(threads, alice, POLICY, NOW) == 2
    assert mine.count(threads, bob, POLICY, NOW) == 1  # staging's approvers name bob; production's do not
    assert mine.count(threads, alice, POLICY, NOW + timedelta(hours=2)) == 0  # lapsed: nothing to decide


def deploying() -> tuple[Deploying, MemoryDeployer, MemoryEnvironments]:
    versions = MemoryDeployer({"v1.3.0": "d" * 40, "v1.2.3": "c" * 40, "v1.2.2": "b" * 40, "v1.2.1": "a" * 40})
    versions.add_commit("e" * 40, "<b>fix</b> login")
    versions.move_tag("v1.3.0", "e" * 40)
    versions.ci = {"e" * 40: [Check("build", "success"), Check("lint", "pending")],
                   "c" * 40: [Check("build", "success")], "b" * 40: [Check("build", "failure")]}
    environments = MemoryEnvironments()
    parts = Deploying({"backend": versions, "frontend": versions}, environments, environments, POLICY)
    return parts, versions, environments


def test_the_form_offers_tags_newest_first_with_subjects_ci_and_what_is_there():
    parts, _, _ = deploying()
    tags = asyncio.run(offering.offered("backend", parts.deployers["backend"], "v1.2.3"))
    assert [(t.name, t.ci, t.current) for t in tags] == [
        ("v1.3.0", "pending", False), ("v1.2.3", "passed", True), ("v1.2.2", "failing", False),
        ("v1.2.1", "none", False)]
    subjects = [t.subject for t in tags]
    assert subjects == ["<b>fix</b> login", "release v1.2.3", "release v1.2.2", ""]  # the oldest's is not known
    assert offering.ci_state([]) == "none" and offering.ci_state(None) == "none"


def test_the_form_finds_a_tag_beyond_the_newest_it_shows():
    many = {f"v1.{n}.0": f"{n:040x}" for n in range(30, 0, -1)}  # v1.30.0 newest ... v1.1.0
    versions = MemoryDeployer(many)
    newest = asyncio.run(offering.offered("backend", versions, ""))
    assert len(newest) == offering.TAGS_SHOWN and newest[0].name == "v1.30.0" and "v1.3.0" not in {
        t.name for t in newest}
    found = asyncio.run(offering.offered("backend", versions, "v1.2.0", find="V1.2"))
    assert [(t.name, t.current) for t in found] == [
        ("v1.29.0", False), ("v1.28.0", False), ("v1.27.0", False), ("v1.26.0", False), ("v1.25.0", False),
        ("v1.24.0", False), ("v1.23.0", False), ("v1.22.0", False), ("v1.21.0", False), ("v1.20.0", False),
        ("v1.2.0", True)]
    assert found[-1].subject == "release v1.2.0"  # its subject as if listed with the rest
    assert asyncio.run(offering.offered("backend", versions, "", find="v9")) == []
    assert Asked.of({"find": "  v1.2 " + "x" * 200}).find == "v1.2 " + "x" * 95


def test_the_form_refuses_what_the_deploy_path_would_and_previews_the_rest():
    parts, versions, environments = deploying()
    for service, tag, env, words in (
        ("payments", "v1.2.3", "production", "unknown service 'payments'"),
        ("backend", "v1.2.3", "moon", "unknown environment 'moon'"),
        ("frontend", "v1.2.3", "staging", "frontend is not deployed to staging"),
        ("backend", "v1;rm", "production", "not a valid git tag name"),
    ):
        with pytest.raises(offering.Refusal, match=words):
            offering.step_for(parts, service, tag, env)
    monorepo = Policy.configured(environments=frozenset({"production"}),
                                 catalog=Catalog.of([Service("web", tag_prefix="web/")]))
    web = offering.step_for(Deploying({}, parts.locks, parts.history, monorepo), "web", "v1.2.3", "production")
    assert (web.service, web.tag) == ("web", "web/v1.2.3")  # as chat takes it
    step = offering.step_for(parts, "BACKEND", "v9.9.9", "production")  # as chat: the catalog's spelling
    assert step.service == "backend"
    with pytest.raises(offering.Refusal, match="tag 'v9.9.9' does not exist; newest tags: v1.3.0, v1.2.3"):
        asyncio.run(offering.commit_of(parts, step))

    asyncio.run(environments.record(replace(record("production", "backend", "v1.2.3", 10), commit="c" * 40)))
    asyncio.run(environments.acquire(Lock("production", "manual:bob", "incident", NOW), None))
    step = offering.step_for(parts, "backend", "v1.3.0", "production")
    seen = asyncio.run(offering.preview(parts, step, asyncio.run(offering.commit_of(parts, step)), ASKER, NOW))
    assert seen.lines[0] == "from v1.2.3 (ccccccc) to eeeeeee: 2 commits ahead"
    assert seen.lines[1:] == ["commits added:", "eeeeeee <b>fix</b> login (dev)", "ddddddd release v1.3.0 (dev)"]
    assert (seen.ci, seen.approval) == ("pending", "needs an approval from alice")
    assert seen.held == "not deploying: production is locked by bob since 2026-11-27 12:00 UTC: incident"
    assert seen.command("release (day)") == "deploy backend v1.3.0 to production (release day)"
    staging = offering.step_for(parts, "backend", "v1.2.2", "staging")
    parts.policy = replace(POLICY, freezes=(one_off("staging", NOW, NOW + timedelta(hours=1), reason="sale"),))
    later = asyncio.run(offering.preview(parts, staging, "b" * 40, ASKER, NOW))
    assert later.approval == "needs 2 approvals from alice or bob" and later.frozen and not later.held
    assert later.lines == ["nothing deployed there yet; bbbbbbb would be the first"]


def page(name: str, **context: object) -> str:
    viewer = routes.Viewer(Identity("alice", SESSION, "s1"), None, "csrf-token", open_mode=False)
    return routes.templates().get_template(name).render(
        viewer=viewer, notice=None, path="/console/matrix", prefix=routes.PREFIX, can_mail_links=False,
        version="v", watch="board", now=NOW, **context,
    )


def test_the_matrix_says_what_to_do_when_there_is_nothing_and_every_page_says_what_waits():
    html = page("matrix.html", rows=[], environments=ENVIRONMENTS, deployed=False, may_deploy=True)
    assert "No services yet" in html and "[services.api]" in html and "<table" not in html
    assert "<title>Matrix · deploybot</title>" in html and "Waiting for you" not in html
    rows = grid.cells(POLICY, ENVIRONMENTS, {}, {}, [], {})
    html = page("matrix.html", rows=rows, environments=ENVIRONMENTS, deployed=False, may_deploy=True,
                waiting_for_you=2)
    assert "Nothing deployed yet" in html and "deploy backend TAG to development" in html
    assert "<title>(2) Matrix · deploybot</title>" in html
    assert '<a href="/console/approvals">Waiting for you (2)</a>' in html
    assert 'href="/console/deploy?service=frontend&amp;environment=production"' in html
    assert html.count("not deployed here") == 1  # frontend in staging: no Deploy there
    assert "Deploy" not in page("matrix.html", rows=rows, environments=ENVIRONMENTS, deployed=False,
                                may_deploy=False).split("<table")[1]  # the shared token reads, never deploys


def test_the_deploy_form_says_what_to_do_without_services_or_tags():
    values = {"asked": Asked(),
              "tags": [], "tags_error": "", "current": None, "preview": None, "error": "",
              "environments": ENVIRONMENTS, "may_deploy": True, "max_note": 300}
    html = page("deploy_form.html", service="", services=(), **values)
    assert "No services yet" in html and "[services.NAME]" in html
    html = page("deploy_form.html", service="backend", services=("backend",), **values)
    assert "backend has no tags yet" in html and "git tag v1.0.0" in html and "No services yet" not in html


def test_a_preview_shows_the_promotion_order_refusing_and_asks_for_no_approval_it_would_not_get():
    """The preview asks the deploy path's own rules: a commit that never passed staging is
    refused at once for production, so the page says that, not "needs an approval"."""
    parts, _, _ = deploying()
    parts.policy = replace(POLICY, promotion=Promotion(Order(("staging", "production"))))
    step = offering.step_for(parts, "backend", "v1.3.0", "production")
    seen = asyncio.run(offering.preview(parts, step, asyncio.run(offering.commit_of(parts, step)), ASKER, NOW))
    html = page("deploy_form.html", asked=Asked(service="backend", environment="production", tag="v1.3.0"),
                service="backend", services=("backend",), tags=[], tags_error="", current=None, preview=seen,
                error="", environments=ENVIRONMENTS, may_deploy=True, max_note=300)
    assert "v1.3.0 (eeeeeee) has not been deployed to staging" in html
    assert "needs an approval" not in html
