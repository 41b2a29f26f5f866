"""How long after a deploy's error ratio rises does deploybot roll it back on its own?

A real Prometheus (Debian's /usr/bin/prometheus, scrape_interval 1 s) scrapes an exporter whose
error ratio this script sets; deploybot (in process: real Redis, the real deploy command, a
worker firing timers every 0.2 s) deploys backend v1.2.3 to staging where
`[services.backend.verify.staging]` checks `app_error_ratio < 0.05` every second with
on_failure = "rollback". Once the bake is under way the ratio goes to 0.5, and the figures are
the times from that moment to: Prometheus answering the new value, the failed verification
recorded, the rollback's deploy_started, and the rollback's result.

    python bench/verify_rollback.py [--runs 5] [--quick]    # --quick: one run, to see that it still runs
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import statistics
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bot.adapters.redis import embedded as embedded_redis  # noqa: E402
from bot.config.settings import Settings  # noqa: E402
from bot.core.events import DeployResult, DeployStarted, VerificationEnded  # noqa: E402
from bot.runtime.ports import DeployRecord  # noqa: E402
from bot.runtime.worker import Worker  # noqa: E402
from bot.testing import cluster  # noqa: E402
from bot.testing.prometheus import QUERY, Exporter, PrometheusServer  # noqa: E402
from bot.wiring.app import build, fire_timers  # noqa: E402

INTERVAL = 1  # seconds between rounds of checks (and Prometheus's scrape interval)


def config(prometheus: str) -> str:
    return f"""
[environments.staging]
[services.backend]
[services.backend.verify.staging]
bake = "60s"
interval = "{INTERVAL}s"
grace = "2s"
on_failure = "rollback"
[[services.backend.verify.staging.prometheus]]
url = "{prometheus}"
query = "{QUERY}"
condition = "< 0.05"
"""


async def _verifying(app, thread_id: str) -> bool:  # noqa: ANN001
    return (await app.store.load(thread_id)).verifying() is not None


async def poll(check, within: float = 60) -> None:  # noqa: ANN001
    """Until `check()` (async) is true: a benchmark waits on the bot, never on a fixed sleep."""
    deadline = time.monotonic() + within
    while not await check():
        if time.monotonic() > deadline:
            raise TimeoutError("the bot did not get there in time")
        await asyncio.sleep(0.05)


async def one_run(settings: Settings, exporter: Exporter, prometheus: PrometheusServer) -> tuple[float, ...]:
    app = build(settings)
    await app.redis.flushdb()
    chores = ((0.2, fire_timers(app.runner.timers, app.queue, app.service.clock)),)  # type: ignore[arg-type]
    worker = Worker(app.runner, app.queue, app.store, 4, "bench", chores=chores)
    try:
        commit = await app.runner.deploying.deployers["backend"].resolve("v1.2.2")
        assert commit
        await app.environments.record(DeployRecord("staging", "backend", "v1.2.2", commit, True,
                                                   app.service.clock() - timedelta(days=1), None, "old", "old-1"))
        exporter.ratio = 0.001
        await asyncio.to_thread(prometheus.wait_for, lambda v: v < 0.05)
        worker.start()
        thread = await app.service.launch("deploy backend v1.2.3 to staging", app.service.unproven("bench"),
                                          channel="api")
        await app.queue.push(thread.id)
        await poll(lambda: _verifying(app, thread.id))
        await asyncio.sleep(1.5)  # a round or two with everything holding
        rise = app.service.clock()
        exporter.ratio = 0.5
        await asyncio.to_thread(prometheus.wait_for, lambda v: v > 0.05)
        seen = app.service.clock()
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            events = (await app.store.load(thread.id)).events
            done = [e for e in events if isinstance(e, DeployResult) and e.rollback_of]
            if done:
                failed = next(e for e in events if isinstance(e, VerificationEnded))
                started = [e for e in events if isinstance(e, DeployStarted)][-1]
                return tuple((at - rise).total_seconds() for at in (seen, failed.at, started.at, done[0].at))
            await asyncio.sleep(0.05)
        raise TimeoutError("no rollback within 60 s")
    finally:
        await worker.stop(0)
        await app.close()


async def main(runs: int) -> None:
    exporter = Exporter()
    prometheus = PrometheusServer(f"127.0.0.1:{exporter.port}", scrape_interval=f"{INTERVAL}s")
    with tempfile.TemporaryDirectory() as data:
        root = Path(data)
        try:
            await asyncio.to_thread(prometheus.wait_for, lambda v: True)
            (root / "deploybot.toml").write_text(config(prometheus.url))
            settings = Settings(
                _env_file=None, redis_url=embedded_redis.ensure_running(root / "redis"),
                git_repo=cluster.make_repo(root / "repo"), deploy_command=cluster.deploy_command(root, root / "ledger"),
                deploy_env_passthrough=cluster.FAKE_DEPLOY_ENV, deploybot_config=root / "deploybot.toml",
            )
            figures = [await one_run(settings, exporter, prometheus) for _ in range(runs)]
        finally:
            prometheus.stop()
            exporter.stop()
            embedded_redis.stop(root / "redis")
    names = ("Prometheus answers the new ratio", "verification failed (deploy faulty)",
             "rollback deploy_started", "rollback result recorded")
    print(f"after the error ratio rose (interval {INTERVAL} s, scrape every {INTERVAL} s, {runs} run(s)):")
    for i, name in enumerate(names):
        values = [f[i] for f in figures]
        print(f"  {name}: median {statistics.median(values):.2f} s, max {max(values):.2f} s")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="one run: a smoke run")
    args = parser.parse_args()
    # Before the app is built: the MCP SDK's server sets the root logger to INFO when nothing
    # has configured it, and httpx then logs a line per request.
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    asyncio.run(main(1 if args.quick else args.runs))
