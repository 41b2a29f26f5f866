"""Console render time: the board, the approvals page and a 500-event thread page, with 10,000
threads stored (every tenth waiting for an approval), 200 deploys in each environment's
history and a lock held, in real Redis.

Server time only: each page is asked of the served ASGI app (bot.wiring.app.http_app: the front
door, the routes, Jinja2) in-process, with no network in between. The first request of each
page reads its threads from Redis (cold); the rest find them in the console's cache and only
ask Redis what was appended since (warm, what a team's open tabs see).

    python bench/console_render.py            # starts its own Redis (valkey) in a temp dir
    REDIS_URL=redis://... python bench/console_render.py    # flushes that database first
    python bench/console_render.py --quick    # 200 threads, 5 rounds: seconds, to see that it still runs
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import statistics
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import httpx  # noqa: E402

from bot.adapters.redis import embedded as embedded_redis  # noqa: E402
from bot.config.settings import Settings  # noqa: E402
from bot.core.events import (  # noqa: E402
    ApprovalRequested,
    DeployBackend,
    DeployResult,
    DeployStarted,
    DoneForNow,
    GitTag,
    GitTagsResult,
    HumanResponse,
    ListGitTags,
    UserMessage,
    new_id,
)
from bot.core.policy import args_hash  # noqa: E402
from bot.core.thread import Origin  # noqa: E402
from bot.runtime.clock import utcnow  # noqa: E402
from bot.runtime.ports import DeployRecord, Lock  # noqa: E402
from bot.wiring.app import build, http_app  # noqa: E402

THREADS = 10_000
BIG = 500  # events in the thread whose page is timed
ROUNDS = 200
TAGS = [GitTag(name=f"v1.{i}.0", commit=f"{i:040x}", date="2026-11-20T10:00:00Z") for i in range(10)]


def short_thread(thread_id: str, i: int, at) -> list:
    """A request, tags, a proposal to production and its approval request: every tenth is
    still waiting, the others were approved, deployed and summed up."""
    stamp = lambda e, k: e.model_copy(update={"at": at + timedelta(milliseconds=k)})  # noqa: E731
    step = DeployBackend(tag="v1.9.0", environment="production", reason="the newest tag")
    request = ApprovalRequested(
        step_id=step.id, thread_id=thread_id, args_hash=args_hash("backend", "v1.9.0", "production"),
        service="backend", tag="v1.9.0", commit=TAGS[9].commit, environment="production",
        requested_by=f"user{i % 50}", expires_at=utcnow() + timedelta(hours=1),
    )
    events = [
        UserMessage(text=f"deploy the latest backend to production, ticket #{i}", user=f"user{i % 50}",
                    person=f"user{i % 50}", via="name"),
        ListGitTags(), GitTagsResult(step_id="x", tags=TAGS), step, request,
    ]
    if i % 10:
        deploy_id = f"{thread_id}-{step.id}"
        events += [
            HumanResponse(text="approved", user="alice", person="alice", via="session", evidence="s1",
                          approval_id=request.approval_id, approve=True, channel="console"),
            DeployStarted(step_id=step.id, deploy_id=deploy_id, commit=TAGS[9].commit),
            DeployResult(step_id=step.id, deploy_id=deploy_id, service="backend", tag="v1.9.0",
                         environment="production", commit=TAGS[9].commit, ok=True, exit_code=0,
                         output="deploying\n" * 5, approved_by="alice"),
            DoneForNow(message="Deployed backend v1.9.0 to production."),
        ]
    return [stamp(e, k) for k, e in enumerate(events)]


def big_thread(thread_id: str, at) -> list:
    kinds = [
        lambda n: UserMessage(text=f"what about <b>this</b> one, #{n}?", user="alice", person="alice", via="name"),
        lambda n: ListGitTags(),
        lambda n: GitTagsResult(step_id=str(n), tags=TAGS),
        lambda n: DoneForNow(message=f"The newest tag is v1.9.0 (**{n}**)."),
    ]
    return [kinds[n % 4](n).model_copy(update={"at": at + timedelta(milliseconds=n)}) for n in range(BIG)]


async def seed(app, threads: int) -> str:
    store, environments = app.store, app.environments
    start = utcnow() - timedelta(hours=3)
    big = new_id()
    await store.create(Origin(channel="api"), big_thread(big, start), big)
    batch = []
    for i in range(threads):
        thread_id = new_id()
        batch.append(store.create(Origin(channel="api"), short_thread(thread_id, i, start + timedelta(seconds=i)),
                                  thread_id))
        if len(batch) == 50:
            await asyncio.gather(*batch)
            batch = []
    await asyncio.gather(*batch)
    for env in sorted(app.policy.environments):
        for n in range(200):
            await environments.record(DeployRecord(
                environment=env, service=("backend", "frontend")[n % 2], tag=f"v1.{n % 10}.0",
                commit=TAGS[n % 10].commit, ok=n % 7 != 0, at=start + timedelta(seconds=n), approved_by="alice",
                thread_id=big,
                deploy_id=f"{big}-{n}",
            ))
    await environments.acquire(Lock("staging", "manual:alice", "release freeze", utcnow()), ttl_ms=None)
    return big


def percentile(samples: list[float], p: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


async def measure(client: httpx.AsyncClient, path: str, rounds: int) -> tuple[float, list[float], int]:
    began = time.perf_counter()
    first = await client.get(path)
    cold = time.perf_counter() - began
    assert first.status_code == 200, (path, first.status_code, first.text[:500])
    samples = []
    for _ in range(rounds):
        began = time.perf_counter()
        r = await client.get(path)
        samples.append(time.perf_counter() - began)
        assert r.status_code == 200
    return cold, samples, len(first.content)


async def main(threads: int = THREADS, rounds: int = ROUNDS) -> None:
    tmp = Path(tempfile.mkdtemp(prefix="console-bench-"))
    url = os.environ.get("REDIS_URL") or embedded_redis.ensure_running(tmp / "redis")
    try:
        settings = Settings(_env_file=None, redis_url=url, data_dir=tmp / "data", git_repo=tmp)
        app = build(settings)
        await app.redis.flushdb()
        t = time.perf_counter()
        big = await seed(app, threads)
        print(f"seeded {threads:,} threads + one of {BIG} events in {time.perf_counter() - t:.1f} s")
        transport = httpx.ASGITransport(app=http_app(app, worker=False))
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
            print(f"{'page':<34} {'cold':>9} {'p50':>9} {'p99':>9} {'html':>9}")
            for name, path in [("board (/console/)", "/console/"), ("approvals", "/console/approvals"),
                               (f"thread, {BIG} events", f"/console/threads/{big}"),
                               ("threads list", "/console/threads"),
                               ("threads search (1,000 scanned)", "/console/threads?q=ticket+%23999")]:
                cold, samples, size = await measure(client, path, rounds)
                print(f"{name:<34} {cold * 1000:>7.1f}ms {statistics.median(samples) * 1000:>7.1f}ms "
                      f"{percentile(samples, 99) * 1000:>7.1f}ms {size / 1024:>7.0f}KB")
        await app.redis.flushdb()
        await app.close()
    finally:
        if not os.environ.get("REDIS_URL"):
            embedded_redis.stop(tmp / "redis")


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="200 threads and 5 rounds instead of 10,000 and 200")
    # Before the app is built: the MCP SDK's server sets the root logger to INFO when nothing
    # has configured it, and httpx then logs a line per request.
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    asyncio.run(main(200, 5) if p.parse_args().quick else main())
