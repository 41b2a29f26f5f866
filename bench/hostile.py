"""Hostile HTTP against a real `python -m bot serve` (Slack, email and API_TOKEN on; its own
Redis, a local Slack Web API and a local SMTP server (aiosmtpd)). Traffic goes to 127.0.0.1 only.

1. Memory: the server's peak RSS while a 300 MB unsigned POST is sent to /slack/events,
   against its RSS before. Three ways of sending it: with its Content-Length; chunked (no
   Content-Length, no Slack headers); chunked with a fresh timestamp and a wrong signature
   (the one the server must read up to its limit before it can say no). Peak: VmHWM after
   resetting it (/proc/<pid>/clear_refs), and VmRSS sampled every 5 ms.
2. The event loop under hostile mail: /healthz latency p50/p99 while emails of 20,000 MIME
   parts, and emails with 100,000 References, are POSTed to /email/inbound (two senders,
   back to back, each with its own Message-ID, for --seconds or --emails, whichever comes
   first), as a ratio to /healthz latency with no load in the same run.

    python bench/hostile.py [--seconds 10] [--emails 2000]
    python bench/hostile.py --quick    # 20 MB, 1 s and 20 emails: seconds, to see that it still runs

Every loop is bounded in count and in time.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import statistics
import sys
import tempfile
import threading
import time
from email.utils import formatdate
from pathlib import Path

import httpx
from aiosmtpd.controller import Controller

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bot.testing import cluster  # noqa: E402
from bot.testing.fake_slack import FakeSlack  # noqa: E402

MB = 1024 * 1024
HOSTILE_BYTES = 300 * MB
TOKEN = "bench-api-token"
INBOUND = "bench-inbound-secret"
GIVE_UP = 120.0  # seconds for any one send or wait: longer means the bench is broken


# --- the server -----------------------------------------------------------------------------

class Sink:
    async def handle_DATA(self, server, session, envelope) -> str:  # noqa: N802 (aiosmtpd's name)
        return "250 OK"


def start(data: Path) -> tuple[cluster.BotProcess, int, list]:
    redis = cluster.RedisServer(data / "redis", appendfsync="everysec")
    slack = FakeSlack().start()
    smtp_port = cluster.free_port()
    smtp = Controller(Sink(), hostname="127.0.0.1", port=smtp_port)
    smtp.start()
    port = cluster.free_port()
    env = cluster.clean_env(
        REDIS_URL=redis.url, PORT=str(port), HOST="127.0.0.1", DATA_DIR=str(data / "bot"),
        GIT_REPO=str(cluster.make_repo(data / "repo")), API_TOKEN=TOKEN, LOG_LEVEL="WARNING",
        SLACK_BOT_TOKEN="xoxb-bench", SLACK_SIGNING_SECRET="bench-signing-secret", SLACK_API_URL=slack.base_url,
        SMTP_HOST="127.0.0.1", SMTP_PORT=str(smtp_port), SMTP_TLS="none", EMAIL_FROM="deploybot@example.com",
        INBOUND_EMAIL_SECRET=INBOUND, EMAIL_REPLY_SECRET="bench-reply-secret",
        EMAIL_ALLOWED_SENDERS="alice@example.com",
    )
    server = cluster.web(env, data / "serve.log", "--no-worker")
    return server, port, [redis.kill, slack.stop, smtp.stop]


def status_kb(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise RuntimeError(f"no {field} in /proc/{pid}/status")


def reset_peak(pid: int) -> bool:
    """Reset VmHWM to the current RSS (Linux 4.0+); False where that is not allowed."""
    try:
        Path(f"/proc/{pid}/clear_refs").write_text("5")
        return True
    except OSError:
        return False


# --- 1. a 300 MB unsigned POST to /slack/events -----------------------------------------

def body_pieces(chunked: bool, total: int, piece: int = MB) -> list[bytes]:
    data = b"x" * piece
    framed = b"%x\r\n%s\r\n" % (piece, data) if chunked else data
    return [framed] * (total // piece)  # the same object 300 times: no 300 MB here


def send_hostile(port: int, headers: dict[str, str], chunked: bool, total: int) -> tuple[str, int, float]:
    """Send the head and up to 300 MB; stop when the server stops taking it. Returns (the
    answer's status line, or how the connection ended; body bytes sent; seconds)."""
    lines = ["POST /slack/events HTTP/1.1", "Host: 127.0.0.1", "Content-Type: application/json",
             *(f"{k}: {v}" for k, v in headers.items()),
             "Transfer-Encoding: chunked" if chunked else f"Content-Length: {total}"]
    began = time.perf_counter()
    sent = 0
    with socket.create_connection(("127.0.0.1", port), timeout=GIVE_UP) as s:
        s.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
        ended = "sent all"
        for piece in body_pieces(chunked, total):
            if time.perf_counter() - began > GIVE_UP:
                ended = "gave up sending"
                break
            try:
                s.sendall(piece)
            except OSError as e:
                ended = f"server stopped reading ({type(e).__name__})"
                break
            sent += MB
        if chunked and ended == "sent all":
            s.sendall(b"0\r\n\r\n")
        answer = b""
        try:
            while len(answer) < 65536 and (data := s.recv(65536)):
                answer += data
                if b"\r\n\r\n" in answer:
                    break
        except (ConnectionResetError, TimeoutError):
            pass
    status = answer.split(b"\r\n", 1)[0].decode() if answer else f"no answer ({ended})"
    return f"{status}; {ended}", sent, time.perf_counter() - began


def sample(pid: int, into: list[int], stop: threading.Event) -> None:
    """VmRSS every 5 ms into `into` until `stop`; bounded to GIVE_UP seconds of samples."""
    for _ in range(int(GIVE_UP / 0.005)):
        if stop.is_set():
            return
        into.append(status_kb(pid, "VmRSS"))
        time.sleep(0.005)


def memory(pid: int, port: int, total: int = HOSTILE_BYTES) -> None:
    variants = [
        (f"Content-Length: {total // MB} MB, no Slack headers", {}, False),
        ("chunked, no Content-Length, no Slack headers", {}, True),
        ("chunked, fresh timestamp, wrong signature",
         {"X-Slack-Request-Timestamp": str(int(time.time())), "X-Slack-Signature": "v0=" + "0" * 64}, True),
    ]
    print(f"1. Server memory while a {total // MB} MB unsigned POST is sent to /slack/events")
    print(f"   RSS after start: {status_kb(pid, 'VmRSS') / 1024:.0f} MB "
          f"(peak so far, start-up included: {status_kb(pid, 'VmHWM') / 1024:.0f} MB)")
    for name, headers, chunked in variants:
        httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=10)
        before = status_kb(pid, "VmRSS")
        resettable = reset_peak(pid)
        sampled = [before]
        stop = threading.Event()

        sampler = threading.Thread(target=sample, args=(pid, sampled, stop), daemon=True)
        sampler.start()
        answer, sent, seconds = send_hostile(port, headers, chunked, total)
        time.sleep(0.2)  # let the server finish with the request before the last samples
        stop.set()
        sampler.join()
        peak = status_kb(pid, "VmHWM") if resettable else max(sampled)
        healthy = httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=10).status_code
        print(f"   {name}:")
        print(f"     answer: {answer}; body bytes the client got to send: {sent / MB:.0f} MB in {seconds:.2f} s")
        print(f"     RSS before {before / 1024:.0f} MB, peak {peak / 1024:.0f} MB "
              f"({'VmHWM after reset' if resettable else 'sampled VmRSS'}; sampled max "
              f"{max(sampled) / 1024:.0f} MB), +{(peak - before) / 1024:.0f} MB; /healthz then: {healthy}")


# --- 2. /healthz under hostile mail ------------------------------------------------------

def many_parts(n: int, parts: int = 20_000) -> bytes:
    head = (f"From: Mallory <mallory@evil.example>\r\nTo: deploybot@example.com\r\nSubject: parts {n}\r\n"
            f"Date: {formatdate()}\r\nMessage-ID: <MSGID@evil.example>\r\nMIME-Version: 1.0\r\n"
            'Content-Type: multipart/mixed; boundary="b"\r\n\r\n')
    part = "--b\r\nContent-Type: text/plain\r\n\r\nx\r\n"
    return (head + part * parts + "--b--\r\n").encode()


def many_references(n: int, count: int = 100_000) -> bytes:
    def base36(i: int) -> str:
        digits = ""
        while True:
            i, d = divmod(i, 36)
            digits = "0123456789abcdefghijklmnopqrstuvwxyz"[d] + digits
            if not i:
                return digits

    ids = [f"<{base36(i)}@x>" for i in range(count)]
    folded = "\r\n ".join(" ".join(ids[i:i + 8]) for i in range(0, count, 8))
    return (f"From: Mallory <mallory@evil.example>\r\nTo: deploybot@example.com\r\nSubject: refs {n}\r\n"
            f"Date: {formatdate()}\r\nMessage-ID: <MSGID@evil.example>\r\n"
            f"In-Reply-To: <0@x>\r\nReferences: {folded}\r\n\r\ndeploy please\r\n").encode()


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(p / 100 * len(ordered)))]


async def probe(client: httpx.AsyncClient, until: asyncio.Event, samples: int) -> list[float]:
    """/healthz one after another, 10 ms apart, until `until` is set or `samples` are taken."""
    latencies: list[float] = []
    for _ in range(samples):
        if until.is_set():
            break
        began = time.perf_counter()
        r = await client.get("/healthz")
        latencies.append(time.perf_counter() - began)
        assert r.status_code == 200, r.text
        await asyncio.sleep(0.01)
    return latencies


async def event_loop(port: int, emails: int, seconds: float, idle_samples: int = 300) -> None:
    print("2. /healthz latency while hostile emails are POSTed to /email/inbound (2 senders, back to back)")
    kinds = [many_parts(0), many_references(1)]
    print(f"   alternately 20,000 MIME parts ({len(kinds[0]) / 1000:.0f} KB) and 100,000 References "
          f"({len(kinds[1]) / 1000:.0f} KB), each with its own Message-ID, for {seconds:.0f} s or {emails} emails")
    timeout = httpx.Timeout(GIVE_UP)
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=timeout) as health, \
            httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=timeout) as sender:
        for _ in range(20):  # warm up the connection and the route
            await health.get("/healthz")
        idle = await probe(health, asyncio.Event(), idle_samples)

        done = asyncio.Event()
        answers: dict[str, int] = {}
        numbers = iter(range(emails))
        began = time.perf_counter()

        async def send() -> None:
            while time.perf_counter() - began < seconds and (n := next(numbers, None)) is not None:
                raw = kinds[n % 2].replace(b"MSGID", f"hostile-{n}-{began}".encode())
                r = await sender.post("/email/inbound", content=raw,
                                      headers={"Authorization": f"Bearer {INBOUND}", "Content-Type": "message/rfc822"})
                key = f"{r.status_code} {r.json().get('status', r.json().get('detail', ''))}"[:60]
                answers[key] = answers.get(key, 0) + 1

        async def senders() -> None:
            try:
                await asyncio.gather(send(), send())
            finally:
                done.set()

        loaded, _ = await asyncio.gather(probe(health, done, 100_000), senders())
        took = time.perf_counter() - began
    ms_idle, ms_load = [x * 1000 for x in idle], [x * 1000 for x in loaded]
    print(f"   sent {sum(answers.values())} in {took:.1f} s; answers: {answers}")
    print(f"   no load:   /healthz p50 {percentile(ms_idle, 50):.2f} ms, p99 {percentile(ms_idle, 99):.2f} ms "
          f"({len(ms_idle)} requests)")
    print(f"   under it:  /healthz p50 {percentile(ms_load, 50):.2f} ms, p99 {percentile(ms_load, 99):.2f} ms, "
          f"max {max(ms_load):.0f} ms, mean {statistics.mean(ms_load):.1f} ms ({len(ms_load)} requests)")
    print(f"   ratio (under load / no load): p50 x{percentile(ms_load, 50) / percentile(ms_idle, 50):.1f}, "
          f"p99 x{percentile(ms_load, 99) / percentile(ms_idle, 99):.1f}")


def main() -> None:
    args = argparse.ArgumentParser()
    args.add_argument("--seconds", type=float, default=10, help="how long part 2 sends hostile emails")
    args.add_argument("--emails", type=int, default=2000, help="at most this many hostile emails in part 2")
    args.add_argument("--quick", action="store_true", help="a 20 MB POST, then 1 s or 20 emails, 30 idle samples")
    opts = args.parse_args()
    if opts.quick:
        opts.seconds, opts.emails = min(opts.seconds, 1), min(opts.emails, 20)
    data = Path(tempfile.mkdtemp(prefix="hostile-"))
    server, port, stops = start(data)
    try:
        print(f"python -m bot serve --no-worker (pid {server.pid}); {os.cpu_count()} cores")
        memory(server.pid, port, 20 * MB if opts.quick else HOSTILE_BYTES)
        asyncio.run(event_loop(port, opts.emails, opts.seconds, 30 if opts.quick else 300))
    finally:
        server.kill()
        for stop in stops:
            stop()


if __name__ == "__main__":
    main()
