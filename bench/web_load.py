"""Many requests at once on one web process: `python -m bot serve --no-worker` on its own
Redis (idle but for the web), asked --requests requests all at once (four reads of the
threads list or a thread for each launch of a thread), from one client with a connection of
its own per request. Prints the share answered 5xx (the promise: none), and the time to the
last answer.

    python bench/web_load.py [--requests 2000] [--connections 200]   # REDIS_WEB_CONNECTIONS
    python bench/web_load.py --quick    # 200 requests: seconds, to see that it still runs
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import httpx  # noqa: E402

from bot.testing import cluster  # noqa: E402


async def burst(base: str, requests: int) -> tuple[Counter[int | str], float]:
    limits = httpx.Limits(max_connections=requests, max_keepalive_connections=requests)
    async with httpx.AsyncClient(base_url=base, limits=limits, timeout=120) as client:
        first = await client.post("/threads", json={"message": "list tags", "user": "bench"})
        first.raise_for_status()
        thread = first.json()["id"]

        async def one(i: int) -> int | str:
            try:
                if i % 5 == 0:
                    r = await client.post("/threads", json={"message": f"list tags #{i}", "user": "bench"})
                else:
                    r = await client.get(f"/threads/{thread}" if i % 2 else "/threads")
            except httpx.TransportError as e:
                return type(e).__name__  # no answer at all: counted apart from the 5xx
            return r.status_code

        began = time.monotonic()
        statuses = Counter(await asyncio.gather(*(one(i) for i in range(requests))))
        return statuses, time.monotonic() - began


def main(requests: int, connections: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        redis = cluster.RedisServer(workdir / "redis", appendfsync="everysec")
        port = cluster.free_port()
        env = cluster.clean_env(REDIS_URL=redis.url, PORT=str(port), DATA_DIR=str(workdir / "data"),
                                REDIS_WEB_CONNECTIONS=str(connections), LOG_LEVEL="WARNING",
                                GIT_REPO=str(cluster.make_repo(workdir / "repo")))
        web = cluster.web(env, workdir / "web.log", "--no-worker")
        try:
            statuses, took = asyncio.run(burst(f"http://127.0.0.1:{port}", requests))
        finally:
            web.terminate()
            redis.kill()
    failed = sum(n for status, n in statuses.items() if isinstance(status, int) and status >= 500)
    unanswered = sum(n for status, n in statuses.items() if isinstance(status, str))
    print(f"{requests} requests at once on one web (REDIS_WEB_CONNECTIONS={connections}):")
    print(f"  5xx: {failed} ({100 * failed / requests:.1f} %), no answer: {unanswered}, "
          f"answers: {dict(sorted(statuses.items(), key=str))}")
    print(f"  last answer after {took:.2f} s")


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--requests", type=int, default=2000)
    p.add_argument("--connections", type=int, default=200, help="REDIS_WEB_CONNECTIONS")
    p.add_argument("--quick", action="store_true", help="200 requests")
    args = p.parse_args()
    main(200 if args.quick else args.requests, args.connections)
