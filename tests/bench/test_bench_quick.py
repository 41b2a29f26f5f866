"""A quick benchmark run (`make bench-quick`, part of `make test`) prints its figures and
nothing else: no goal verdict (quick counts are too small for one to mean anything, and a
"NOT met" that fails nothing only teaches readers to skip the output) and no library's INFO
log lines (httpx's line per request). Two of them, those that build the app in this process:
the others run `python -m bot`, whose logging is LOG_LEVEL's."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests import ROOT

pytestmark = [pytest.mark.processes, pytest.mark.network]


@pytest.mark.timeout(300)  # a whole quick benchmark: slow beside the rest of the suite, not stuck
@pytest.mark.parametrize("bench", ["growth.py", "console_render.py"])
def test_a_quick_benchmark_prints_figures_without_goals_or_library_logs(bench):
    ran = subprocess.run([sys.executable, str(ROOT / "bench" / bench), "--quick"], capture_output=True, text=True,
                         timeout=240, cwd=ROOT)
    assert ran.returncode == 0, ran.stderr
    out = ran.stdout + ran.stderr
    assert out.strip()  # it did print its figures
    assert "goal" not in out.lower()
    assert not [line for line in out.splitlines() if "HTTP Request:" in line or " INFO " in line]
