"""Delivery metrics render time with 100,000 deploys stored: the console's metrics page
(GET /console/metrics, charts drawn on the server) and GET /metrics/delivery, over 7, 30 and
90 days, in real Redis. 100,000 deploys to production, one every 10 minutes (almost two years
of a busy team), of 20 commits in a real git repository (the command deployer's, which gives
the commit times).

Server time only: each page is asked of the served ASGI app in-process. The first request of a
window looks up its commit times in git (cold); the rest find them in the process's cache.

    python bench/delivery_metrics.py           # starts its own Redis (valkey) in a temp dir
    python bench/delivery_metrics.py --quick   # 2,000 deploys, 3 rounds: seconds, to see that it still runs
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import httpx  # noqa: E402

from bot.adapters.redis import embedded as embedded_redis  # noqa: E402
from bot.config.settings import Settings  # noqa: E402
from bot.runtime.clock import utcnow  # noqa: E402
from bot.testing.cluster import make_repo  # noqa: E402
from bot.testing.seed_history import seed_history  # noqa: E402
from bot.wiring.app import build, http_app  # noqa: E402

DEPLOYS = 100_000
ROUNDS = 5
TAGS = [f"v1.{i}.0" for i in range(20)]


def every_commit(repo: Path) -> list[str]:
    return subprocess.run(["git", "-C", str(repo), "rev-list", "--all"], check=True, capture_output=True,
                          text=True).stdout.split()


async def timed(client: httpx.AsyncClient, path: str, rounds: int) -> tuple[float, list[float], list[float], int]:
    """(cold wall time, warm wall times, warm CPU times of this process, the answer's size): on a
    shared machine the CPU time says what the page costs, the wall time what it felt like."""
    began = time.perf_counter()
    first = await client.get(path)
    cold = time.perf_counter() - began
    assert first.status_code == 200, (path, first.status_code, first.text[:500])
    walls, cpus = [], []
    for _ in range(rounds):
        began, cpu = time.perf_counter(), time.process_time()
        assert (await client.get(path)).status_code == 200
        walls.append(time.perf_counter() - began)
        cpus.append(time.process_time() - cpu)
    return cold, walls, cpus, len(first.content)


async def main(deploys: int = DEPLOYS, rounds: int = ROUNDS) -> None:
    tmp = Path(tempfile.mkdtemp(prefix="metrics-bench-"))
    url = os.environ.get("REDIS_URL") or embedded_redis.ensure_running(tmp / "redis")
    try:
        repo = make_repo(tmp / "repo", TAGS)
        commits = every_commit(repo)
        app = build(Settings(_env_file=None, redis_url=url, data_dir=tmp / "data", git_repo=repo))
        await app.redis.flushdb()
        t = time.perf_counter()
        await seed_history(app.redis, "production", deploys, utcnow(), timedelta(minutes=10), commits,
                           ("backend", "frontend"))
        print(f"seeded {deploys:,} deploys in {time.perf_counter() - t:.1f} s")
        transport = httpx.ASGITransport(app=http_app(app, worker=False))
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
            print(f"{'page':<44} {'cold':>9} {'p50':>9} {'max':>9} {'cpu p50':>9} {'size':>7}")
            for days in (7, 30, 90):
                for name, path in ((f"console page, {days} days", f"/console/metrics?days={days}"),
                                   (f"/metrics/delivery, {days} days, backend",
                                    f"/metrics/delivery?days={days}&service=backend&environment=production")):
                    cold, walls, cpus, size = await timed(client, path, rounds)
                    print(f"{name:<44} {cold * 1000:>7.1f}ms {statistics.median(walls) * 1000:>7.1f}ms "
                          f"{max(walls) * 1000:>7.1f}ms {statistics.median(cpus) * 1000:>7.1f}ms {size / 1024:>5.0f}KB")
        await app.redis.flushdb()
        await app.close()
    finally:
        if not os.environ.get("REDIS_URL"):
            embedded_redis.stop(tmp / "redis")


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="2,000 deploys and 3 rounds instead of 100,000 and 5")
    # Before the app is built: the MCP SDK's server sets the root logger to INFO when nothing
    # has configured it, and httpx then logs a line per request.
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    asyncio.run(main(2_000, 3) if p.parse_args().quick else main())
