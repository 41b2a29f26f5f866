"""A service's share of a shared repository: only the tags with its prefix."""

from __future__ import annotations

import pytest

from bot.adapters.deployers.command import CommandDeployer
from bot.adapters.deployers.prefixed import Prefixed
from bot.testing.cluster import make_repo

pytestmark = [pytest.mark.processes, pytest.mark.network]


async def test_only_the_prefixed_tags_are_listed_and_resolved_in_a_real_repository(tmp_path):
    repo = make_repo(tmp_path / "repo", ["web/v1.1.0", "api/v2.0.0", "web/v1.2.0", "webhooks/v1"])
    web = Prefixed(CommandDeployer(repo), "web/")
    assert [t.name for t in await web.list_tags()] == ["web/v1.2.0", "web/v1.1.0"]  # newest first, as inner
    assert await web.resolve("web/v1.1.0") == await CommandDeployer(repo).resolve("web/v1.1.0")
    assert await web.resolve("api/v2.0.0") is None  # another service's tag
    assert await web.resolve("v1.1.0") is None  # not normalized here: the caller does that
    assert await web.resolve("webhooks/v1") is None
