"""The tests are laid out like bot/, and what each needs is a marker the Makefile's tiers use."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from tests import ROOT, needs

MIRRORS = ("core", "config", "runtime", "adapters", "wiring", "testing")  # tests/<these> follow bot/<these>
SPANNING = {"end_to_end", "docs", "architecture", "bench", "chat_channel", "fixtures"}  # the whole, not a part


def test_every_folder_of_tests_is_a_folder_of_bot_or_spans_the_whole():
    tests = ROOT / "tests"
    folders = {p.relative_to(tests) for p in tests.rglob("*") if p.is_dir() and "__pycache__" not in p.parts}
    strays = [
        str(f) for f in folders
        if f.parts[0] not in SPANNING and (f.parts[0] not in MIRRORS or not (ROOT / "bot" / f).is_dir())
        and not (f.parts[0] == "adapters" and f.name == "mail_corpus")  # the corpus beside the email tests
    ]
    assert strays == []


def test_the_makefile_tiers_select_by_the_markers_tests_needs_defines():
    makefile = (ROOT / "Makefile").read_text()
    [listed] = re.findall(r"^NEEDS := (.+)$", makefile, re.M)
    assert listed.split(" or ") == list(needs.NEEDS)
    assert makefile.count('-m "not ($(NEEDS))" tests') == 2 and makefile.count('-m "$(NEEDS)" tests') == 1


def test_no_test_module_is_left_at_the_top_of_tests():
    top = [p.name for p in (ROOT / "tests").glob("test_*.py")]
    assert top == []


def test_a_module_marked_as_a_whole_is_left_out_of_the_fast_layer_unread():
    assert needs.marked_whole('import pytest\n\npytestmark = [pytest.mark.redis, pytest.mark.network]\n')
    assert needs.marked_whole('pytestmark = [\n    pytest.mark.redis,\n    pytest.mark.skipif(True, reason="x"),\n]\n')
    assert needs.marked_whole("pytestmark = pytest.mark.browser\n")
    assert not needs.marked_whole('pytestmark = pytest.mark.skipif(True, reason="x")\n')
    assert not needs.marked_whole("@pytest.mark.redis\ndef test_one(): ...\n")  # one test, not the module
    assert not needs.marked_whole("x = 1  # pytestmark = pytest.mark.redis\n")


@pytest.mark.processes
def test_leaving_the_marked_modules_unread_leaves_out_no_test_of_the_fast_layer():
    """The fast layer's selection, collected with the marked modules left unread and read: the
    same tests (a module's mark reaches every test in it, so none of theirs was selected)."""
    def selected(**env: str) -> list[str]:
        ran = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:randomly",
                              "-m", needs.NONE, "tests"], cwd=ROOT, capture_output=True, text=True,
                             env={**os.environ, **env}, check=True)
        return sorted(line for line in ran.stdout.splitlines() if "::" in line)

    unread = selected()
    assert unread and unread == selected(DEPLOYBOT_TESTS_READ_ALL="1")
