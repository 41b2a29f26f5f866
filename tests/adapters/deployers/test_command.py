"""The command deployer against a real git repository and real child processes."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import threading
import time
import warnings
from pathlib import Path

import pytest

from bot.adapters.deployers import git_refs
from bot.adapters.deployers.command import BASE_ENV, CommandDeployer
from bot.adapters.deployers.output import LONGEST_LINE
from bot.runtime.ports import DeployerError, DeployRequest
from bot.runtime.ports.output import LINE_CHARS, LIVE_LINES
from bot.testing.cluster import make_repo
from bot.testing.memory import MemoryLiveOutput
from bot.wiring.children import watch_children_without_threads

pytestmark = [pytest.mark.redis, pytest.mark.processes, pytest.mark.network]

REQUEST = DeployRequest("thread-step", "backend", "v1.2.3", "production", "abc123")


def git(repo: Path, *args: str, **env: str) -> str:
    """Run git in `repo` (blocking: async tests call it through asyncio.to_thread); its output."""
    done = subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True,
                          env={**os.environ, **env})
    return done.stdout.strip()


async def test_tags_newest_first_with_their_commits(git_repo):
    committer = {"GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@x", "GIT_COMMITTER_DATE": "2026-11-10T00:00:00Z"}
    await asyncio.to_thread(git, git_repo, "tag", "-a", "v1.3.0", "-m", "annotated", **committer)
    deployer = CommandDeployer(git_repo)
    tags = await deployer.list_tags()
    assert [t.name for t in tags] == ["v1.3.0", "v1.2.3", "v1.2.2", "v1.2.1"]
    head = await asyncio.to_thread(git, git_repo, "rev-parse", "HEAD")
    assert tags[0].commit == head == tags[1].commit  # the annotated tag is peeled to its commit
    assert await deployer.resolve("v1.3.0") == head
    assert await deployer.resolve("v9.9.9") is None


async def test_tags_made_in_one_second_come_in_version_order(tmp_path):
    """A release script tags several in one second: git alone lists them by name (v1.10.0
    below v1.9.0, and "the latest" would be v1.9.0); newest first breaks the tie by version."""
    repo = make_repo(tmp_path / "repo", ["v1.8.0"])
    same_second = {"GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@x",
                   "GIT_COMMITTER_DATE": "2026-11-20T09:00:00Z"}
    for name in ("v1.9.0", "v1.10.0", "v1.9.1"):
        await asyncio.to_thread(git, repo, "tag", "-a", name, "-m", name, **same_second)
    assert [t.name for t in await CommandDeployer(repo).list_tags()] == ["v1.10.0", "v1.9.1", "v1.9.0", "v1.8.0"]


async def test_tags_are_listed_again_only_when_a_tag_changed(git_repo, monkeypatch):
    """Issue 29: git runs once per change of the tags, not per run. RACY 0: the signature of a
    repository made a moment ago is trusted (else it is listed every time until it is 2 s old)."""
    monkeypatch.setattr(git_refs, "RACY", 0.0)
    deployer = CommandDeployer(git_repo)
    names = [t.name for t in await deployer.list_tags()]
    assert [t.name for t in await deployer.list_tags()] == names and deployer.versions.listed == 1

    async def after(*args: str) -> list[str]:
        await asyncio.to_thread(git, git_repo, *args)
        return [t.name for t in await deployer.list_tags()]

    assert "v2.0.0" in await after("tag", "v2.0.0")  # a loose tag: refs/tags changed
    assert "release/v3" in await after("tag", "release/v3")  # in a directory of its own
    assert "release/v4" in await after("tag", "release/v4")  # only refs/tags/release changed
    await after("pack-refs", "--all")
    assert "v2.0.0" not in await after("tag", "-d", "v2.0.0")  # deleted from packed-refs
    listed = deployer.versions.listed
    assert "release/v4" in [t.name for t in await deployer.list_tags()]
    assert deployer.versions.listed == listed  # nothing changed: not listed again


def test_a_signature_younger_than_the_clock_tick_is_not_trusted(git_repo):
    common = git_repo / ".git"
    assert git_refs.signature(common) is None  # just made: a change in the same tick could hide
    old = time.time() - 10
    for path in (common / "refs" / "tags", common / "packed-refs"):
        if path.exists():
            os.utime(path, (old, old))
    assert git_refs.signature(common) is not None


async def test_not_a_repository_is_a_deployer_error(tmp_path):
    with pytest.raises(DeployerError, match="git rev-parse failed"):
        await CommandDeployer(tmp_path).list_tags()


async def test_deploy_runs_argv_without_a_shell_and_passes_the_deploy_identity(tmp_path):
    script = "import os,sys; print(sys.argv[1:]); print(os.environ['DEPLOY_ID'], os.environ['DEPLOY_COMMIT'])"
    command = f"{sys.executable} -c \"{script}\" {{service}} '{{tag}};echo pwned' {{environment}}"
    deployer = CommandDeployer(tmp_path, command)
    outcome = await deployer.deploy(REQUEST)
    assert outcome.ok and outcome.exit_code == 0
    assert outcome.output.splitlines() == ["['backend', 'v1.2.3;echo pwned', 'production']", "thread-step abc123"]


async def test_a_failing_deploy_is_an_outcome_with_the_last_lines(tmp_path):
    script = "import sys; [print('line', i) for i in range(50)]; sys.exit(3)"
    outcome = await CommandDeployer(tmp_path, f"{sys.executable} -c \"{script}\"").deploy(REQUEST)
    assert not outcome.ok and outcome.exit_code == 3
    lines = outcome.output.splitlines()
    assert len(lines) == 20 and lines[-1] == "line 49"


async def test_output_is_read_as_it_comes_bounded_and_passed_on_in_batches(tmp_path):
    """100,000 lines and a 5 MB line without an end: the result keeps the newest 20 lines, the
    live output its newest 200, each cut, in a handful of batches, not one per line."""
    script = tmp_path / "chatty.py"
    script.write_text("import sys\nfor i in range(100_000): print('line', i)\nsys.stdout.write('x' * 5_000_000)\n")
    live = MemoryLiveOutput()
    appends = 0
    original = live.append

    async def counted(deploy_id, lines):
        nonlocal appends
        appends += 1
        await original(deploy_id, lines)

    live.append = counted  # type: ignore[method-assign]
    outcome = await CommandDeployer(tmp_path, f"{sys.executable} {script}", live=live).deploy(REQUEST)
    assert outcome.ok
    lines = outcome.output.splitlines()
    assert len(lines) == 20 and lines[-2] == "line 99999" and len(lines[-1]) <= LONGEST_LINE
    tail = await live.tail(REQUEST.deploy_id)
    assert len(tail) == LIVE_LINES and all(len(line) <= LINE_CHARS for line in tail) and "line 99999" in tail
    assert appends < 1_000, appends


async def test_a_live_output_that_fails_fails_no_deploy(tmp_path):
    class Broken:
        async def append(self, deploy_id, lines):
            raise ConnectionError("redis is down")

    outcome = await CommandDeployer(tmp_path, f"{sys.executable} -c \"print('hi')\"", live=Broken()).deploy(REQUEST)
    assert outcome.ok and outcome.output == "hi"


async def test_missing_command_and_timeout(tmp_path):
    with pytest.raises(DeployerError, match="could not start"):
        await CommandDeployer(tmp_path, "/no/such/deploy-script").deploy(REQUEST)
    slow = CommandDeployer(tmp_path, f"{sys.executable} -c \"import time; time.sleep(30)\"", timeout=0.3)
    outcome = await slow.deploy(REQUEST)
    assert not outcome.ok and "timed out" in outcome.output


async def test_a_timeout_kills_the_whole_deploy_command_its_children_too(tmp_path):
    """A deploy script that forks (a shell running kubectl, say): on timeout nothing of it goes
    on deploying after "failed" is reported and the lock is let go."""
    late = tmp_path / "still-deploying"
    child = tmp_path / "child.py"
    child.write_text(f"import time\ntime.sleep(1.5)\nopen({str(late)!r}, 'w').close()\n")
    script = tmp_path / "forks.py"
    script.write_text(f"import subprocess, sys, time\nsubprocess.Popen([sys.executable, {str(child)!r}])\n"
                      "time.sleep(30)\n")
    outcome = await CommandDeployer(tmp_path, f"{sys.executable} {script}", timeout=0.5).deploy(REQUEST)
    assert not outcome.ok and "timed out" in outcome.output
    await asyncio.sleep(2.5)
    assert not late.exists(), "a child of the deploy command went on after the timeout"


async def test_a_relative_command_not_in_the_repository_says_where_it_was_looked_for(tmp_path):
    repo = tmp_path / "api"
    repo.mkdir()
    with pytest.raises(DeployerError) as raised:
        await CommandDeployer(repo, "./deploy.sh {service} {tag} {environment} {commit}").deploy(REQUEST)
    said = str(raised.value)
    assert f"'./deploy.sh' in {repo}" in said and "runs in the service's repository" in said


async def test_the_deploy_command_gets_an_allow_listed_environment_not_the_bots(tmp_path, monkeypatch):
    bots = {"REDIS_URL": "redis://:hunter2-redis-pass@cache.internal:6379/0", "SLACK_BOT_TOKEN": "xoxb-1-secret",
            "FOO": "bar", "DEPLOY_COMMAND": "deploy.sh", "PYTHONPATH": "/srv/bot"}
    for name, value in {**bots, "APP_REGION": "eu-west-1", "LC_TIME": "C", "DEPLOY_ID": "forged"}.items():
        monkeypatch.setenv(name, value)
    script = "import json,os; print(json.dumps(dict(os.environ)))"
    deployer = CommandDeployer(tmp_path, f"{sys.executable} -c \"{script}\"", passthrough=("APP_REGION", "DEPLOY_ID"))
    outcome = await deployer.deploy(REQUEST)
    seen = json.loads(outcome.output)
    assert not set(bots) & set(seen) and "hunter2-redis-pass" not in outcome.output
    assert set(seen) - set(BASE_ENV) == {"APP_REGION", "LC_TIME", "DEPLOY_ID", "DEPLOY_SERVICE", "DEPLOY_TAG",
                                         "DEPLOY_ENVIRONMENT", "DEPLOY_COMMIT"}
    assert seen["APP_REGION"] == "eu-west-1" and seen["PATH"] == os.environ["PATH"]
    assert seen["DEPLOY_ID"] == "thread-step"  # a passthrough never replaces what identifies the deploy


async def test_the_default_dry_run_needs_nothing_from_the_bots_environment(tmp_path):
    outcome = await CommandDeployer(tmp_path).deploy(REQUEST)
    assert outcome.ok and outcome.output.splitlines()[0] == (
        "dry run: deploying backend v1.2.3 to production (deploy id thread-step)"
    )


# --- compare and checks: a change preview from the local repository ---------------------

AUTHOR = {"GIT_AUTHOR_NAME": "Ada Lovelace", "GIT_AUTHOR_EMAIL": "ada@example.com",
          "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com"}


def commit(repo: Path, message: str | bytes, tag: str | None = None) -> str:
    """An empty commit with exactly `message` (no cleanup: control characters stay); its sha."""
    (repo.parent / "message").write_bytes(message if isinstance(message, bytes) else message.encode())
    git(repo, "commit", "-q", "--allow-empty", "--cleanup=verbatim", "-F", str(repo.parent / "message"), **AUTHOR)
    if tag:
        git(repo, "tag", tag)
    return git(repo, "rev-parse", "HEAD")


@pytest.fixture
def history(tmp_path) -> tuple[Path, list[str]]:
    """A repository with five commits, "change 1" (oldest) to "change 5"."""
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    return repo, [commit(repo, f"change {i}\n\nbody {i}") for i in range(1, 6)]


async def test_compare_forward_lists_the_commits_added_newest_first(history):
    repo, shas = history
    change = await CommandDeployer(repo).compare(shas[0], shas[4], 20)
    assert (change.ahead, change.behind, change.removed) == (4, 0, ())
    assert [c.subject for c in change.added] == ["change 5", "change 4", "change 3", "change 2"]
    assert [c.sha for c in change.added] == shas[:0:-1] and {c.author for c in change.added} == {"Ada Lovelace"}


async def test_compare_backward_is_a_rollback_that_goes_back_n_commits(history):
    repo, shas = history
    change = await CommandDeployer(repo).compare(shas[4], shas[1], 20)
    assert (change.ahead, change.behind, change.added) == (0, 3, ())
    assert [c.subject for c in change.removed] == ["change 5", "change 4", "change 3"]


async def test_compare_identical_and_by_tag_name(history):
    repo, shas = history
    await asyncio.to_thread(git, repo, "tag", "v1", shas[2])
    deployer = CommandDeployer(repo)
    assert await deployer.compare(shas[2], shas[2], 20) == await deployer.compare("v1", shas[2], 20)
    change = await deployer.compare(shas[2], shas[2], 20)
    assert (change.ahead, change.behind, change.added, change.removed) == (0, 0, (), ())


async def test_compare_respects_the_limit_but_counts_everything(history):
    repo, shas = history
    deployer = CommandDeployer(repo)
    change = await deployer.compare(shas[0], shas[4], 2)
    assert change.ahead == 4 and [c.subject for c in change.added] == ["change 5", "change 4"]
    back = await deployer.compare(shas[4], shas[0], 1)
    assert back.behind == 4 and [c.subject for c in back.removed] == ["change 5"]
    nothing = await deployer.compare(shas[0], shas[4], 0)
    assert nothing.ahead == 4 and nothing.added == ()


async def test_compare_diverged_histories_count_both_ways(history):
    repo, shas = history
    await asyncio.to_thread(git, repo, "checkout", "-q", "-b", "hotfix", shas[2])
    hotfix = await asyncio.to_thread(commit, repo, "hotfix")
    change = await CommandDeployer(repo).compare(shas[4], hotfix, 20)
    assert (change.ahead, change.behind) == (1, 2)
    assert [c.subject for c in change.added] == ["hotfix"]
    assert [c.subject for c in change.removed] == ["change 5", "change 4"]


@pytest.mark.parametrize("unknown", ["0" * 40, "v9.9.9", "--output=/tmp/deploybot-pwned", "main..HEAD"])
async def test_compare_with_an_unknown_commit_is_a_deployer_error(history, unknown):
    repo, shas = history
    deployer = CommandDeployer(repo)
    with pytest.raises(DeployerError, match="no commit .* in the repository"):
        await deployer.compare(shas[0], unknown, 20)
    with pytest.raises(DeployerError, match="no commit"):
        await deployer.compare(unknown, shas[0], 20)
    assert not await asyncio.to_thread(Path("/tmp/deploybot-pwned").exists)


async def test_compare_outside_a_repository_is_a_deployer_error(tmp_path):
    with pytest.raises(DeployerError, match="no commit"):
        await CommandDeployer(tmp_path).compare("HEAD", "HEAD", 20)


async def test_subjects_are_safe_to_show(history):
    repo, shas = history
    nasty = await asyncio.to_thread(
        commit, repo, "fix \x1b[31mred\x1b[0m\tthing\u202egnp.exe\x07 \r\x7f\x85\n\nsecond line"
    )
    long = await asyncio.to_thread(commit, repo, "x" * 500)
    latin1 = await asyncio.to_thread(commit, repo, b"caf\xe9 au lait")  # not UTF-8: must not break the log
    change = await CommandDeployer(repo).compare(shas[4], latin1, 20)
    subjects = {c.sha: c.subject for c in change.added}
    assert subjects[nasty] == "fix [31mred[0m thinggnp.exe"
    assert len(subjects[long]) == 200 and subjects[long].endswith("\u2026")
    assert subjects[latin1] in ("caf\u00e9 au lait", "caf\ufffd au lait")  # git may fix it up as Latin-1


async def test_a_local_repository_has_no_checks(history):
    repo, shas = history
    assert await CommandDeployer(repo).checks(shas[0]) is None


@pytest.fixture
def pidfd_children():
    """The watcher `python -m bot` installs (bot/wiring/children.py), put back afterwards."""
    if sys.version_info >= (3, 12):
        pytest.skip("Python 3.12+ watches children by pidfd on its own")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        before = asyncio.get_child_watcher()
        if not watch_children_without_threads():
            pytest.skip("this kernel has no pidfd_open")
        yield
        asyncio.set_child_watcher(before)


async def test_a_deploy_command_is_watched_without_a_thread(tmp_path, pidfd_children):
    """Issue 29: the default watcher of Python 3.11 starts a thread ("waitpid-N") per child."""
    started, go = tmp_path / "started", tmp_path / "go"
    script = (f"import os,time; open({str(started)!r}, 'w').close()\n"
              f"while not os.path.exists({str(go)!r}): time.sleep(0.01)\nprint('done')")
    deployer = CommandDeployer(tmp_path, f"{sys.executable} -c \"{script}\"")
    running = asyncio.create_task(deployer.deploy(REQUEST))
    for _ in range(3000):  # up to 30 s for the child to start
        if started.exists():
            break
        await asyncio.sleep(0.01)
    assert started.exists()
    assert not [t.name for t in threading.enumerate() if t.name.startswith("waitpid")]
    go.touch()
    outcome = await running
    assert outcome.ok and outcome.output == "done"
