"""The fault suite's deploy command and its ledger: each deploy writes a line when it starts
and one when it ends, with the time, so two deploys of one service to one environment that
overlap show. A file beside the ledger makes it fork a child that writes later (the forking
deploy command: after a timeout nothing of it may still write)."""

from __future__ import annotations

import sys
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

SCRIPT = """
import os, subprocess, sys, time
ledger, deploy = sys.argv[1], os.environ["DEPLOY_ID"]
def note(*words):
    with open(ledger, "a") as f:
        f.write(" ".join([*words, repr(time.time())]) + "\\n")
note("start", deploy, *sys.argv[2:])
if os.path.exists(ledger + ".fork"):  # a child that writes after the parent's timeout
    child = ("import sys, time; time.sleep(float(sys.argv[3])); "
             "open(sys.argv[1], 'a').write(f'child {sys.argv[2]} {time.time()!r}\\\\n')")
    subprocess.Popen([sys.executable, "-c", child, ledger, deploy, open(ledger + ".fork").read().strip()])
    time.sleep(600)
time.sleep(float(os.environ.get("FAKE_DEPLOY_SECONDS", "0")))
note("end", deploy)
"""


def command(directory: Path, ledger: Path) -> str:
    script = directory / "fault_deploy.py"
    script.write_text(SCRIPT)
    return f"{sys.executable} {script} {ledger} {{service}} {{tag}} {{environment}}"


@dataclass(frozen=True)
class Deploy:
    deploy_id: str
    service: str
    tag: str
    environment: str
    began: float
    ended: float | None  # None: killed before it ended


def read(ledger: Path) -> tuple[list[Deploy], list[str]]:
    """The deploys the command started, and the lines a child wrote (deploy ids)."""
    lines = [line.split() for line in (ledger.read_text().splitlines() if ledger.exists() else [])]
    ends = {w[1]: float(w[2]) for w in lines if w[0] == "end"}
    deploys = [Deploy(w[1], w[2], w[3], w[4], float(w[5]), ends.get(w[1])) for w in lines if w[0] == "start"]
    return deploys, [w[1] for w in lines if w[0] == "child"]


def overlapping(deploys: list[Deploy]) -> int:
    """Deploys that began while another of the same service and environment ran (one killed
    before its end counts as running to the end of the run)."""
    by_target: dict[tuple[str, str], list[Deploy]] = defaultdict(list)
    for d in deploys:
        by_target[(d.service, d.environment)].append(d)
    count = 0
    for runs in by_target.values():
        runs.sort(key=lambda d: d.began)
        running_until = float("-inf")
        for d in runs:
            count += d.began < running_until
            running_until = max(running_until, d.ended if d.ended is not None else float("inf"))
    return count
