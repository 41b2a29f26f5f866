"""CPU per run (issue 29): a real `python -m bot serve --no-worker`, one `python -m bot worker`
and a Redis server, each a process of its own; N exact-command "list tags" threads started
through the HTTP API (POST /threads, the shared API token) at concurrency 20, then waited for
until every one is run (the work stream is empty and each thread's last event is the bot's
answer). The figures come from the processes themselves: /proc/PID/stat utime+stime of the
worker and of the web process, from just before the load to its end; so the load generator,
Redis and the waiting cost nothing in them.

    python bench/run_cost.py [--n 1000] [--rounds 3]
    python bench/run_cost.py --baseline /work/wt/b59112c   # the same load against another checkout
                                                         # (with its own .venv), rounds alternating
    python bench/run_cost.py --quick                     # 100 threads, one round: to see that it runs

The other checkout is run with its own interpreter (DIR/.venv/bin/python, cwd DIR); only
environment variables both read are set (REDIS_URL, GIT_REPO, PORT, HOST, API_TOKEN, DATA_DIR).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import httpx  # noqa: E402
from redis.asyncio import Redis  # noqa: E402

from bot.adapters.redis.keys import Keys  # noqa: E402
from bot.testing import cluster  # noqa: E402

HERE = Path(__file__).resolve().parent.parent
CONCURRENCY = 20
TOKEN = "bench-token"
KEYS = Keys()
GIVE_UP = 300.0  # seconds: a wait this long means a process died, not that it is slow
TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """utime + stime of a process, from /proc (fields 14 and 15, after the command's ")")."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    fields = stat[stat.rindex(")") + 2:].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


@dataclass
class Checkout:
    """A deploybot checkout with its own .venv: its serve and worker processes."""

    root: Path
    label: str
    worker_ms: list[float] = field(default_factory=list)  # CPU per run, one figure per round
    web_ms: list[float] = field(default_factory=list)  # CPU per request
    rate: list[float] = field(default_factory=list)  # runs per second

    @property
    def python(self) -> str:
        own = self.root / ".venv" / "bin" / "python"
        return str(own) if own.exists() else sys.executable

    def start(self, args: list[str], env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
        return subprocess.Popen([self.python, "-m", "bot", *args], cwd=self.root, env=env,
                                stdout=log.open("ab"), stderr=subprocess.STDOUT, start_new_session=True)


def wait_for(check, what: str, proc: subprocess.Popen[bytes], log: Path, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if proc.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"{what}: {log.read_text()[-3000:]}")
        time.sleep(0.05)


def healthy(url: str) -> bool:
    try:
        return httpx.get(f"{url}/healthz", timeout=1).status_code == 200
    except httpx.TransportError:
        return False


async def launch(client: httpx.AsyncClient, n: int) -> list[str]:
    """POST n "list tags" threads, CONCURRENCY at a time: their ids."""
    ids: list[str] = []
    todo = iter(range(n))

    async def one_client() -> None:
        for _ in todo:
            r = await client.post("/threads", json={"message": "list tags", "user": "bench"})
            r.raise_for_status()
            ids.append(r.json()["id"])

    await asyncio.gather(*(one_client() for _ in range(CONCURRENCY)))
    return ids


async def all_run(redis: Redis, ids: list[str]) -> bool:
    if await redis.xlen(KEYS.work()):
        return False
    async with redis.pipeline(transaction=False) as pipe:
        for thread_id in ids:
            pipe.lindex(KEYS.events(thread_id), -1)
        last = await pipe.execute()
    return all(raw and b'"type":"done_for_now"' in raw for raw in last)


async def load(url: str, redis_url: str, n: int) -> float:
    """Start n threads through the API and wait until all are run: seconds taken."""
    redis = Redis.from_url(redis_url)
    began = time.perf_counter()
    try:
        async with httpx.AsyncClient(base_url=url, headers={"Authorization": f"Bearer {TOKEN}"},
                                     timeout=60) as client:
            ids = await launch(client, n)
        deadline = time.monotonic() + GIVE_UP
        while not await all_run(redis, ids):
            if time.monotonic() > deadline:
                raise RuntimeError(f"gave up after {GIVE_UP:.0f} s waiting for the runs")
            await asyncio.sleep(0.01)
        return time.perf_counter() - began
    finally:
        await redis.aclose()


def one_round(checkout: Checkout, n: int, workdir: Path) -> None:
    """Fresh Redis, serve and worker of `checkout`; a warm-up, then the measured load."""
    here = workdir / f"{checkout.label}-{len(checkout.worker_ms)}"
    server = cluster.RedisServer(here / "redis", appendfsync="everysec")  # the embedded default
    repo = cluster.make_repo(here / "repo")
    port = cluster.free_port()
    env = cluster.clean_env(REDIS_URL=server.url, GIT_REPO=str(repo), PORT=str(port), HOST="127.0.0.1",
                            API_TOKEN=TOKEN, DATA_DIR=str(here / "data"), LOG_LEVEL="WARNING",
                            PYTHONPATH=str(checkout.root))
    url = f"http://127.0.0.1:{port}"
    web = checkout.start(["serve", "--no-worker"], env, here / "web.log")
    worker = checkout.start(["worker"], env, here / "worker.log")
    try:
        wait_for(lambda: healthy(url), "serve did not become healthy", web, here / "web.log")
        asyncio.run(load(url, server.url, 50))  # warm up: imports, connections, first runs
        web0, worker0 = cpu_seconds(web.pid), cpu_seconds(worker.pid)
        seconds = asyncio.run(load(url, server.url, n))
        web1, worker1 = cpu_seconds(web.pid), cpu_seconds(worker.pid)
    finally:
        for proc in (web, worker):
            proc.kill()
            proc.wait()
        server.kill()
    checkout.worker_ms.append((worker1 - worker0) * 1000 / n)
    checkout.web_ms.append((web1 - web0) * 1000 / n)
    checkout.rate.append(n / seconds)
    print(f"   {checkout.label:>9}: worker {checkout.worker_ms[-1]:.2f} ms CPU per run, "
          f"web {checkout.web_ms[-1]:.2f} ms CPU per request, {checkout.rate[-1]:.0f} runs/s", flush=True)


def report(c: Checkout) -> tuple[float, float]:
    worker, web = statistics.median(c.worker_ms), statistics.median(c.web_ms)
    print(f"{c.label:>11}: median worker {worker:.2f} ms CPU per run, web {web:.2f} ms CPU per request, "
          f"{statistics.median(c.rate):.0f} runs/s ({c.root})")
    return worker, web


def main(n: int, rounds: int, baseline: Path | None) -> None:
    checkouts = [Checkout(HERE, "this")]
    if baseline is not None:
        checkouts.insert(0, Checkout(baseline.resolve(), "baseline"))
    print(f"{n} exact-command 'list tags' threads through POST /threads, {CONCURRENCY} at a time; "
          f"{rounds} round(s){', alternating' if baseline else ''}")
    with tempfile.TemporaryDirectory(prefix="deploybot-run-cost-") as tmp:
        for r in range(rounds):
            # alternate which goes first, so drift on a shared machine hits both alike
            for c in (checkouts if r % 2 == 0 else checkouts[::-1]):
                one_round(c, n, Path(tmp))
    figures = [report(c) for c in checkouts]
    if baseline is not None:
        (base_worker, base_web), (worker, web) = figures
        print(f"this / baseline: worker CPU per run {worker / base_worker:.2f} (goal <= 0.5), "
              f"web CPU per request {web / base_web:.2f} (goal <= 0.6)")


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="100 threads, one round, no baseline")
    p.add_argument("--n", type=int, default=1000, help="threads per round (default 1000)")
    p.add_argument("--rounds", type=int, default=3, help="rounds per checkout (default 3)")
    p.add_argument("--baseline", type=Path, help="another checkout (with its own .venv) to run the same load against")
    args = p.parse_args()
    if args.quick:
        main(100, 1, None)
    else:
        main(args.n, args.rounds, args.baseline)
