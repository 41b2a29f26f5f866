"""What the doc examples run against: a fresh store on the test session's Redis server, a git
repository holding the tag the docs use, the default (dry-run) deploy command, no model."""

from __future__ import annotations

import shlex
import subprocess
from pathlib import Path

import pytest

from bot.testing.cluster import clean_env, make_repo
from tests.docs.markdown import README, blocks

# Settings a developer's shell may hold that would change what the bot prints.
UNSET = ("DEPLOY_COMMAND", "GIT_REPO", "API_TOKEN", "DEPLOYBOT_CONFIG", "APPROVERS", "APPROVER_EMAILS",
         "ENVIRONMENTS", "PROTECTED_ENVIRONMENTS", "DEPLOYER", "GITHUB_TOKEN", "PUBLIC_URL")


@pytest.fixture
def app_repo(tmp_path: Path) -> Path:
    """The checkout the docs run in, with one commit, after the README's own setup step
    (its ```sh block `git tag v0.1.0`) ran in it."""
    repo = make_repo(tmp_path / "app", ["v0.0.1"])
    [setup] = [b for b in blocks(README, "sh") if b.body.startswith("git tag ")]
    for line in setup.body.splitlines():
        subprocess.run(shlex.split(line), cwd=repo, check=True, capture_output=True)
    return repo


@pytest.fixture
def doc_env(tmp_path: Path, redis_url: str, redis) -> dict[str, str]:
    env = {k: v for k, v in clean_env().items() if k not in UNSET}
    return {**env, "DATA_DIR": str(tmp_path / "data"), "REDIS_URL": redis_url}
