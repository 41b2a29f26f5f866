"""Faults of what the bot runs and runs on: a deploy command that forks and hangs, a model
that never answers, a worker whose clock is five minutes ahead."""

from __future__ import annotations

import shutil
import time

from bot.testing.faults import ledger
from bot.testing.faults.rig import Load, Rig
from bot.testing.faults.suite import Seen

DEPLOY_TIMEOUT = "1"
CHILD_WRITES_AFTER = 2.5  # seconds: after DEPLOY_TIMEOUT, so only a child that outlived it writes


def forking_deploy(rig: Rig, load: Load, threads: int) -> Seen:
    """Every deploy forks a child that writes to the ledger later, and hangs: DEPLOY_TIMEOUT
    kills its process group, so no child writes and each thread says its deploy failed."""
    (rig.ledger.parent / (rig.ledger.name + ".fork")).write_text(str(CHILD_WRITES_AFTER))
    rig.web_and_worker("--no-worker")
    load.launch(threads)
    load.drive(within=60 + 2 * threads)
    time.sleep(CHILD_WRITES_AFTER + 1)  # a child that survived the timeout has written by now
    deploys, children = ledger.read(rig.ledger)
    results = [e for one in load.launches for e in (load.rig_get(one.thread_id) or {}).get("events", [])
               if e["type"] == "deploy_result"]
    timed_out = sum(1 for e in results if not e["ok"] and "timed out" in e.get("output", ""))
    ok = not children and len(deploys) == len(load.launches) == timed_out
    return Seen(f"{timed_out} of {len(deploys)} deploys failed 'timed out', {len(children)} child writes after", ok)


LLM_TIMEOUT = "1"
SENTENCE = f"did not answer within {LLM_TIMEOUT} s (LLM_TIMEOUT)"


def hung_model(rig: Rig, load: Load, threads: int) -> Seen:
    """The model takes every call and answers none for longer than LLM_TIMEOUT: the threads
    end with the sentence naming it; once it answers again, new threads finish."""
    rig.llm.delay = 3 * float(LLM_TIMEOUT)
    rig.web_and_worker("--no-worker")
    hung = load.launch(threads // 2)
    load.drive(within=30 + 2 * threads)
    rig.llm.delay = 0.05
    load.launch(threads - threads // 2)
    load.drive(within=60 + 2 * threads)
    said = sum(1 for one in hung if _ended_with(load, one.thread_id, SENTENCE))
    return Seen(f"{said} of {len(hung)} threads ended saying the model {SENTENCE!r}", said == len(hung))


def _ended_with(load: Load, thread_id: str, sentence: str) -> bool:
    thread = load.rig_get(thread_id) or {"events": [], "status": ""}
    errors = [e for e in thread["events"] if e["type"] == "error" and e.get("kind") == "llm"]
    return thread["status"] == "waiting_for_human" and bool(errors) and sentence in errors[-1]["message"]


SKEW = "+300s"
SKEW_SENTENCE = "s ahead of Redis's (more than 2 s): it runs no timed work"


def skewed_clock(rig: Rig, load: Load, threads: int) -> Seen:
    """A worker five minutes ahead (faketime) says so and runs nothing, expiring no approval
    (APPROVAL_TTL 120 s would be long past by its clock); a good worker does the work."""
    if shutil.which("faketime") is None:
        return Seen("faketime is not installed (make install)", False)
    ahead = rig.worker("ahead", prefix=("faketime", "-f", SKEW))  # not waited for: it says its skew first
    rig.web_and_worker("--no-worker", name="good")
    ahead.wait_for_log(SKEW_SENTENCE)
    load.launch(threads)
    load.drive(within=30 + threads, until={"waiting_for_approval"}, approve=False)
    time.sleep(3)  # approvals pending: a worker ahead would expire them at its next timer
    load.drive(within=60 + 2 * threads)
    expired = sum(1 for one in load.launches for e in (load.rig_get(one.thread_id) or {}).get("events", [])
                  if "expire" in e["type"])
    said = SKEW_SENTENCE in ahead.log.read_text()
    return Seen(f"the worker ahead logged {'the skew' if said else 'nothing'}, {expired} approvals expired",
                said and expired == 0 and ahead.alive())
