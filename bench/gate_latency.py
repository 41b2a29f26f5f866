"""From a GitHub `deployment_protection_rule` delivery to the approval request in Slack: a
real `python -m bot serve` (web and worker) on its own embedded Redis, the GitHub and Slack
stand-ins (bot/testing), signed deliveries posted one after another.

    python bench/gate_latency.py [--deliveries 30] [--quick]

Each delivery is timed from the POST to /github/webhook until the Slack stand-in has the
approval request of its run (the rule's notify channel): signature, thread, the deploy path's
checks (tag, lock, freezes, change preview), the approval request and its Slack message.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bot.adapters.channels.github.webhook import signature  # noqa: E402
from bot.adapters.redis import embedded as embedded_redis  # noqa: E402
from bot.testing.fake_github import FakeGitHub  # noqa: E402
from bot.testing.fake_slack import FakeSlack  # noqa: E402

SECRET = "bench-webhook-secret"
CONFIG = """
[people.alice]
slack = "UALICE"

[environments.production]
protected = true
approvers = ["alice"]

[services.app]
github = "acme/app"

[[github_environments]]
repository = "acme/app"
github_environment = "production"
environment = "production"
notify = ["slack:C0BENCH"]
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_healthy(port: int) -> None:
    deadline = time.monotonic() + 180
    while True:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200:
                return
        except httpx.TransportError:
            pass
        assert time.monotonic() < deadline, "serve did not become healthy"
        time.sleep(0.05)


def one(port: int, github: FakeGitHub, slack: FakeSlack, n: int) -> float:
    payload = github.protection_rule("production", f"{n + 1:040x}")
    run = payload["deployment_callback_url"].split("/")[-2]
    body = json.dumps(payload).encode()
    started = time.perf_counter()
    answer = httpx.post(f"http://127.0.0.1:{port}/github/webhook", content=body, headers={
        "Content-Type": "application/json", "X-GitHub-Event": "deployment_protection_rule",
        "X-GitHub-Delivery": str(uuid.uuid4()), "X-Hub-Signature-256": signature(SECRET, body)})
    assert answer.status_code == 200, answer.text
    deadline = time.monotonic() + 30
    while not [m for m in slack.matching("chat.postMessage", channel="C0BENCH", text="Approval needed")
               if f"runs/{run}" in json.dumps(m)]:
        assert time.monotonic() < deadline, f"no approval request for run {run}"
        time.sleep(0.002)
    return (time.perf_counter() - started) * 1000


def main(deliveries: int) -> None:
    github, slack = FakeGitHub(repository="acme/app", tags=[]).start(), FakeSlack().start()
    key = github.app_key()
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp)
        (data / "deploybot.toml").write_text(CONFIG)
        port = free_port()
        env = {
            **{k: v for k, v in os.environ.items() if not k.startswith(("LLM_", "OPENAI_", "ANTHROPIC_", "SLACK_"))},
            "PORT": str(port), "REDIS_URL": embedded_redis.ensure_running(data / "redis"),
            "DATA_DIR": str(data / "data"), "DEPLOYBOT_CONFIG": str(data / "deploybot.toml"), "LOG_LEVEL": "WARNING",
            "API_TOKEN": "bench-api-token",
            "GITHUB_WEBHOOK_SECRET": SECRET, "GITHUB_APP_ID": str(github.app_id), "GITHUB_APP_PRIVATE_KEY": key,
            "GITHUB_API_URL": github.api_url, "GITHUB_TOKEN": github.token,
            "SLACK_BOT_TOKEN": "xoxb-bench", "SLACK_SIGNING_SECRET": "bench", "SLACK_API_URL": slack.base_url,
        }
        errors = (data / "serve.log").open("w")
        server = subprocess.Popen([sys.executable, "-m", "bot", "serve"], env=env, cwd=ROOT, stderr=errors)
        try:
            try:
                wait_healthy(port)
            except AssertionError:
                raise SystemExit((data / "serve.log").read_text()[-3000:]) from None
            one(port, github, slack, 0)  # warm up
            took = sorted(one(port, github, slack, n) for n in range(1, deliveries + 1))
        finally:
            server.terminate()
            server.wait(10)
            embedded_redis.stop(data / "redis")
            github.stop()
            slack.stop()
    p90 = took[min(len(took) - 1, int(len(took) * 0.9))]
    print(f"delivery -> approval request in Slack: {len(took)} deliveries  p50 {statistics.median(took):.0f} ms"
          f"  p90 {p90:.0f} ms  max {took[-1]:.0f} ms")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--deliveries", type=int, default=30)
    parser.add_argument("--quick", action="store_true", help="3 deliveries: a smoke run")
    args = parser.parse_args()
    main(3 if args.quick else args.deliveries)
