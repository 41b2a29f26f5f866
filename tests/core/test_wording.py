"""bot/core/wording/: every sentence people read, a module per feature behind one face
(`from bot.core import wording; wording.X(...)`). Most sentences are pinned by the tests of the
module that says them; these cover the package as a whole and the sentences nothing else pins."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from datetime import UTC, datetime, timedelta
from pathlib import Path

from bot.core import wording
from bot.core.events import Change, CommitSummary, GitTag

AT = datetime(2026, 3, 4, 5, 6, 7, tzinfo=UTC)

# One sample per parameter name used in bot/core/wording/; a new name needs a sample here.
SAMPLES = {
    "ending": "deployed",
    "named": "Idempotency-Key",  # how a key was given
    "longest": 200,
    "to_tag": "v1.0.3",
    "back_to": "v1.0.2",
    "gave_feedback": False,
    "model": False,
    "comment": "Approved in deploybot by alice, bob.",  # the GitHub gate's
    "state": "approved",
    "conclusion": "cancelled",  # a workflow run's
    "kind": "promotion",  # a deploy rule refusal's
    "link": "https://deploybot.example.com/console/threads/t1",
    "feedback": "not during the sale",
    "public_url": "https://deploybot.example.com",
    "repository": "acme/app",
    "approvers": "bob or carol",
    "confirmed": False,
    "address": "alice@example.com",
    "where": "production",
    "names": ["alice", "bob", "carol"],
    "shapes": ["slack:CHANNEL_ID", "email:ADDRESS"],  # notify targets'
    "holder": "bob",
    "lockers": "the sre group",
    "by": "by alex since 2026-01-01 10:00 UTC: release freeze",
    "who": "alex",
    "who_can": "sam or the sre group",
    "since": datetime(2026, 1, 1, 10, 0, tzinfo=UTC),
    "max_steps": 20,
    "count": 3,
    "constant": "NaN",  # a JSON body's
    "last": "tag v9 does not exist.",
    "examples": ["list tags", "lock staging"],
    "what": "backend v1.2.3 to staging",
    "deploy_id": "t1-s1",
    "said": "Deployed backend v1.2.3 to staging.",
    "user": "alex",
    "text": "not on a Friday",
    "environment": "staging",
    "expires_at": AT,
    "at": AT,
    "service": "backend",
    "tag": "v1.2.3",
    "commit": "abc1234def",
    "approved_commit": "0123456789",
    "known": {"staging", "production"},
    "newest": ["v1.2.3", "v1.2.2"],
    "tags": [GitTag(name="v1.2.3", commit="abc1234def")],
    "error": RuntimeError("connection refused"),
    "why": "the approval expired at 2026-03-04 05:06 UTC",
    "url": "https://example.com/runs/1",
    "setting": "REDIS_URL",
    "folder": "/srv/app/.deploybot",
    "store": "the store at redis://cache:6379/0 (REDIS_URL)",
    "exit_code": 2,
    "output": "boom",
    "message": "the deployer is down",
    "holder_description": "staging is locked by alex since 2026-03-04 05:06 UTC: freeze",
    "reason": "freeze",
    "locked_by": "by alex since 2026-03-04 05:06 UTC: freeze",
    "approved_by": "sam",
    "lines": ["backend v1.2.3 (abc1234), deployed 2026-03-04 05:06 UTC"],
    "thread_id": "t1",
    "statuses": ("running", "done"),
    "version": 3,
    "approval_id": "a1",
    "sender": "octocat",
    "name": "CI",
    "branch": "main",
    "sha": "abc1234def",
    "ref": "v1.4.0",
    "asker": "claude-code (agent of alex)",
    "owner": "alex",
    "allowed": ["staging"],
    "open_now": 5,
    "limit": 5,
    "made": 20,
    "services": ["backend", "frontend"],
    "tool": "get_thread",
    "agent": "claude-code",
    "note": "release v1.4.0 published by octocat",
    "source": "github",
    "command": "/deploy",
    "attempts": 6,
    "skew": 300.2,  # a clock's offset from Redis's, seconds
    "bound": 2.0,
    "status": "waiting_for_approval",
    "approved": True,
    "from_tag": "v1.2.2",
    "from_commit": "0a1b2c3d4e",
    "to_commit": "abc1234def",
    "ahead": 3,
    "behind": 0,
    "change_ahead": 0,
    "change_behind": 7,
    "n": 5,
    "current": "v1.2.4",
    "person": "alex",
    "failing": ["ci/test", "lint"],
    "pending": ["e2e"],
    "environments": ["staging", "production"],
    "target": "api in production",
    "given": ["bob"],
    "until": AT,
    "scope": "*",
    "required": 2,
    "position": 2,
    "deciders": "bob or carol",
    "rolled_back": "v1.2.3",
    "to": "the sre group",
    "file_name": "deploybot.toml",
    "file_names_them": True,
    # promotion in order
    "delta": timedelta(hours=2, minutes=5),
    "previous": "staging",
    "missing": "soaking",
    "soak": timedelta(minutes=30),
    "now": AT,
    "last_good": ("v1.2.2", AT - timedelta(hours=2)),
    "unknown": ["qa", "prod"],
    "seconds": 5400.0,
    "minutes": 10,
    "rate": 0.71,
    "fraction": 0.25,
    "check": "app_error_ratio",
    "value": "0.25",
    "site": "http://prometheus:9090",
    "result_type": "matrix",
    "expected": 200,
    "contains": "ok",
    "ends_at": AT,
    "checks": 2,
    "ok": None,
    "early_by": "bob",
    "change": Change(
        from_tag="v1.2.2", from_commit="0a1b2c3d4e", to_commit="abc1234def", ahead=2,
        commits=[CommitSummary(sha="abc1234def", subject="Fix login", author="alex"),
                 CommitSummary(sha="bbb1234def", subject="Add cache", author="sam")],
    ),
}


def public_functions():
    """Every sentence: the public functions of every module of the package."""
    found = []
    for info in pkgutil.iter_modules(wording.__path__, f"{wording.__name__}."):
        module = importlib.import_module(info.name)
        found += [(name, f) for name, f in inspect.getmembers(module, inspect.isfunction)
                  if not name.startswith("_") and f.__module__ == module.__name__]
    return found


def test_every_sentence_is_on_the_one_face():
    """Callers say `wording.X(...)` whichever module X is in: the face re-exports each one, and
    no two modules name a sentence alike (the face would say only one of them)."""
    functions = public_functions()
    assert len(functions) > 200
    names = [name for name, _ in functions]
    assert sorted({n for n in names if names.count(n) > 1}) == []
    for name, f in functions:
        assert getattr(wording, name, None) is f, f"{f.__module__}: add {name} to its __all__"
    own = [n for n, f in inspect.getmembers(wording, inspect.isfunction) if f.__module__ == wording.__name__]
    assert own == [], "a sentence lives in the module of its feature, not in the face"


def test_every_wording_module_is_short():
    for path in sorted(Path(wording.__file__).parent.glob("*.py")):
        assert len(path.read_text().splitlines()) < 300, f"{path.name}: split it by feature"


def test_every_message_is_a_non_empty_sentence_without_stray_whitespace():
    functions = public_functions()
    assert len(functions) > 40
    for name, f in functions:
        params = inspect.signature(f).parameters
        missing = set(params) - set(SAMPLES)
        assert not missing, f"wording.{name}: add a sample for {sorted(missing)} to SAMPLES"
        said = f(**{p: SAMPLES[p] for p in params})
        for text in said if isinstance(said, list) else [said]:  # a list: one line each
            assert isinstance(text, str) and text, name
            assert text == text.strip() and "\n" not in text, (name, text)
            assert "{" not in text.replace("{who}", ""), (name, text)  # no unfilled placeholder


def test_a_change_preview_says_how_far_and_which_commits():
    change = SAMPLES["change"]
    assert wording.change_lines(change) == [
        "from v1.2.2 (0a1b2c3) to abc1234: 2 commits ahead", "commits added:",
        "abc1234 Fix login (alex)", "bbb1234 Add cache (sam)",
    ]
    back = change.model_copy(update={"ahead": 0, "behind": 7})
    assert wording.change_lines(back)[:2] == [
        "from v1.2.2 (0a1b2c3) to abc1234: goes back 7 commits", "commits removed:"]
    assert wording.change_lines(back)[-1] == "… and 5 commits more"
    assert wording.change_lines(Change(to_commit="abc1234def")) == [
        "nothing deployed there yet; abc1234 would be the first"]
    assert wording.change_lines(Change(to_commit="abc", unknown="git failed")) == [
        "what it changes is unknown: git failed"]


def test_an_interrupted_deploy_is_reported_and_the_bot_asks_a_human():
    what = wording.what_to_deploy("backend", "v1.2.3", "production")
    assert wording.interrupted_deploy(what, "t1-s2") == (
        "the deploy of backend v1.2.3 to production (deploy id t1-s2) was interrupted before its "
        "result was recorded; its outcome is unknown, so it was not run again"
    )
    assert wording.interrupted_ask(what, "t1-s2") == (
        "I was interrupted while deploying backend v1.2.3 to production (deploy id t1-s2) and do "
        "not know whether it finished. Please check, then tell me whether to try again."
    )


def test_a_failed_deploy_names_its_exit_code_only_when_there_is_one():
    what = wording.what_to_deploy("frontend", "v2.0.1", "staging")
    assert wording.deploy_failed(what, 3) == "Deploying frontend v2.0.1 to staging failed (exit code 3)."
    assert wording.deploy_failed(what, None) == "Deploying frontend v2.0.1 to staging failed."
    assert wording.deploy_failed(what, 0) == "Deploying frontend v2.0.1 to staging failed (exit code 0)."
    assert wording.deploy_failed_saying(what, None, "no space left") == (
        "Deploying frontend v2.0.1 to staging failed: no space left"
    )


def test_refusals_a_decision_can_meet():
    assert wording.already_decided(False, "sam", AT) == "already rejected by sam at 2026-03-04 05:06:07 UTC"
    assert wording.no_longer_pending("a7") == "approval a7 is no longer pending"
    assert wording.requester_cannot_approve("alex") == "alex asked for this deploy and cannot also approve it"


def test_a_cancellation_leaves_who_to_the_channel():
    assert wording.cancelled_by_who("") == "Cancelled by {who}."
    assert wording.cancelled_by_who("wrong tag") == "Cancelled by {who}: wrong tag"


def test_a_missing_tag_lists_the_newest_or_says_none():
    assert wording.no_such_tag("v9", ["v3", "v2"]) == "tag 'v9' does not exist; newest tags: v3, v2"
    assert wording.no_such_tag("v9", []) == "tag 'v9' does not exist; newest tags: none"


def test_a_placeholder_written_by_a_person_stays_text():
    from bot.core.events import Cancelled
    from bot.core.notices import notice
    from bot.core.thread import Thread

    said = notice(Thread("t"), Cancelled(user="U1", reason="ping {who} now"))
    assert said is not None
    assert said.render(lambda u: f"<@{u}>") == "Cancelled by <@U1>: ping {who} now"


def test_a_placeholder_in_a_message_nobody_is_named_in_stays_as_written():
    from bot.core.events import DoneForNow
    from bot.core.notices import notice
    from bot.core.thread import Thread

    said = notice(Thread("t"), DoneForNow(message="Use the {who} placeholder?"))
    assert said is not None and said.render(lambda u: f"<@{u}>") == "Use the {who} placeholder?"


def test_every_mrkdwn_text_object_is_verbatim():
    from bot.adapters.channels.slack import blocks as slack_blocks

    assert slack_blocks.mrkdwn("@here see https://example.com")["verbatim"] is True
