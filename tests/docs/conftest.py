"""What the doc examples run against: a fresh store on the test session's Redis server, a git
repository holding the tag the docs use, the default (dry-run) deploy command, no model."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.testing.cluster import clean_env, make_repo

# Settings a developer's shell may hold that would change what the bot prints.
UNSET = ("DEPLOY_COMMAND", "GIT_REPO", "API_TOKEN", "DEPLOYBOT_CONFIG", "APPROVERS", "APPROVER_EMAILS",
         "ENVIRONMENTS", "PROTECTED_ENVIRONMENTS", "DEPLOYER", "GITHUB_TOKEN", "PUBLIC_URL")


@pytest.fixture
def app_repo(tmp_path: Path) -> Path:
    """The checkout the docs run in: `git tag v0.1.0` done, as "Try it" says."""
    return make_repo(tmp_path / "app", ["v0.1.0"])


@pytest.fixture
def doc_env(tmp_path: Path, redis_url: str, redis) -> dict[str, str]:
    env = {k: v for k, v in clean_env().items() if k not in UNSET}
    return {**env, "DATA_DIR": str(tmp_path / "data"), "REDIS_URL": redis_url}
