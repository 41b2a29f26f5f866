"""What a GitHub delivery says happened, and the threads [[triggers]] start from it (pure)."""

from __future__ import annotations

from bot.core.triggers import Happened, NotifyTarget, Start, Trigger, happened, starts, target_problem, targets
from bot.wiring.channels import notify_targets

REPO = {"full_name": "acme/shop", "default_branch": "main"}
OCTOCAT = {"login": "octocat"}


def run(conclusion: str = "success", branch: str = "main") -> dict:
    return {"action": "completed", "sender": OCTOCAT, "repository": REPO,
            "workflow_run": {"name": "CI", "conclusion": conclusion, "head_branch": branch, "head_sha": "abc1234def"}}


def test_a_published_release_a_new_tag_and_a_green_run_on_the_default_branch():
    release = {"action": "published", "release": {"tag_name": "v1.4.0", "draft": False}, "sender": OCTOCAT}
    assert happened("release", release) == Happened("release", "v1.4.0", "octocat",
                                                    "release v1.4.0 published by octocat")
    push = {"ref": "refs/tags/v1.4.0", "created": True, "deleted": False, "sender": OCTOCAT}
    assert happened("push", push) == Happened("tag", "v1.4.0", "octocat", "tag v1.4.0 pushed by octocat")
    assert happened("workflow_run", run()) == Happened(
        "workflow_run", "abc1234def", "octocat", "CI succeeded on main at abc1234, run by octocat")


def test_everything_else_is_nothing():
    for event, payload in (
        ("release", {"action": "created", "release": {"tag_name": "v1"}, "sender": OCTOCAT}),
        ("release", {"action": "published", "release": {"tag_name": "v1", "draft": True}}),
        ("release", {"action": "published", "release": {}}),
        ("push", {"ref": "refs/heads/main", "created": True}),
        ("push", {"ref": "refs/tags/v1", "created": False}),  # a moved tag
        ("push", {"ref": "refs/tags/v1", "created": False, "deleted": True}),
        ("workflow_run", run(conclusion="failure")),
        ("workflow_run", run(branch="feature")),
        ("workflow_run", {**run(), "action": "requested"}),
        ("issues", {"action": "opened"}),
        ("push", {"ref": 42}),
        ("workflow_run", {"action": "completed", "workflow_run": "nope"}),
    ):
        assert happened(event, payload) is None, (event, payload)


def test_each_matching_trigger_starts_a_thread_posted_where_it_says():
    triggers = (
        Trigger("release", "api", "staging", ("slack:C0123DEPLOY",)),
        Trigger("tag", "api", "development", ("slack:C0123DEPLOY",)),
        Trigger("release", "web", "production", ("email:team@example.com",)),
    )
    what = Happened("release", "v1.4.0", "octocat", "release v1.4.0 published by octocat")
    assert starts(what, triggers) == [
        Start("deploy api v1.4.0 to staging (release v1.4.0 published by octocat)", "octocat",
              ("slack:C0123DEPLOY",)),
        Start("deploy web v1.4.0 to production (release v1.4.0 published by octocat)", "octocat",
              ("email:team@example.com",)),
    ]
    assert starts(Happened("workflow_run", "abc", "x", "n"), triggers) == []


def test_a_channels_notify_targets_are_read_by_its_kind_whichever_kind():
    """`kind:value`, read without naming any channel: a new kind's targets are found alike."""
    notify = ("slack:C0123DEPLOY", "email:team@example.com", "chat:room-1", "slack:C0456OPS")
    assert targets(notify, "slack") == ["C0123DEPLOY", "C0456OPS"]
    assert targets(notify, "email") == ["team@example.com"]
    assert targets(notify, "chat") == ["room-1"]
    assert targets(notify, "teams") == []
    assert targets(("email:a:b@example.com",), "email") == ["a:b@example.com"]  # the kind ends at the first ':'


def test_notify_targets():
    kinds = notify_targets()  # the registered channels' own checks
    assert target_problem("slack:C0123DEPLOY", kinds) is None and target_problem("email:a@b.example", kinds) is None
    assert "Slack channel id" in target_problem("slack:#deploys", kinds)
    assert "not an email address" in target_problem("email:team", kinds)
    assert "'slack:CHANNEL_ID' or 'email:ADDRESS'" in target_problem("C0123DEPLOY", kinds)
    assert target_problem("chat:room-1", {"chat": NotifyTarget("ROOM", lambda room: None)}) is None  # any kind
