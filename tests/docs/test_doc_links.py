"""Every relative link and #anchor in README.md and docs/*.md leads somewhere, so moving a
section between files cannot leave a reader at a dead end."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.docs.markdown import DOCS, ROOT, anchor, anchors, links


def broken(path: Path) -> list[str]:
    bad = []
    for target in links(path):
        if target.startswith(("http://", "https://", "mailto:")):
            continue
        file, _, fragment = target.partition("#")
        dest = (path.parent / file).resolve() if file else path
        if not dest.exists():
            bad.append(f"{target}: no such file")
        elif fragment and dest.suffix == ".md" and fragment not in anchors(dest):
            bad.append(f"{target}: no heading with that anchor in {dest.name}")
    return bad


@pytest.mark.parametrize("path", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_and_anchor_resolves(path):
    assert broken(path) == []


def test_the_checker_sees_a_dead_link_and_a_dead_anchor(tmp_path):
    (tmp_path / "other.md").write_text("# Other\n\n## Redis: one server, Sentinel or Cluster\n")
    page = tmp_path / "page.md"
    page.write_text("# Page\n\n[ok](other.md#redis-one-server-sentinel-or-cluster) [self](#page)\n"
                    "[gone](missing.md) [nowhere](other.md#no-such) [away](#nothing-here)\n"
                    "```\n[inside a fence](nothing.md)\n```\n")
    assert broken(page) == [
        "missing.md: no such file",
        "other.md#no-such: no heading with that anchor in other.md",
        "#nothing-here: no heading with that anchor in page.md",
    ]


def test_anchors_are_github_s():
    assert anchor("Redis: one server, Sentinel or Cluster") == "redis-one-server-sentinel-or-cluster"
    assert anchor("`/deploy`") == "deploy"
    assert anchor("Console render time (issue: web console)") == "console-render-time-issue-web-console"
    assert anchor("Approvals that behave over time") == "approvals-that-behave-over-time"
