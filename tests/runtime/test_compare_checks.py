"""The in-memory deployer's model of a repository for change previews: one linear history."""

from __future__ import annotations

import pytest

from bot.core.events import CommitSummary
from bot.runtime.ports import Check, DeployerError
from bot.testing.memory import MemoryDeployer

TAGS = {"v1.2.3": "c" * 40, "v1.2.2": "b" * 40, "v1.2.1": "a" * 40}  # newest first


async def test_the_history_is_one_commit_per_tag_oldest_tag_first():
    deployer = MemoryDeployer(TAGS)
    assert [c.subject for c in deployer.history] == ["release v1.2.1", "release v1.2.2", "release v1.2.3"]
    forward = await deployer.compare("a" * 40, "c" * 40, 20)
    assert (forward.ahead, forward.behind, forward.removed) == (2, 0, ())
    assert [c.subject for c in forward.added] == ["release v1.2.3", "release v1.2.2"]
    back = await deployer.compare("c" * 40, "b" * 40, 20)
    assert (back.ahead, back.behind, back.added) == (0, 1, ())
    assert [c.subject for c in back.removed] == ["release v1.2.3"]
    same = await deployer.compare("b" * 40, "b" * 40, 20)
    assert (same.ahead, same.behind, same.added, same.removed) == (0, 0, (), ())


async def test_commits_go_on_top_and_the_limit_is_respected():
    deployer = MemoryDeployer(TAGS)
    for i in range(5):
        deployer.add_commit(f"{i}" * 40, f"change {i}")
    deployer.add_commit("d" * 40, "release", tag="v1.3.0")
    assert next(iter(deployer.tags)) == "v1.3.0" and await deployer.resolve("v1.3.0") == "d" * 40
    change = await deployer.compare("c" * 40, "d" * 40, 2)
    assert change.ahead == 6 and [c.subject for c in change.added] == ["release", "change 4"]
    deployer.move_tag("v1.2.3", "e" * 40)  # moved to a new commit: on top
    assert (await deployer.compare("d" * 40, "e" * 40, 20)).ahead == 1


async def test_a_history_can_be_given():
    history = [CommitSummary(sha=s, subject=f"s{s}", author="x") for s in ("1", "2", "3")]
    deployer = MemoryDeployer({"v1": "3"}, history=history)
    assert deployer.history == history
    assert [c.sha for c in (await deployer.compare("1", "3", 20)).added] == ["3", "2"]


async def test_an_unknown_commit_or_an_unreachable_repository_is_a_deployer_error():
    deployer = MemoryDeployer(TAGS)
    with pytest.raises(DeployerError, match="no commit"):
        await deployer.compare("a" * 40, "f" * 40, 20)
    deployer.lookup_error = DeployerError("unreachable")
    with pytest.raises(DeployerError, match="unreachable"):
        await deployer.compare("a" * 40, "b" * 40, 20)
    with pytest.raises(DeployerError, match="unreachable"):
        await deployer.checks("a" * 40)


async def test_checks_are_none_unless_set():
    deployer = MemoryDeployer(TAGS)
    assert await deployer.checks("c" * 40) is None
    deployer.ci["c" * 40] = [Check("build", "success"), Check("e2e", "pending")]
    assert await deployer.checks("c" * 40) == [Check("build", "success"), Check("e2e", "pending")]
    deployer.ci["b" * 40] = []  # CI that has nothing on this commit
    assert await deployer.checks("b" * 40) == []
