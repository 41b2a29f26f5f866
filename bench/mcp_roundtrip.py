"""Round trip of an MCP tool call, as an agent sees it: the official SDK's client against a
real `python -m bot serve` on its own embedded Redis (Streamable HTTP at /mcp, the agent's
token checked by the front door on every request), directly and through a spawned `python -m
bot mcp` (the stdio bridge to /mcp, started with the agent's token and the server's address
only).

    python bench/mcp_roundtrip.py [--calls 200] [--quick]

`list_services` reads nothing but the configuration: the transport and the SDK. `get_thread`
loads a thread and renders its transcript (only an agent's first look is recorded on it).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import httpx2
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bot.adapters.redis import embedded as embedded_redis  # noqa: E402

CONFIG = """
[people.alice]
slack = "UALICE"

[environments.production]
protected = true
approvers = ["alice"]

[agents.bench-agent]
owner = "alice"
max_open = 1000
max_per_hour = 1000
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def timed(client: Client, calls: int, tool: str, arguments: dict) -> list[float]:
    took = []
    for _ in range(calls):
        started = time.perf_counter()
        result = await client.call_tool(tool, arguments)
        took.append((time.perf_counter() - started) * 1000)
        assert not result.is_error, result.content
    return took


def line(transport: str, tool: str, took: list[float]) -> str:
    ordered = sorted(took)
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
    return f"{transport:6} {tool:14} calls {len(took):4}  p50 {statistics.median(took):6.1f} ms  p99 {p99:6.1f} ms"


async def measure(client: Client, transport: str, calls: int) -> list[str]:
    await timed(client, 3, "list_services", {})  # warm up
    lines = [line(transport, "list_services", await timed(client, calls, "list_services", {}))]
    asked = await client.call_tool("request_deploy", {"service": "backend", "tag": "v1.0.0",
                                                      "environment": "production", "reason": "bench"})
    thread_id = asked.structured_content["thread_id"]
    lines.append(line(transport, "get_thread", await timed(client, calls, "get_thread", {"thread_id": thread_id})))
    return lines


async def clients(port: int, token: str, calls: int) -> list[str]:
    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}) as http:
        async with Client(streamable_http_client(f"http://127.0.0.1:{port}/mcp", http_client=http)) as c:
            lines = await measure(c, "http", calls)
    agent = {"PATH": os.environ["PATH"], "HOME": os.environ.get("HOME", "/"), "DEPLOYBOT_TOKEN": token,
             "DEPLOYBOT_URL": f"http://127.0.0.1:{port}"}  # never the store's: docs/agents.md
    stdio = StdioServerParameters(command=sys.executable, args=["-m", "bot", "mcp"], cwd=str(ROOT), env=agent)
    async with Client(stdio) as c:
        lines += await measure(c, "stdio", calls)
    return lines


def main(calls: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp)
        (data / "deploybot.toml").write_text(CONFIG)
        port = free_port()
        env = {
            **{k: v for k, v in os.environ.items() if not k.startswith(("LLM_", "OPENAI_", "ANTHROPIC_", "SLACK_"))},
            "PORT": str(port), "REDIS_URL": embedded_redis.ensure_running(data / "redis"),
            "DATA_DIR": str(data / "data"), "DEPLOYBOT_CONFIG": str(data / "deploybot.toml"),
            "API_TOKEN": "bench-api-token", "LOG_LEVEL": "WARNING",
        }
        token = subprocess.run([sys.executable, "-m", "bot", "tokens", "create", "--agent", "bench-agent"],
                               env=env, cwd=ROOT, capture_output=True, text=True, check=True).stdout.strip()
        server = subprocess.Popen([sys.executable, "-m", "bot", "serve"], env=env, cwd=ROOT,
                                  stderr=subprocess.DEVNULL)
        try:
            deadline = time.monotonic() + 30
            while True:
                try:
                    if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                assert time.monotonic() < deadline, "serve did not become healthy"
                time.sleep(0.05)
            lines = asyncio.run(clients(port, token, calls))
        finally:
            server.terminate()
            server.wait(10)
            embedded_redis.stop(data / "redis")
    print("\n".join(lines))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--quick", action="store_true", help="20 calls each: a smoke run")
    args = parser.parse_args()
    main(20 if args.quick else args.calls)
