"""Worker benchmarks (issue: durable at scale), on real processes: a Redis server,
`python -m bot worker` processes and an asyncio model stand-in answering after 200 ms.

1. Live threads one worker carries: N threads handed over at once, each needing one model
   step; ideal time = 200 ms (all N wait on the model together). Figure: ideal / measured.
2. Two workers / one worker throughput at WORKER_CONCURRENCY=16 with 128 threads per round
   (ideal 2.0: each worker is bound by its concurrency, not by the CPU).
3. SIGKILL of the worker holding a thread -> another worker takes the thread's lease.

    python bench/workers.py [--quick]    # --quick: one size, one round, one kill: to see that it still runs
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TypeVar

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from redis.asyncio import Redis  # noqa: E402

from bot.adapters.redis.keys import Keys  # noqa: E402
from bot.adapters.redis.threads import RedisThreadStore  # noqa: E402
from bot.core.events import UserMessage  # noqa: E402
from bot.core.thread import Origin, Thread  # noqa: E402
from bot.testing import cluster  # noqa: E402

LLM_DELAY = 0.2
KEYS = Keys()
GIVE_UP = 120.0  # seconds: a wait this long means the bench is broken (a worker died), not slow

T = TypeVar("T")


async def until(check: Callable[[], Awaitable[T]], every: float) -> T:
    """Await `check()` every `every` seconds until it is truthy; return that. The state is in
    Redis, shared with the worker processes, so it is polled; checked first, so a wait that
    is over costs one round trip, as timed."""
    deadline = time.monotonic() + GIVE_UP
    while True:
        if result := await check():
            return result
        if time.monotonic() > deadline:
            raise RuntimeError(f"gave up after {GIVE_UP:.0f} s waiting for {check}")
        await asyncio.sleep(every)


async def drained(redis: Redis) -> bool:
    return not await redis.xlen(KEYS.work())


def start_llm() -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen([sys.executable, "-m", "bot.testing.quick_llm", "--delay", str(LLM_DELAY)],
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout
    return proc, json.loads(proc.stdout.readline())["base_url"]


async def one_round(redis: Redis, store: RedisThreadStore, n: int, text: str = "hello") -> float:
    """Hand over n fresh threads at once; seconds until the last one's work is done."""
    threads = [await store.create(Origin(channel="bench"), [UserMessage(text=text, user="bench")]) for _ in range(n)]
    began = time.perf_counter()
    async with redis.pipeline(transaction=False) as pipe:
        for t in threads:
            pipe.xadd(KEYS.work(), {"thread": t.id})
        await pipe.execute()
    await until(partial(drained, redis), 0.005)
    elapsed = time.perf_counter() - began
    async with redis.pipeline(transaction=False) as pipe:
        for t in threads:
            pipe.lindex(KEYS.events(t.id), -1)
        last = await pipe.execute()
    wrong = sum(1 for raw in last if b'"done_for_now"' not in raw)
    assert not wrong, f"{wrong} of {n} threads did not finish with the model's answer"
    return elapsed


def env_for(redis_url: str, llm_url: str, workdir: Path, concurrency: int) -> dict[str, str]:
    return cluster.clean_env(REDIS_URL=redis_url, LLM_BASE_URL=llm_url, LLM_MODEL="bench", LLM_API_KEY="unused",
                             WORKER_CONCURRENCY=str(concurrency), DATA_DIR=str(workdir / "data"))


async def capacity(redis: Redis, store: RedisThreadStore, env: dict[str, str], workdir: Path, sizes: list[int]) -> None:
    print(f"\n1. live threads one worker carries (WORKER_CONCURRENCY={env['WORKER_CONCURRENCY']}, "
          f"model answers in {LLM_DELAY * 1000:.0f} ms)")
    worker = cluster.worker(env, workdir / "capacity.log")
    try:
        await one_round(redis, store, 20)  # warm up: imports, connections, BAML runtime
        for n in sizes:
            times = [await one_round(redis, store, n) for _ in range(3)]
            best, median = min(times), statistics.median(times)
            print(f"   {n:>4} threads: median {median * 1000:6.0f} ms (best {best * 1000:.0f}) -> "
                  f"{LLM_DELAY / median:.2f} of ideal, {n / median:6.0f} threads/s")
    finally:
        worker.kill()


async def sustained(redis: Redis, store: RedisThreadStore, env: dict[str, str], workdir: Path, sizes: list[int],
                    seconds: float = 6.0) -> None:
    print(f"\n1b. the same, sustained: N threads live at all times (a new one handed over as each finishes), "
          f"{seconds:.0f} s")
    worker = cluster.worker(env, workdir / "sustained.log")
    try:
        await one_round(redis, store, 20)
        for n in sizes:
            # Enough fresh threads for the fastest a worker can go (~400/s here), made up front.
            need = int(400 * (seconds + 2)) + n
            threads: list[Thread] = []
            for i in range(0, need, 50):
                threads += await asyncio.gather(*(
                    store.create(Origin(channel="bench"), [UserMessage(text="hello", user="bench")])
                    for _ in range(min(50, need - i))
                ))
            feed = Feed(redis, threads, n)
            await feed.run_for(2.0)  # reach the steady state
            finished, elapsed = await feed.run_for(seconds)
            rate, ideal = finished / elapsed, n / LLM_DELAY
            print(f"   {n:>4} live threads: {rate:6.0f} threads/s, ideal {ideal:5.0f} -> {rate / ideal:.2f} of ideal")
            await until(partial(drained, redis), 0.01)
    finally:
        worker.kill()


@dataclass
class Feed:
    """Keeps `live` threads handed over at all times, from `threads` (made up front)."""

    redis: Redis
    threads: list[Thread]
    live: int
    pushed: int = 0

    async def top_up(self) -> int:
        """Hand over fresh threads until `live` are queued; return how many finished so far."""
        backlog = await self.redis.xlen(KEYS.work())
        if backlog < self.live:
            async with self.redis.pipeline(transaction=False) as pipe:
                for t in self.threads[self.pushed:self.pushed + self.live - backlog]:
                    pipe.xadd(KEYS.work(), {"thread": t.id})
                await pipe.execute()
            self.pushed += self.live - backlog
        return self.pushed - backlog

    async def run_for(self, duration: float) -> tuple[int, float]:
        """Keep topping up for `duration` seconds: (threads finished meanwhile, seconds taken)."""
        began = time.perf_counter()
        first = last = await self.top_up()
        while time.perf_counter() - began < duration:
            await asyncio.sleep(0.005)
            last = await self.top_up()
        return last - first, time.perf_counter() - began


async def scaling(redis: Redis, store: RedisThreadStore, env: dict[str, str], workdir: Path, rounds: int) -> None:
    n, per_worker = 128, int(env["WORKER_CONCURRENCY"])
    print(f"\n2. two workers / one worker: {n} threads per round, WORKER_CONCURRENCY={per_worker} each")
    first = cluster.worker(env, workdir / "scaling-a.log")
    one: list[float] = []
    two: list[float] = []
    try:
        await one_round(redis, store, 20)
        for _ in range(rounds):  # alternate, so drift on a noisy machine hits both alike
            one.append(await one_round(redis, store, n))
            second = cluster.worker(env, workdir / "scaling-b.log")
            await one_round(redis, store, 8)
            two.append(await one_round(redis, store, n))
            second.terminate()
        ideal_one = -(-n // per_worker) * LLM_DELAY
        m1, m2 = statistics.median(one), statistics.median(two)
        print(f"   one worker:  median {m1 * 1000:.0f} ms per round (ideal {ideal_one * 1000:.0f}): "
              f"{[round(t * 1000) for t in one]}")
        print(f"   two workers: median {m2 * 1000:.0f} ms per round (ideal {ideal_one * 500:.0f}): "
              f"{[round(t * 1000) for t in two]}")
        print(f"   two / one throughput: {m1 / m2:.2f}")
    finally:
        first.kill()


async def takeover(redis: Redis, store: RedisThreadStore, env: dict[str, str], workdir: Path, trials: int,
                   verdict: bool = True) -> None:
    print(f"\n3. SIGKILL of the worker holding a thread -> another worker holds it ({trials} trials)")
    workers = [cluster.worker(env, workdir / f"takeover-{i}.log") for i in range(2)]
    times = []
    try:
        for _ in range(trials):
            thread = await store.create(Origin(channel="bench"), [UserMessage(text="hold on delay=2", user="bench")])
            await redis.xadd(KEYS.work(), {"thread": thread.id})
            lease = KEYS.lease(thread.id)
            owner = await until(partial(redis.get, lease), 0.005)
            await asyncio.sleep(0.5)  # mid-call to the model
            victim = next(i for i, w in enumerate(workers) if f"-{w.pid}-".encode() in owner)
            killed_at = time.perf_counter()
            workers[victim].kill()
            await until(partial(taken_over, redis, lease, owner), 0.005)
            times.append(time.perf_counter() - killed_at)
            workers[victim] = cluster.worker(env, workdir / f"takeover-{victim}.log")
            await until(partial(drained, redis), 0.01)
        print(f"   seconds: {[round(t, 2) for t in times]}")
        goal = " (goal: <= 5 s)" if verdict else ""  # none for a quick run: one kill proves nothing
        print(f"   median {statistics.median(times):.2f} s, max {max(times):.2f} s{goal}")
    finally:
        for w in workers:
            w.kill()


async def taken_over(redis: Redis, lease: str, owner: bytes) -> bool:
    """Someone other than `owner` holds the lease."""
    now = await redis.get(lease)
    return now is not None and now != owner


async def main(quick: bool, only: str | None) -> None:
    with tempfile.TemporaryDirectory(prefix="deploybot-bench-") as tmp:
        workdir = Path(tmp)
        server = cluster.RedisServer(workdir / "redis", appendfsync="everysec")  # the embedded default
        llm, llm_url = start_llm()
        redis = Redis.from_url(server.url)
        store = RedisThreadStore(redis)
        try:
            sizes = [50] if quick else [25, 50, 100, 200, 500]
            if only in (None, "capacity"):
                await capacity(redis, store, env_for(server.url, llm_url, workdir, 500), workdir, sizes)
                await sustained(redis, store, env_for(server.url, llm_url, workdir, 500), workdir,
                                sizes if quick else [10, *sizes], 1.0 if quick else 6.0)
            if only in (None, "scaling"):
                await scaling(redis, store, env_for(server.url, llm_url, workdir, 16), workdir, 1 if quick else 3)
            if only in (None, "takeover"):
                await takeover(redis, store, env_for(server.url, llm_url, workdir, 4), workdir, 1 if quick else 10,
                               verdict=not quick)
        finally:
            await redis.aclose()
            llm.kill()
            server.kill()


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="one size, one round, one kill")
    p.add_argument("--only", choices=["capacity", "scaling", "takeover"])
    args = p.parse_args()
    asyncio.run(main(args.quick, args.only))
