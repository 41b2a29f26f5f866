"""Step overhead: recording a step and its result in real Redis, as a multiple of one
Redis PING round trip measured in the same run, on threads of 10 and 1,000 events.

    python bench/step_overhead.py            # starts its own Redis (valkey) in a temp dir
    REDIS_URL=redis://... python bench/step_overhead.py
    python bench/step_overhead.py --quick    # 100 rounds: seconds, to see that it still runs
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from redis.asyncio import Redis  # noqa: E402

from bot.adapters.redis import embedded as embedded_redis  # noqa: E402
from bot.adapters.redis.threads import RedisThreadStore  # noqa: E402
from bot.adapters.redis.work import RedisWorkQueue  # noqa: E402
from bot.core.events import (  # noqa: E402
    DeployBackend,
    DeployResult,
    DoneForNow,
    Error,
    GitTag,
    GitTagsResult,
    ListGitTags,
    UserMessage,
)
from bot.core.policy import Policy  # noqa: E402
from bot.core.thread import Origin  # noqa: E402
from bot.runtime.deploying import Deploying  # noqa: E402
from bot.runtime.loop import Runner  # noqa: E402

ROUNDS = 2000
TAGS = [GitTag(name=f"v1.{i}.0", commit=f"{i:040x}", date="2026-11-20T10:00:00Z") for i in range(10)]


def history(n: int) -> list:
    """A realistic mix of events: messages, steps, results, errors."""
    kinds = [
        lambda i: UserMessage(text=f"deploy the latest backend to production #{i}", user="alice"),
        lambda i: ListGitTags(),
        lambda i: GitTagsResult(step_id=str(i), tags=TAGS),
        lambda i: DeployBackend(tag="v1.2.3", environment="staging", reason="newest tag"),
        lambda i: DeployResult(step_id=str(i), deploy_id="d", service="backend", tag="v1.2.3",
                               environment="staging", ok=True, exit_code=0, output="done\n" * 5),
        lambda i: Error(kind="llm", message="the model's answer was not a valid next step"),
    ]
    return [kinds[i % len(kinds)](i) for i in range(n)]


async def interleaved(op, ping, rounds: int = ROUNDS) -> tuple[float, float]:
    """Median time of `op` and of a PING, sampled alternately so that noise on a busy
    machine hits both alike."""
    for _ in range(50):  # warm up connections and the script cache
        await op()
        await ping()
    ops, pings = [], []
    for _ in range(rounds):
        t0 = time.perf_counter()
        await ping()
        t1 = time.perf_counter()
        await op()
        t2 = time.perf_counter()
        pings.append(t1 - t0)
        ops.append(t2 - t1)
    return statistics.median(ops), statistics.median(pings)


async def main(url: str, rounds: int = ROUNDS) -> None:
    redis = Redis.from_url(url)
    store = RedisThreadStore(redis)
    await redis.flushdb()
    print(f"{rounds} rounds per size; each round is one PING then one step + its result")
    figures = {}
    for size in (10, 1000):
        state = {"thread": await store.create(Origin(channel="bench"), history(size))}

        async def step_and_result(state: dict = state) -> None:
            step = ListGitTags()
            t = await store.append(state["thread"], [step])
            state["thread"] = await store.append(t, [GitTagsResult(step_id=step.id, tags=TAGS)])

        op, rtt = await interleaved(step_and_result, redis.ping, rounds)
        figures[size] = op / rtt
        print(
            f"{size:>5}-event thread: step + result {op * 1e6:.0f} µs, PING {rtt * 1e6:.0f} µs "
            f"-> {op / rtt:.2f}x RTT"
        )
    print(f"1,000-event / 10-event overhead: {figures[1000] / figures[10]:.2f}x")
    await per_run(redis, store, rounds)
    await redis.aclose()


async def per_run(redis: Redis, store: RedisThreadStore, rounds: int) -> None:
    """What every run adds to its steps on the handoff path: the stream entry pushed, taken
    and acknowledged, and the run's own bookkeeping (lease, load, recency, release, re-read)."""
    queue = RedisWorkQueue(redis)
    await queue.push("warm-up")
    await queue.done([w.entry for w in await queue.take("bench", 10, 1)])

    async def handoff() -> None:
        await queue.push("t")
        await queue.done([w.entry for w in await queue.take("bench", 1, 1)])

    thread = await store.create(Origin(channel="bench"), [UserMessage(text="hi", user="a"), DoneForNow(message="bye")])
    # No deployer, model or notifier: a finished thread's run only does the bookkeeping.
    policy = Policy()
    deploying = Deploying({}, None, None, policy)  # type: ignore[arg-type]
    runner = Runner(store, deploying, None, None, policy)  # type: ignore[arg-type]

    async def bookkeeping() -> None:
        assert await runner.run(thread.id) is not None

    hand, rtt = await interleaved(handoff, redis.ping, rounds // 2)
    book, rtt2 = await interleaved(bookkeeping, redis.ping, rounds // 2)
    print(f"per run, handoff (push, take, acknowledge): {hand * 1e6:.0f} µs -> {hand / rtt:.2f}x RTT")
    print(f"per run, bookkeeping (lease+load, recency, release+re-read): {book * 1e6:.0f} µs -> {book / rtt2:.2f}x RTT")


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="100 rounds instead of 2,000")
    rounds = 100 if p.parse_args().quick else ROUNDS
    if os.environ.get("REDIS_URL"):
        asyncio.run(main(os.environ["REDIS_URL"], rounds))
    else:
        with tempfile.TemporaryDirectory() as data:
            try:
                asyncio.run(main(embedded_redis.ensure_running(Path(data)), rounds))
            finally:
                embedded_redis.stop(Path(data))
