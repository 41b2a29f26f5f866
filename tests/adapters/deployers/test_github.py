"""The GitHub Actions deployer against a local server playing GitHub's REST API."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime

import pytest

from bot.adapters.deployers.github_actions import GitHubDeployer
from bot.core import wording
from bot.runtime.ports import DeployerError, DeployRequest
from bot.testing.fake_github import FakeGitHub

pytestmark = pytest.mark.network

REQUEST = DeployRequest("thread1-step1", "backend", "v1.2.3", "production", "sha123")


@pytest.fixture
def github() -> Iterator[FakeGitHub]:
    fake = FakeGitHub(tags=[("v1.2.3", "sha123"), ("v1.2.2", "sha122")]).start()
    yield fake
    fake.stop()


@pytest.fixture
async def deployer(github) -> GitHubDeployer:
    d = GitHubDeployer(github.token, github.repository, {"backend": "deploy-backend.yml"},
                       api_url=github.api_url, poll_seconds=0.01)
    yield d
    await d.aclose()


async def test_tags_follow_pagination_and_come_newest_first(github, deployer):
    github.tags = [(f"v1.{i}.0", f"sha{i}") for i in range(250)]
    tags = await deployer.list_tags()
    assert len(tags) == 250 and [t.name for t in tags[:3]] == ["v1.249.0", "v1.248.0", "v1.247.0"]
    assert tags[0].commit == "sha249"
    assert sum(1 for m, p in github.requests if p.endswith("/tags")) == 3


async def test_unchanged_tags_are_asked_with_their_etags_and_not_sent_again(github, deployer):
    """Issue 29: GitHub answers 304 for a page whose ETag the request names; a new tag (a new
    ETag) is listed at once."""
    github.tags = [(f"v1.{i}.0", f"sha{i}") for i in range(150)]
    first = await deployer.list_tags()
    assert github.not_modified == 0
    assert await deployer.list_tags() == first
    assert github.not_modified == 2  # both pages: 304, nothing sent again
    github.commit("release", tag="v2.0.0")
    again = await deployer.list_tags()
    assert again[0].name == "v2.0.0" and len(again) == 151
    assert sum(1 for m, p in github.requests if p.endswith("/tags")) == 6


async def test_resolve(github, deployer):
    assert await deployer.resolve("v1.2.2") == "sha122"
    assert await deployer.resolve("v9.9.9") is None


async def test_dispatch_follow_and_report(github, deployer):
    outcome = await deployer.deploy(REQUEST)
    assert outcome.ok and outcome.url.endswith("/actions/runs/1000")
    assert "finished: success" in outcome.output
    assert github.dispatches == [{
        "workflow": "deploy-backend.yml", "ref": "main",  # the approved commit goes with it, to check out
        "inputs": {"tag": "v1.2.3", "environment": "production", "deploy_id": "thread1-step1", "commit": "sha123"},
    }]


async def test_the_commit_input_can_be_renamed_or_left_out_for_a_workflow_without_it(github):
    github.inputs = ("tag", "environment", "deploy_id")
    default = GitHubDeployer(github.token, github.repository, {"backend": "deploy-backend.yml"},
                             api_url=github.api_url, poll_seconds=0.01)
    with pytest.raises(DeployerError, match=r"give the workflow a 'commit' input .* GITHUB_COMMIT_INPUT"):
        await default.deploy(REQUEST)
    await default.aclose()
    for name, inputs in (("sha", {"sha": "sha123"}), ("", {})):  # GITHUB_COMMIT_INPUT=sha, then empty
        github.inputs = ("tag", "environment", "deploy_id", name)
        d = GitHubDeployer(github.token, github.repository, {"backend": "deploy-backend.yml"},
                           api_url=github.api_url, poll_seconds=0.01, commit_input=name)
        request = replace(REQUEST, deploy_id=f"thread1-step-{name or 'none'}")
        assert (await d.deploy(request)).ok
        await d.aclose()
        assert github.dispatches[-1]["inputs"] == {
            "tag": "v1.2.3", "environment": "production", "deploy_id": request.deploy_id, **inputs
        }


async def test_a_failed_run_is_a_failed_outcome(github, deployer):
    github.conclusion = "failure"
    outcome = await deployer.deploy(REQUEST)
    assert not outcome.ok and "finished: failure" in outcome.output


async def test_a_run_already_started_for_the_deploy_id_is_followed_not_redispatched(github, deployer):
    github.hold_runs = True
    await deployer.http.post(  # a dispatch made before a crash
        f"/repos/{github.repository}/actions/workflows/deploy-backend.yml/dispatches",
        json={"ref": "main", "inputs": {"tag": "v1.2.3", "environment": "production", "deploy_id": REQUEST.deploy_id}},
    )
    github.release_runs()
    outcome = await deployer.deploy(REQUEST)
    assert outcome.ok and len(github.dispatches) == 1


@pytest.mark.parametrize("status, body, expected", [
    (401, {"message": "Bad credentials"}, "rejected GITHUB_TOKEN"),
    (403, {"message": "Resource not accessible by integration"}, "needs actions:write"),
    (404, {"message": "Not Found"}, "check GITHUB_REPOSITORY=acme/shop"),
    (422, {"message": "Unexpected inputs provided: [\"deploy_id\"]"}, "422): Unexpected inputs"),
])
async def test_clear_errors(github, deployer, status, body, expected):
    github.fail("POST", r"/dispatches$", status, body)
    with pytest.raises(DeployerError, match=expected.replace("(", r"\(").replace(")", r"\)").replace("[", r"\[")):
        await deployer.deploy(REQUEST)
    assert github.dispatches == []


async def test_rate_limits_are_waited_out(github, deployer):
    github.fail("GET", r"/tags$", 403, {"message": "API rate limit exceeded"},
                {"x-ratelimit-remaining": "0", "x-ratelimit-reset": str(int(time.time()))})
    github.fail("GET", r"/tags$", 429, {"message": "secondary rate limit"}, {"retry-after": "0"})
    assert [t.name for t in await deployer.list_tags()] == ["v1.2.3", "v1.2.2"]
    assert sum(1 for m, p in github.requests if p.endswith("/tags")) == 3


async def test_server_errors_are_retried(github, deployer):
    github.fail("GET", r"/runs$", 502, {"message": "Bad Gateway"})
    assert (await deployer.deploy(REQUEST)).ok


async def test_an_unreachable_github_is_a_deployer_error():
    d = GitHubDeployer("t", "acme/shop", {"backend": "x.yml"}, api_url="http://127.0.0.1:9", poll_seconds=0.001)
    with pytest.raises(DeployerError, match="could not reach GitHub"):
        await d.list_tags()
    await d.aclose()


async def test_server_errors_that_persist_end_in_a_clear_error(github, deployer):
    for _ in range(5):
        github.fail("GET", r"/tags$", 502, {"message": "Bad Gateway"})
    with pytest.raises(DeployerError, match="GitHub answered 502: Bad Gateway"):
        await deployer.list_tags()
    assert sum(1 for m, p in github.requests if p.endswith("/tags")) == 5  # RETRIES + 1


async def test_a_retry_after_is_believed_over_the_backoff(github):
    slow = GitHubDeployer(github.token, github.repository, {}, api_url=github.api_url, poll_seconds=100)
    github.fail("GET", r"/tags$", 429, {"message": "secondary rate limit"}, {"retry-after": "0"})
    try:
        assert len(await asyncio.wait_for(slow.list_tags(), 5)) == 2  # not 100 s of backoff
    finally:
        await slow.aclose()


async def test_a_repository_github_cannot_find_is_an_error_not_a_missing_tag(github, deployer):
    github.fail("GET", r"/commits/refs/tags/v1.2.3$", 404, {"message": "Not Found"})
    with pytest.raises(DeployerError, match="GitHub found no tag"):
        await deployer.resolve("v1.2.3")


@pytest.fixture
async def on_tag(github) -> GitHubDeployer:
    """GITHUB_REF={tag}: runs are dispatched on the tag itself."""
    d = GitHubDeployer(github.token, github.repository, {"backend": "deploy-backend.yml"},
                       api_url=github.api_url, ref="{tag}", poll_seconds=0.01)
    yield d
    await d.aclose()


async def test_dispatched_on_the_tag_a_run_on_the_approved_commit_is_followed(github, on_tag):
    outcome = await on_tag.deploy(REQUEST)
    assert outcome.ok and github.dispatches[0]["ref"] == "v1.2.3" and github.cancels == []
    assert github.runs[1000]["head_sha"] == REQUEST.commit


async def test_a_run_on_a_commit_nobody_approved_is_cancelled_and_reported_not_followed(github, on_tag):
    github.moves_at_dispatch = {"v1.2.3": "sha999"}  # moved after the approval, before the run checks out
    outcome = await on_tag.deploy(REQUEST)
    assert not outcome.ok and outcome.url.endswith("/actions/runs/1000")
    assert "run 1000 was on commit sha999, not the approved sha123: has v1.2.3 moved?" in outcome.output
    assert "cancelled it; it finished: cancelled" in outcome.output
    assert github.cancels == [1000] and github.runs[1000]["conclusion"] == "cancelled"


async def test_a_resumed_run_on_another_commit_is_cancelled_too(github, on_tag):
    github.hold_runs = True
    github.move_tag("v1.2.3", "sha999")
    await on_tag.http.post(  # dispatched before a crash, when the tag pointed elsewhere
        f"/repos/{github.repository}/actions/workflows/deploy-backend.yml/dispatches",
        json={"ref": "v1.2.3", "inputs": {"tag": "v1.2.3", "environment": "production",
                                          "deploy_id": REQUEST.deploy_id}},
    )
    outcome = await on_tag.deploy(REQUEST)
    assert not outcome.ok and github.cancels == [1000] and len(github.dispatches) == 1
    assert "was on commit sha999, not the approved sha123" in outcome.output


async def test_a_run_that_cannot_be_cancelled_is_reported_for_a_human_to_stop(github, on_tag):
    github.moves_at_dispatch = {"v1.2.3": "sha999"}
    github.fail("POST", r"/runs/\d+/cancel$", 403, {"message": "Resource not accessible by integration"})
    outcome = await on_tag.deploy(REQUEST)
    assert not outcome.ok and "cancelling it failed, stop it by hand" in outcome.output
    assert "needs actions:write" in outcome.output


async def test_a_dispatch_whose_answer_was_lost_is_not_sent_again(github, deployer):
    # GitHub started the run, and a proxy answered 502: a second dispatch would start a
    # second run of the same deploy.
    github.fail_after("POST", r"/dispatches$", 502, {"message": "Bad Gateway"})
    outcome = await deployer.deploy(REQUEST)
    assert outcome.ok and len(github.dispatches) == 1


async def test_a_dispatch_refused_outright_is_tried_again(github, deployer):
    github.fail("POST", r"/dispatches$", 429, {"message": "secondary rate limit"}, {"retry-after": "0"})
    assert (await deployer.deploy(REQUEST)).ok and len(github.dispatches) == 1


# --- compare and checks ---------------------------------------------------------------

def linear(github: FakeGitHub, count: int) -> list[str]:
    """`count` commits on top of the fake's history, "change 1" (oldest) first; their shas."""
    return [github.commit(f"change {i}\n\nbody {i}", author=f"Dev {i}", login=f"dev{i}") for i in range(1, count + 1)]


async def test_compare_forward_lists_the_commits_added_newest_first(github, deployer):
    shas = linear(github, 5)
    change = await deployer.compare(shas[0], shas[4], 20)
    assert (change.ahead, change.behind, change.removed) == (4, 0, ())
    assert [c.subject for c in change.added] == ["change 5", "change 4", "change 3", "change 2"]
    assert change.added[0].sha == shas[4] and change.added[0].author == "Dev 5"
    assert sum(1 for m, p in github.requests if "/compare/" in p) == 1  # nothing removed: one call


async def test_compare_backward_asks_the_other_way_round_for_the_commits_removed(github, deployer):
    shas = linear(github, 5)
    change = await deployer.compare(shas[4], shas[1], 20)
    assert (change.ahead, change.behind, change.added) == (0, 3, ())
    assert [c.subject for c in change.removed] == ["change 5", "change 4", "change 3"]
    compares = [p for m, p in github.requests if "/compare/" in p]
    assert compares == [f"/repos/acme/shop/compare/{shas[4]}...{shas[1]}",
                        f"/repos/acme/shop/compare/{shas[1]}...{shas[4]}"]


async def test_compare_identical(github, deployer):
    shas = linear(github, 2)
    change = await deployer.compare(shas[1], shas[1], 20)
    assert (change.ahead, change.behind, change.added, change.removed) == (0, 0, (), ())


async def test_compare_of_the_tags_commits_without_a_history_given(github, deployer):
    change = await deployer.compare("sha122", "sha123", 20)  # the fake's history: one commit per tag
    assert change.ahead == 1 and [c.subject for c in change.added] == ["release v1.2.3"]


async def test_compare_respects_the_limit_and_githubs_250_commit_page(github, deployer):
    shas = linear(github, 301)
    change = await deployer.compare(shas[0], shas[300], 3)
    assert change.ahead == 300 and [c.subject for c in change.added] == ["change 301", "change 300", "change 299"]
    back = await deployer.compare(shas[300], shas[0], 2)
    assert back.behind == 300 and [c.subject for c in back.removed] == ["change 301", "change 300"]


async def test_compare_with_an_unknown_commit_is_a_deployer_error(github, deployer):
    shas = linear(github, 2)
    with pytest.raises(DeployerError, match=r"GitHub found no commit .* in acme/shop \(404\)"):
        await deployer.compare(shas[0], "0" * 40, 20)
    with pytest.raises(DeployerError, match="GitHub found no commit"):
        await deployer.compare("0" * 40, shas[0], 20)


async def test_compare_subjects_are_the_first_line_made_safe(github, deployer):
    base = github.commit("base")
    nasty = github.commit("fix \x1b[31mred\x1b[0m\u202eexe\x07\r\nsecond line", author="", login="mallory")
    long = github.commit("y" * 300 + "\nmore")
    change = await deployer.compare(base, long, 20)
    assert [c.sha for c in change.added] == [long, nasty]
    assert change.added[1].subject == "fix [31mred[0mexe" and change.added[1].author == "mallory"
    assert len(change.added[0].subject) == 200 and change.added[0].subject.endswith("\u2026")


async def test_compare_is_retried_like_every_call(github, deployer):
    shas = linear(github, 2)
    github.fail("GET", r"/compare/", 502, {"message": "Bad Gateway"})
    assert (await deployer.compare(shas[0], shas[1], 20)).ahead == 1


async def test_checks_map_every_status_and_check_run_state(github, deployer):
    sha = "sha123"
    for context, state in (("ci/build", "success"), ("ci/lint", "pending"), ("ci/deploy-preview", "failure"),
                           ("ci/legacy", "error")):
        github.set_status(sha, context, state)
    for name, conclusion in (("tests", "success"), ("docs", "neutral"), ("optional", "skipped"),
                             ("e2e", "failure"), ("flaky", "cancelled"), ("slow", "timed_out"),
                             ("review", "action_required"), ("old", "stale")):
        github.add_check_run(sha, name, "completed", conclusion)
    github.add_check_run(sha, "queued-one", "queued", None)
    github.add_check_run(sha, "running", "in_progress", None)
    checks = {c.name: c.state for c in await deployer.checks(sha)}
    assert checks == {
        "ci/build": "success", "ci/lint": "pending", "ci/deploy-preview": "failure", "ci/legacy": "failure",
        "tests": "success", "docs": "success", "optional": "success", "e2e": "failure", "flaky": "failure",
        "slow": "failure", "review": "failure", "old": "failure", "queued-one": "pending", "running": "pending",
    }


async def test_a_pending_check_then_its_result(github, deployer):
    github.add_check_run("sha123", "tests", "in_progress", None)
    assert [(c.name, c.state) for c in await deployer.checks("sha123")] == [("tests", "pending")]
    github.add_check_run("sha123", "tests", "completed", "success")  # the same check, finished
    assert [(c.name, c.state) for c in await deployer.checks("sha123")] == [("tests", "success")]


async def test_checks_follow_pagination(github, deployer):
    for i in range(130):
        github.set_status("sha123", f"status-{i}", "success")
    for i in range(250):
        github.add_check_run("sha123", f"run-{i}", "completed", "success" if i != 249 else "failure")
    checks = await deployer.checks("sha123")
    assert len(checks) == 380 and checks[-1].name == "run-249" and checks[-1].state == "failure"
    assert sum(1 for m, p in github.requests if p.endswith("/status")) == 2
    assert sum(1 for m, p in github.requests if p.endswith("/check-runs")) == 3


async def test_a_commit_without_checks_has_none_and_an_unknown_one_is_an_error(github, deployer):
    assert await deployer.checks("sha122") == []
    with pytest.raises(DeployerError, match="No commit found for SHA"):
        await deployer.checks("0" * 40)


async def test_checks_without_the_permission_say_which_one(github, deployer):
    github.fail("GET", r"/check-runs$", 403, {"message": "Resource not accessible by integration"})
    with pytest.raises(DeployerError, match="checks:read on acme/shop"):
        await deployer.checks("sha123")


@pytest.mark.parametrize("ref", ["v1.2.3", "refs/tags/v1.2.3"])
async def test_a_literal_ref_naming_the_tag_is_checked_against_the_approved_commit_too(github, ref):
    github.moves_at_dispatch = {"v1.2.3": "sha999"}  # moved after the approval, before the run checks out
    d = GitHubDeployer(github.token, github.repository, {"backend": "deploy-backend.yml"},
                       api_url=github.api_url, ref=ref, poll_seconds=0.01)
    try:
        outcome = await d.deploy(REQUEST)
    finally:
        await d.aclose()
    assert github.dispatches[0]["ref"] == ref
    assert not outcome.ok and "was on commit sha999, not the approved sha123" in outcome.output
    assert github.cancels == [1000]


async def test_a_check_reported_as_a_status_and_as_a_check_run_is_named_once(github, deployer):
    github.set_status("sha123", "ci/test", "failure")
    github.add_check_run("sha123", "ci/test", "completed", "failure")
    github.set_status("sha123", "ci/lint", "success")  # the same name, one way green, one way red
    github.add_check_run("sha123", "ci/lint", "completed", "failure")
    github.set_status("sha123", "ci/e2e", "pending")
    github.add_check_run("sha123", "ci/e2e", "completed", "success")
    checks = await deployer.checks("sha123")
    assert [(c.name, c.state) for c in checks] == [
        ("ci/test", "failure"), ("ci/lint", "failure"), ("ci/e2e", "pending"),
    ]
    failing = [c.name for c in checks if c.state == "failure"]
    assert wording.checks_failing("sha123", failing, []).count("ci/test") == 1


async def test_commit_times_come_from_github_and_unknown_commits_are_left_out(github, deployer):
    sha = github.commit("faster sign-in", sha="ab" * 20, date="2026-11-20T10:00:00Z")
    found = await deployer.commit_times([sha, "cd" * 20, "--not-a-sha"])
    assert found == {sha: datetime(2026, 11, 20, 10, tzinfo=UTC)}
