"""The fault suite, small: each fault of `python -m bot.testing.chaos --faults` with a few
threads, on its own web and workers. Each must lose nothing, make no duplicate thread, run no
two deploys of one target at once, none unapproved, leave none stuck, and show the answer the
docs promise for it."""

from __future__ import annotations

import shutil
import subprocess
import sys

import pytest

from bot.testing.faults import FAULTS, ledger, run
from bot.testing.faults.rig import FIGURES

pytestmark = [pytest.mark.redis, pytest.mark.processes, pytest.mark.network]

THREADS = 3


@pytest.mark.parametrize("fault", FAULTS, ids=[f.name for f in FAULTS])
def test_each_fault_small(fault, tmp_path):
    if fault.name == "skewed-clock" and shutil.which("faketime") is None:
        pytest.skip("faketime is not installed (make install)")
    [result] = run([fault], THREADS, tmp_path, log=lambda line: None)
    assert {k: result.figures[k] for k in FIGURES} == {k: 0 for k in FIGURES}, result.line()
    assert result.seen.ok, result.line()
    assert result.threads >= THREADS and result.figures["deploys"] > 0, result.line()


def test_an_unknown_fault_is_refused_naming_the_faults():
    ran = subprocess.run([sys.executable, "-m", "bot.testing.chaos", "--faults", "oom", "no-such"],
                         capture_output=True, text=True, timeout=60)
    assert ran.returncode == 2 and "no such fault: no-such" in ran.stderr and "hung-model" in ran.stderr


def test_the_ledger_counts_deploys_of_one_target_at_once(tmp_path):
    path = tmp_path / "deploys.log"
    path.write_text(
        "start t1-a backend v1 p1 1.0\nend t1-a 3.0\n"
        "start t2-a backend v1 p1 2.0\nend t2-a 4.0\n"  # began while t1-a ran: overlapping
        "start t3-a frontend v1 p1 2.5\nend t3-a 2.6\n"  # another service: not
        "start t4-a backend v1 p2 1.0\n"  # killed before its end: runs to the end of the run
        "start t5-a backend v1 p2 9.0\nend t5-a 9.5\nchild t4-a 5.0\n"
    )
    deploys, children = ledger.read(path)
    assert ledger.overlapping(deploys) == 2 and children == ["t4-a"]
