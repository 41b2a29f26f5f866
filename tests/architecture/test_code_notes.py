"""Notes in the code say why, for whoever reads it next: no "(issue N)" (the tracker is not
the code's reader, and the number says nothing once the issue is closed) and no TEMPORARY
marker (a stopgap either goes or becomes the design)."""

from __future__ import annotations

import re

from tests import ROOT
from tests.architecture.tree import written

BOT = ROOT / "bot"
ISSUE = re.compile(r"\bissues? \d+", re.IGNORECASE)


def lines_matching(pattern: re.Pattern[str]) -> list[str]:
    found = []
    for path, source, _ in written():  # the generated client aside
        for number, line in enumerate(source.splitlines(), 1):
            if pattern.search(line):
                found.append(f"{path.relative_to(BOT.parent)}:{number}: {line.strip()}")
    return found


def test_no_code_comment_names_an_issue_number():
    assert lines_matching(ISSUE) == []


def test_no_temporary_markers_are_left():
    assert lines_matching(re.compile(r"\bTEMPORARY\b")) == []
