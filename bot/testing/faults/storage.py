"""Faults of the storage: Redis full (OOM under noeviction), a Redis that may evict, the
embedded Redis killed."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
from redis import Redis

from bot.testing.faults.rig import Load, Rig
from bot.testing.faults.suite import Seen


def _health(rig: Rig) -> tuple[int, dict]:
    try:
        r = rig.api.get("/healthz")
    except httpx.TransportError as e:
        return 0, {"error": str(e)}
    return r.status_code, r.json()


def oom(rig: Rig, load: Load, threads: int) -> Seen:
    """maxmemory below what Redis holds while half the threads are in flight: launches answer
    503 with Retry-After and /healthz says full; once there is room, all of it carries on."""
    rig.web_and_worker("--no-worker")
    load.launch(threads // 2)
    assert rig.redis is not None
    with Redis.from_url(rig.redis.url) as r:
        r.config_set("maxmemory", "1")  # below what it holds: every write is refused (OOM)
        try:
            refused = rig.api.post("/threads", json={"message": "deploy backend to p0", "user": "bob"})
            health, said = _health(rig)
            time.sleep(2)  # the threads in flight meet the full Redis too
        finally:
            r.config_set("maxmemory", "0")
    load.launch(threads - threads // 2)
    load.drive(within=60 + 2 * threads)
    healed, _ = _health(rig)
    answer = (f"launch {refused.status_code} Retry-After {refused.headers.get('retry-after')}, "
              f"/healthz {health} redis {said.get('redis', '')[:4]!r}, then /healthz {healed}")
    ok = (refused.status_code, refused.headers.get("retry-after"), health, healed) == (503, "5", 503, 200)
    return Seen(answer, ok and said.get("redis", "").startswith("full"))


def eviction(rig: Rig, load: Load, threads: int) -> Seen:
    """A worker refuses to start on allkeys-lru, naming the setting; the threads wait for a
    worker on noeviction, which finishes them."""
    rig.web("--no-worker")
    load.launch(threads)
    assert rig.redis is not None
    with Redis.from_url(rig.redis.url) as r:
        r.config_set("maxmemory-policy", "allkeys-lru")
        try:
            ran = subprocess.run([sys.executable, "-m", "bot", "worker"], env=rig.env,
                                 capture_output=True, text=True, timeout=60)
        finally:
            r.config_set("maxmemory-policy", "noeviction")
    rig.worker()
    load.drive(within=60 + 2 * threads)
    named = "maxmemory-policy is allkeys-lru" in ran.stderr
    return Seen(f"worker exit {ran.returncode}, {'names' if named else 'does not name'} "
                "maxmemory-policy allkeys-lru", ran.returncode == 2 and named and "Traceback" not in ran.stderr)


BACK_WITHIN = 15  # seconds: the promise, the embedded server restarted without restarting the bot


def embedded_redis_killed(rig: Rig, load: Load, threads: int) -> Seen:
    """`serve` on the embedded Redis (its worker in-process), the Redis SIGKILLed mid-load:
    the bot starts it again on its data and port, /healthz ok again, every thread there."""
    rig.web()
    load.launch(threads // 2)
    data = Path(rig.env["DATA_DIR"])
    killed = _pid(data)
    assert killed is not None, "the embedded Redis wrote no pid"
    os.kill(killed, signal.SIGKILL)
    began = time.monotonic()

    def restarted() -> bool:  # a new server, and the bot answering on it
        return _pid(data) not in (None, killed) and _health(rig)[0] == 200

    while not restarted() and time.monotonic() - began < BACK_WITHIN:
        time.sleep(0.1)
    back = time.monotonic() - began
    ok = back < BACK_WITHIN
    load.launch(threads - threads // 2)
    load.drive(within=60 + 2 * threads)
    return Seen(f"/healthz ok again after {back:.1f} s, on a new Redis process" if ok else
                f"/healthz not ok within {BACK_WITHIN} s", ok)


def _pid(data: Path) -> int | None:
    try:
        return int((data / "redis.pid").read_text().strip())
    except (OSError, ValueError):  # being written by the restart
        return None
