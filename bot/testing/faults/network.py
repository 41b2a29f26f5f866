"""Faults of the network between the bot and Redis, through a fault proxy (bot/testing/
fault_proxy.py): Redis blackholed under load, a slow link, a worker cut off mid-deploy."""

from __future__ import annotations

import json
import time

import httpx

from bot.testing.faults.ledger import read
from bot.testing.faults.rig import Load, Rig
from bot.testing.faults.suite import Seen

PROMISE = 10.0  # seconds: a partition answers 503 within this (docs/operations.md)
HOLD = 6.0  # seconds of blackhole: past a command's 4 s budget
LATENCY_MS = 100  # each chunk, each way
CUT_FOR = 8.0  # seconds a worker is cut off: past a run's 4 s lease, within DEPLOY_LEASE's 40 s
DEPLOY_SECONDS = "4"  # long enough for the cut to fall in the middle of deploys
# What a thread says when it could not follow a deploy (bot/core/wording): never, when the
# worker that ran it was only cut off.
NOT_FOLLOWED = ("outcome is unknown", "could not follow", "was interrupted while deploying")


def redis_partition(rig: Rig, load: Load, threads: int) -> Seen:
    """Redis blackholed (nothing closed, nothing through) for longer than a command's budget,
    half the threads in flight: a launch meanwhile answers 503 with Retry-After within the
    promise; healed, every thread carries on without a restart."""
    proxy, through = rig.proxy()
    rig.env["REDIS_URL"] = through
    rig.web_and_worker("--no-worker")
    load.launch(threads // 2)
    proxy.blackhole()
    started = time.monotonic()
    try:
        try:
            during = rig.api.post("/threads", json={"message": "deploy backend to p0", "user": "bob"},
                                  timeout=PROMISE + 5)
            status, retry = during.status_code, during.headers.get("retry-after")
        except httpx.TransportError:
            status, retry = 0, None
        took = time.monotonic() - started
        time.sleep(max(0.0, HOLD - took))
    finally:
        proxy.heal()
    load.launch(threads - threads // 2)
    load.drive(within=90 + 2 * threads)
    return Seen(f"a launch during the partition: {status} Retry-After {retry} after {took:.1f} s "
                f"(promise {PROMISE:g} s), then all carried on", status == 503 and retry is not None and took < PROMISE)


def slow_redis(rig: Rig, load: Load, threads: int) -> Seen:
    """Every chunk to and from Redis 100 ms late: slower, never wrong."""
    proxy, through = rig.proxy()
    rig.env["REDIS_URL"] = through
    rig.web_and_worker("--no-worker")
    proxy.latency(LATENCY_MS)
    load.launch(threads)
    load.drive(within=120 + 4 * threads)
    proxy.heal()
    return Seen(f"{LATENCY_MS} ms each way: every thread ended", True)


def partitioned_worker(rig: Rig, load: Load, threads: int) -> Seen:
    """The only worker cut off from Redis while its deploys run (seconds each), longer than a
    run's lease; a second worker starts meanwhile. The deploys' results are recorded when the
    first is back: none is "outcome unknown", none runs twice."""
    proxy, through = rig.proxy()
    rig.web("--no-worker")
    cut_off = rig.worker("cut-off", REDIS_URL=through)
    load.launch(threads)
    deadline = time.monotonic() + 60 + threads
    while time.monotonic() < deadline and not read(rig.ledger)[0]:  # a deploy under way
        load.drive(within=0.5, until={"deploying", "done"})
    proxy.cut()
    rig.worker("other")  # would take the cut-off worker's threads if its leases looked lapsed
    time.sleep(CUT_FOR)
    proxy.heal()
    load.drive(within=90 + 5 * threads)
    followed = [one.thread_id for one in load.launches
                if any(words in json.dumps(load.rig_get(one.thread_id) or {}) for words in NOT_FOLLOWED)]
    return Seen(f"cut off {CUT_FOR:g} s mid-deploy: {len(followed)} threads said they could not follow a deploy",
                not followed and cut_off.alive())


def partitioned_settings() -> dict[str, str]:
    return {"FAKE_DEPLOY_SECONDS": DEPLOY_SECONDS}
