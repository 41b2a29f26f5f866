"""The tests are laid out like bot/, and what each needs is a marker the Makefile's tiers use."""

from __future__ import annotations

import re

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


def test_a_test_module_of_the_fast_layer_lives_beside_the_code_it_tests():
    top = [p.name for p in (ROOT / "tests").glob("test_*.py")]
    assert top == []
