"""Ack latency of signed `app_mention` requests at a fixed rate, against a real
`python -m bot serve` process (its own Redis, a local Slack Web API and model server).

    python bench/slack_ack.py [--rate 200] [--seconds 10]
    python bench/slack_ack.py --quick    # 50/s for 1 s: seconds, to see that it still runs

Open loop: request i is due at start + i/rate whatever happened before it, and its latency
is measured from that due time, so a stall counts against every request it delays.
Each mention starts a real thread: stored, answered by the model stand-in, posted to Slack.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import aiohttp
import httpx
from slack_sdk.signature import SignatureVerifier

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bot.adapters.redis import embedded as embedded_redis  # noqa: E402
from bot.testing.fake_slack import BOT_USER  # noqa: E402

SECRET = "bench-signing-secret"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def signed(body: str) -> dict[str, str]:
    ts = str(int(time.time()))
    return {
        "Content-Type": "application/json",
        "X-Slack-Request-Timestamp": ts,
        "X-Slack-Signature": SignatureVerifier(SECRET).generate_signature(timestamp=ts, body=body),
    }


def mention(i: int) -> str:
    ts = f"1800000000.{i:06d}"
    return json.dumps({
        "type": "event_callback", "team_id": "T1", "api_app_id": "A1", "event_id": f"EvBench{i}",
        "event_time": int(time.time()),
        "event": {"type": "app_mention", "user": "UALICE", "text": f"<@{BOT_USER}> status please",
                  "ts": ts, "channel": "CBENCH", "event_ts": ts},
    })


async def load(url: str, rate: float, seconds: float) -> tuple[list[float], int]:
    latencies: list[float] = []
    failures = 0
    count = int(rate * seconds)
    # Sign everything up front (valid for 5 minutes) so the generator spends its time sending.
    bodies = [mention(i) for i in range(count + 1)]
    requests = [(body, signed(body)) for body in bodies]
    connector = aiohttp.TCPConnector(limit=200)
    async with aiohttp.ClientSession(url, connector=connector) as client:
        # Warm up: the first request pays for auth.test and connection set-up.
        async with client.post("/slack/events", data=requests[0][0], headers=requests[0][1]):
            pass
        start = time.perf_counter() + 0.2

        async def one(i: int) -> None:
            nonlocal failures
            due = start + i / rate
            await asyncio.sleep(max(0.0, due - time.perf_counter()))
            body, headers = requests[i]
            try:
                async with client.post("/slack/events", data=body, headers=headers) as r:
                    await r.read()
                    if r.status != 200:
                        failures += 1
                        return
            except aiohttp.ClientError:
                failures += 1
                return
            latencies.append(time.perf_counter() - due)

        await asyncio.gather(*(one(i) for i in range(1, count + 1)))
    return latencies, failures


def slack_calls(stand_ins: subprocess.Popen) -> dict[str, int]:
    stand_ins.stdin.write("count\n")
    stand_ins.stdin.flush()
    return json.loads(stand_ins.stdout.readline())


def wait_for_replies(stand_ins: subprocess.Popen, replies: int, timeout: float = 120) -> float:
    """When every thread had its reply posted: under load, agent runs queue behind acks."""
    deadline = time.perf_counter() + timeout
    while slack_calls(stand_ins).get("chat.postMessage", 0) < replies and time.perf_counter() < deadline:
        time.sleep(0.1)
    return time.perf_counter()


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process, from /proc (Linux)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(p / 100 * len(ordered)))]


def main() -> None:
    args = argparse.ArgumentParser()
    args.add_argument("--rate", type=float, default=200)
    args.add_argument("--seconds", type=float, default=10)
    args.add_argument("--concurrency", type=int, default=4, help="WORKER_CONCURRENCY of the server")
    args.add_argument("--workers", type=int, default=0,
                      help="worker processes; with any, the server runs `serve --no-worker`")
    args.add_argument("--quick", action="store_true", help="50 requests a second for 1 s")
    opts = args.parse_args()
    if opts.quick:
        opts.rate, opts.seconds = 50, 1

    data = Path(tempfile.mkdtemp())
    stand_ins = subprocess.Popen([sys.executable, str(ROOT / "bench" / "stand_ins.py")],
                                 stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    urls = json.loads(stand_ins.stdout.readline())
    port = free_port()
    env = {
        **os.environ, "PORT": str(port), "REDIS_URL": embedded_redis.ensure_running(data / "redis"),
        "DATA_DIR": str(data), "LLM_BASE_URL": urls["llm"], "LLM_MODEL": "fake",
        "SLACK_BOT_TOKEN": "xoxb-bench", "SLACK_SIGNING_SECRET": SECRET, "SLACK_API_URL": urls["slack"],
        "LOG_LEVEL": "WARNING", "WORKER_CONCURRENCY": str(opts.concurrency), "API_TOKEN": "bench-token",
    }
    serve = ["serve", "--no-worker"] if opts.workers else ["serve"]
    server = subprocess.Popen([sys.executable, "-m", "bot", *serve], env=env, cwd=ROOT,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    workers = [subprocess.Popen([sys.executable, "-m", "bot", "worker"], env=env, cwd=ROOT,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
               for _ in range(opts.workers)]
    try:
        url = f"http://127.0.0.1:{port}"
        for _ in range(200):
            if server.poll() is not None:
                raise SystemExit(f"the server exited: {server.stderr.read()}")
            try:
                if httpx.get(f"{url}/healthz").status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.05)
        server_before, me_before = cpu_seconds(server.pid), cpu_seconds(os.getpid())
        latencies, failures = asyncio.run(load(url, opts.rate, opts.seconds))
        sent = int(opts.rate * opts.seconds)
        load_end = time.perf_counter()
        drained = wait_for_replies(stand_ins, sent + 1)
        server_cpu = cpu_seconds(server.pid) - server_before
        client_cpu = cpu_seconds(os.getpid()) - me_before
        posted = slack_calls(stand_ins).get("chat.postMessage", 0)
        print(f"{sent} signed app_mention requests at {opts.rate:.0f}/s for {opts.seconds:.0f} s")
        print(f"answered 200: {len(latencies)}, failed or dropped: {failures}")
        ms = [x * 1000 for x in latencies]
        print(f"ack latency p50 {percentile(ms, 50):.1f} ms, p99 {percentile(ms, 99):.1f} ms, "
              f"max {max(ms):.1f} ms, mean {statistics.mean(ms):.1f} ms")
        print(f"every thread answered in Slack {drained - load_end:.1f} s after the load ended "
              f"({posted} replies posted for {sent + 1} mentions)")
        what = "the ack only; agent runs are in worker processes" if workers else "ack + the whole agent run"
        print(f"CPU per mention: server {server_cpu / sent * 1000:.1f} ms ({what}), "
              f"load generator {client_cpu / sent * 1000:.1f} ms; {os.cpu_count()} cores")
    finally:
        for process in [server, *workers]:
            process.terminate()
            process.wait()
        stand_ins.kill()
        embedded_redis.stop(data / "redis")


if __name__ == "__main__":
    main()
