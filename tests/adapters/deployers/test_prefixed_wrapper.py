"""A deployer that sees only the tags under its prefix and hands everything else to the deployer inside."""

from __future__ import annotations

import pytest

from bot.adapters.deployers.prefixed import Prefixed
from bot.runtime.ports import Check, DeployRequest
from bot.testing.memory import MemoryDeployer

TAGS = {"web/v1.2.0": "c" * 40, "api/v2.0.0": "b" * 40, "web/v1.1.0": "a" * 40, "v0.9.0": "9" * 40}


async def test_everything_else_is_the_inner_deployers():
    inner = MemoryDeployer(TAGS, resumable=True)
    inner.ci["c" * 40] = [Check("tests", "pending")]
    web = Prefixed(inner, "web/")
    assert web.resumable and not Prefixed(MemoryDeployer(TAGS), "web/").resumable
    request = DeployRequest("t-s", "web", "web/v1.2.0", "production", "c" * 40)
    assert (await web.deploy(request)).ok and inner.deploys == [request]
    change = await web.compare("a" * 40, "c" * 40, 20)
    assert change.ahead == 2 and [c.sha for c in change.added] == ["c" * 40, "b" * 40]
    assert await web.checks("c" * 40) == [Check("tests", "pending")]
    assert await web.checks("a" * 40) is None
    await web.aclose()  # the inner deployer has no aclose: nothing to do


async def test_aclose_closes_the_inner_deployer():
    class Closable(MemoryDeployer):
        closed = False

        async def aclose(self) -> None:
            self.closed = True

    inner = Closable(TAGS)
    await Prefixed(inner, "web/").aclose()
    assert inner.closed


def test_an_empty_prefix_is_refused():
    with pytest.raises(ValueError, match="prefix"):
        Prefixed(MemoryDeployer(TAGS), "")
