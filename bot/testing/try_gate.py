"""Try the GitHub deployment gate on this machine, without GitHub (docs/github-gate.md, "Try it
locally"): the GitHub stand-in the tests use (bot/testing/fake_github) plays GitHub, a real
`python -m bot serve` is deploybot, with a deploybot.toml gating the GitHub environment
production of acme/web. The stand-in makes a workflow run whose job targets production and
sends GitHub's own `deployment_protection_rule` delivery, signed; deploybot asks alice for
approval; once she approves (in the console, or `--approve` does it for her), GitHub is told
"approved", the job runs, and deploybot follows it to the history.

    python -m bot.testing.try_gate            # asks, then waits for you to approve in the console
    python -m bot.testing.try_gate --approve  # approves as alice at once, for a quick look
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import httpx

from bot.adapters.channels.github.webhook import signature
from bot.testing.fake_github import FakeGitHub

REPOSITORY = "acme/web"
SHA = "f" * 40  # the commit the gated job would deploy
SECRET = "try-the-gate-webhook-secret"
CONFIG = f"""
[people.alice]
email = "alice@example.com"

[people.dana]
github = "dana-gh"          # who pushes: the deployment's creator on GitHub

[environments.production]
protected = true
approvers = ["alice"]

[services.web]
github = "{REPOSITORY}"

[[github_environments]]
repository = "{REPOSITORY}"
github_environment = "production"
environment = "production"
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def delivery(github: FakeGitHub) -> dict[str, Any]:
    """GitHub's delivery for a new job targeting production, in GitHub's own shape: the commit
    at the top, the deployment with its id and environment only."""
    made = github.protection_rule("production", SHA, creator="dana-gh", ref="refs/heads/main")
    full = made["deployment"]
    return {**made, "sha": full["sha"], "ref": full["ref"],
            "deployment": {"id": full["id"], "environment": full["environment"]}}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bot.testing.try_gate", description=__doc__.split("\n\n")[0])
    parser.add_argument("--approve", action="store_true", help="approve as alice at once")
    parser.add_argument("--wait", type=float, default=3600, help="seconds to wait for the approval")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="deploybot-gate-") as folder:
        return run(Path(folder), args.approve, args.wait)


def run(folder: Path, approve: bool, wait: float) -> int:
    github = FakeGitHub(repository=REPOSITORY, tags=[]).start()
    port, token = free_port(), secrets.token_urlsafe(24)
    (folder / "app.pem").write_text(github.app_key())
    (folder / "deploybot.toml").write_text(CONFIG)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("REDIS_", "SLACK_", "SMTP_", "LLM_", "GITHUB_"))}
    env.update(
        DEPLOYBOT_CONFIG=str(folder / "deploybot.toml"), DATA_DIR=str(folder / "data"), HOST="127.0.0.1",
        PORT=str(port), API_TOKEN=token, GITHUB_WEBHOOK_SECRET=SECRET, GITHUB_APP_ID=str(github.app_id),
        GITHUB_APP_PRIVATE_KEY_FILE=str(folder / "app.pem"), GITHUB_API_URL=github.api_url,
        GITHUB_TOKEN=github.token, GITHUB_POLL_SECONDS="0.5", PUBLIC_URL=f"http://127.0.0.1:{port}",
    )
    log = (folder / "deploybot.log").open("w")
    bot = subprocess.Popen([sys.executable, "-m", "bot", "serve"], env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30,
                          headers={"Authorization": f"Bearer {token}"}) as web:
            up(web, bot, folder / "deploybot.log")
            return gate(web, github, env, approve, wait)
    finally:
        bot.terminate()
        bot.wait(30)
        subprocess.run([sys.executable, "-m", "bot", "redis-stop"], env=env, capture_output=True, check=False)
        github.stop()


def up(web: httpx.Client, bot: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        if bot.poll() is not None:
            raise SystemExit(f"deploybot did not start:\n{log.read_text()[-3000:]}")
        try:
            if web.get("/healthz").status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.2)
    raise SystemExit("deploybot did not answer /healthz within 90 s")


def gate(web: httpx.Client, github: FakeGitHub, env: dict[str, str], approve: bool, wait: float) -> int:
    payload = delivery(github)
    body = json.dumps(payload).encode()
    answer = web.post("/github/webhook", content=body, headers={
        "Content-Type": "application/json", "X-GitHub-Event": "deployment_protection_rule",
        "X-GitHub-Delivery": str(uuid.uuid4()), "X-Hub-Signature-256": signature(SECRET, body), "Authorization": "",
    })
    print(f"GitHub sent: a job of {REPOSITORY} targets production at {SHA[:7]}, pushed by dana-gh")
    print(f"deploybot answered {answer.status_code}: {answer.text}")
    if answer.status_code != 200 or not answer.json().get("threads"):
        return 1
    [thread_id] = answer.json()["threads"]
    thread = settled(web, thread_id, {"waiting_for_approval"}, 30)
    print(f"deploybot asks alice to approve, in thread {thread_id} (/console/threads/{thread_id})")
    if approve:  # with alice's own token: the shared API token names nobody, and approves nothing
        alice = bot_cli(env, "tokens", "create", "alice", "--name", "try-the-gate")
        pending = thread["pending_approval"]
        web.post(f"/threads/{thread_id}/responses", headers={"Authorization": f"Bearer {alice}"},
                 json={"approval_id": pending["approval_id"], "approve": True}).raise_for_status()
        print("alice approved")
    else:
        print(f"Sign in as alice with {bot_cli(env, 'login-link', 'alice')} and approve it there (Ctrl-C ends).")
    deadline = time.monotonic() + wait
    while not github.callbacks:
        if time.monotonic() > deadline:
            print("nobody approved in time")
            return 1
        time.sleep(0.2)
    told = github.callbacks[0]
    said = str(told.get("comment", "")).split(" http")[0]  # without the thread's address (its port varies)
    print(f"GitHub was told: {told['state']} ({said})")
    github.finish_deployment(payload["deployment"]["id"], "success")
    done = settled(web, thread_id, {"done", "failed", "cancelled"}, 60)
    result = next((e for e in done["events"] if e["type"] == "deploy_result"), None)
    print(f"The job ran; deploybot recorded: {'deployed' if result and result['ok'] else 'failed'} "
          f"web {SHA[:7]} to production")
    return 0 if result and result["ok"] else 1


def bot_cli(env: dict[str, str], *args: str) -> str:
    """What `python -m bot ARGS` prints, run against the same Redis and deploybot.toml."""
    return subprocess.run([sys.executable, "-m", "bot", *args], env=env, capture_output=True, text=True,
                          check=True).stdout.strip()


def settled(web: httpx.Client, thread_id: str, statuses: set[str], within: float) -> dict[str, Any]:
    deadline = time.monotonic() + within
    while True:
        thread: dict[str, Any] = web.get(f"/threads/{thread_id}").json()
        if thread["status"] in statuses:
            return thread
        if time.monotonic() > deadline:
            raise SystemExit(f"thread {thread_id} is still {thread['status']}")
        time.sleep(0.2)


if __name__ == "__main__":
    sys.exit(main())
