"""docs/benchmarks.md is what a reader needs today: a section for each benchmark under bench/
(what it measures, how to run it, its current figures), none for one that is gone, and older
runs left to git history. `make bench` and `make bench-quick` run every one of them."""

from __future__ import annotations

import re

from tests.docs.markdown import ROOT

PAGE = (ROOT / "docs" / "benchmarks.md").read_text()
MAKEFILE = (ROOT / "Makefile").read_text()
HELPERS = {"stand_ins.py"}  # run by a benchmark, not one itself
BENCHMARKS = {p.name for p in (ROOT / "bench").glob("*.py")} - HELPERS
NAMED = re.compile(r"bench/(\w+\.py)")


def sections() -> dict[str, str]:
    """Each `## ` section of the page by its heading."""
    parts = re.split(r"^## ", PAGE, flags=re.M)[1:]
    return {part.partition("\n")[0]: part for part in parts}


def test_each_benchmark_has_one_section_that_says_how_to_run_it():
    found: dict[str, list[str]] = {}
    for heading, body in sections().items():
        first = NAMED.search(body)  # the section's own benchmark is the first it names
        if first is not None:
            found.setdefault(first[1], []).append(heading)
            assert f"python bench/{first[1]}" in body, f"{heading}: how to run {first[1]}"
    assert {name: len(headings) for name, headings in found.items()} == dict.fromkeys(BENCHMARKS, 1)


def test_every_benchmark_named_exists():
    assert set(NAMED.findall(PAGE)) - HELPERS <= BENCHMARKS


def test_older_runs_are_left_to_git_history():
    assert "git history" in PAGE
    # no table of runs one after another ("| run | ...", "| run, 2026-11-27 | ...", "| ..., session 7 |")
    assert not re.search(r"^\| (run|run, [^|]*|[^|]*session \d+) \|", PAGE, flags=re.M), "today's figures only"


def test_make_bench_and_bench_quick_run_every_benchmark():
    for target in ("bench", "bench-quick"):
        recipe = re.search(rf"^{target}:.*\n((?:\t.*\n)+)", MAKEFILE, flags=re.M)
        assert recipe, target
        assert set(NAMED.findall(recipe[1])) == BENCHMARKS, target
