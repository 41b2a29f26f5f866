"""Whoever holds the store's credentials is the operator, so an agent never gets them.

The team runs `python -m bot serve` on a Redis that wants a password, with a deploybot.toml
naming people and an agent. The agent's process gets what docs/agents.md's stdio setup gives
it, in a folder of its own; it drives `python -m bot mcp` over stdio with the official MCP
client, then tries, in the same environment, what an agent tool can run in a shell: approve
its own request as bob, mint bob a token, lock production. None of it reaches the team's
store."""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters
from mcp.shared.exceptions import MCPError
from redis.asyncio import Redis

from bot.adapters.redis import embedded as embedded_redis
from bot.adapters.redis.credentials import RedisCredentials
from bot.adapters.redis.environments import RedisEnvironments
from bot.testing import cluster
from bot.testing.cluster import RedisServer, free_port
from tests import ROOT
from tests.end_to_end.conftest import Server
from tests.helpers import ledger_lines

pytestmark = [pytest.mark.redis, pytest.mark.processes, pytest.mark.network]

PASSWORD = "team-store-pass-7Q"
API_TOKEN = "team-api-token-for-the-operator"
DOCS = ROOT / "docs"
CONFIG = """
[people.alice]
email = "alice@example.com"

[people.bob]
email = "bob@example.com"

[environments.production]
protected = true
approvers = ["alice", "bob"]
approver_must_differ = true

[agents.claude-code]
owner = "alice"
environments = ["production"]
"""


@dataclass
class Team:
    server: Server
    store_url: str  # with its password: the operator's, never the agent's
    url: str
    agent_token: str


@pytest.fixture
def team_store(tmp_path: Path) -> Iterator[RedisServer]:
    store = RedisServer(tmp_path / "team-redis", password=PASSWORD)
    yield store
    store.kill()


@pytest.fixture
def team(team_store, git_repo, deploy_command, tmp_path) -> Iterator[Team]:
    home = tmp_path / "team"
    home.mkdir()
    (home / "deploybot.toml").write_text(CONFIG)
    env = cluster.clean_env(
        REDIS_URL=team_store.url, PORT=str(free_port()), GIT_REPO=str(git_repo), DEPLOY_COMMAND=deploy_command,
        DATA_DIR=str(home / "data"), DEPLOYBOT_CONFIG=str(home / "deploybot.toml"), API_TOKEN=API_TOKEN,
        LOG_LEVEL="WARNING",
    )
    team = Team(Server(env, tmp_path / "serve.log"), team_store.url, f"http://127.0.0.1:{env['PORT']}", "")
    try:
        team.agent_token = cluster.bot_command(env, "tokens", "create", "--agent", "claude-code").strip()
        yield team
    finally:
        team.server.stop()  # the one running now: a test may have restarted it


@pytest.fixture
def agent_dir(tmp_path: Path) -> Iterator[Path]:
    """The agent's own folder: whatever the CLI starts there is stopped afterwards."""
    path = tmp_path / "agent"
    path.mkdir()
    yield path
    embedded_redis.stop(path / ".deploybot")


def documented_setup(team: Team, home: Path) -> dict[str, str]:
    """The agent's environment as docs/agents.md's stdio configuration gives it, each
    placeholder filled with the team's value; a PATH and a HOME of its own besides."""
    snippet = next(json.loads(b) for b in re.findall(r"```json\n(.*?)```", (DOCS / "agents.md").read_text(), re.S)
                   if "command" in json.loads(b)["mcpServers"]["deploybot"])
    filled = {"DEPLOYBOT_TOKEN": team.agent_token, "DEPLOYBOT_URL": team.url, "REDIS_URL": team.store_url}
    given = snippet["mcpServers"]["deploybot"]["env"]
    assert set(given) <= set(filled), f"no value for {set(given) - set(filled)}: say what the test gives"
    home.mkdir(exist_ok=True)
    return {"PATH": os.environ["PATH"], "HOME": str(home), **{name: filled[name] for name in given}}


def agent_runs(env: dict[str, str], cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "bot", *args], env=env, cwd=cwd, capture_output=True, text=True,
                          timeout=120, stdin=subprocess.DEVNULL)


async def drive(env: dict[str, str], cwd: Path) -> tuple[str, str]:
    """Ask for a deploy through the bridge, read it, wait on it: its thread and approval."""
    params = StdioServerParameters(command=sys.executable, args=["-m", "bot", "mcp"], env=env, cwd=str(cwd))
    async with Client(params) as agent:
        asked = await agent.call_tool("request_deploy", {"service": "backend", "tag": "v1.2.3",
                                                         "environment": "production", "reason": "the fix"})
        assert not asked.is_error, asked.content
        info = asked.structured_content
        assert info["status"] == "waiting_for_approval", info
        read = await agent.call_tool("get_thread", {"thread_id": info["thread_id"]})
        assert read.structured_content["pending_approval"]["asked_by"] == "claude-code (agent of alice)"
        heard: list[str | None] = []

        async def progress(done: float, total: float | None, message: str | None) -> None:
            heard.append(message)

        waited = await agent.call_tool("wait_for_thread", {"thread_id": info["thread_id"], "timeout_s": 2.5},
                                       progress_callback=progress)
        assert waited.structured_content["status"] == "waiting_for_approval"
        assert heard == [f"thread {info['thread_id']} is waiting_for_approval"]
    return info["thread_id"], info["pending_approval"]["approval_id"]


async def team_store_says(team: Team, thread_id: str, token: str) -> tuple[str, list[str], bool, bool]:
    """From the team's store: the thread's status, who holds tokens, whether `token`
    verifies, whether production is locked."""
    redis = Redis.from_url(team.store_url)
    try:
        credentials = RedisCredentials(redis)
        holders = sorted(t.person for t in await credentials.list(None))
        verifies = bool(token) and await credentials.verify(token) is not None
        locked = await RedisEnvironments(redis).holder("production") is not None
    finally:
        await redis.aclose()
    status = team.server.http.get(f"/threads/{thread_id}").json()["status"]
    return status, holders, verifies, locked


def test_an_agent_with_the_documented_setup_asks_but_cannot_act_as_the_operator(team, agent_dir, tmp_path, ledger):
    env = documented_setup(team, tmp_path / "agent-home")
    thread_id, approval_id = asyncio.run(drive(env, agent_dir))

    respond = agent_runs(env, agent_dir, "threads", "respond", thread_id, "--approve", "--approval-id", approval_id,
                         "--user", "bob")
    minted = agent_runs(env, agent_dir, "tokens", "create", "bob")
    lock = agent_runs(env, agent_dir, "lock", "production", "--reason", "x")
    token = minted.stdout.strip() if minted.stdout.startswith("dbt_") else ""

    status, holders, verifies, locked = asyncio.run(team_store_says(team, thread_id, token))
    assert status == "waiting_for_approval", (respond.stdout, respond.stderr)
    assert holders == ["agent:claude-code"] and not verifies, minted.stderr
    assert not locked, lock.stdout
    assert ledger_lines(ledger) == []
    # What it was told: the thread is not in the store it looked in, and which store that was.
    assert respond.returncode != 0
    assert f"no thread {thread_id}" in respond.stderr and str(agent_dir / ".deploybot") in respond.stderr
    assert PASSWORD not in respond.stderr + minted.stderr + lock.stdout + lock.stderr


def test_the_bridge_outlives_a_restart_of_the_server(team, agent_dir, tmp_path):
    env = documented_setup(team, tmp_path / "agent-home")

    async def across_a_restart() -> None:
        params = StdioServerParameters(command=sys.executable, args=["-m", "bot", "mcp"], env=env, cwd=str(agent_dir))
        async with Client(params) as agent:
            assert not (await agent.call_tool("list_services", {})).is_error
            team.server.kill()
            with pytest.raises(MCPError, match=f"cannot reach the deploybot server at {team.url} "):
                await agent.call_tool("list_services", {})
            team.server = Server(team.server.process.env, tmp_path / "serve.log")  # the same port
            assert not (await agent.call_tool("list_services", {})).is_error

    asyncio.run(asyncio.wait_for(across_a_restart(), 90))
