"""Agents over MCP, end to end: the official SDK's client drives deploybot's MCP server over
Streamable HTTP (/mcp on the real web app, served by uvicorn), and over stdio through a spawned
`python -m bot mcp` (the bridge to /mcp, given the agent's token and the server's address
only), against real Redis; people decide in Slack (the stand-in Slack Web API and signed
interaction requests), and the fake deploy command keeps a ledger."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import httpx2
import pytest
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from redis.asyncio import Redis

from bot.adapters.channels.slack.blocks import APPROVE, REJECT
from bot.adapters.http.console.model import audit
from bot.adapters.redis.credentials import RedisCredentials
from bot.testing import cluster
from tests import ROOT
from tests.adapters.channels.slack import test_slack as base
from tests.deploybot_toml import Toml
from tests.helpers import ledger_lines
from tests.people_kinds import KINDS

pytestmark = [pytest.mark.redis, pytest.mark.processes, pytest.mark.network]

fake_slack, slack = base.fake_slack, base.slack
ALICE, BOB = "UALICE", "UBOB"
CHANNEL = "C0AGENTS"
API_TOKEN = "shared-api-token-for-mcp-tests"

CONFIG = (
    Toml().person("alice", slack=ALICE).person("bob", slack=BOB)
    .environment("production", protected=True, approvers=["alice", "bob"], approver_must_differ=True)
    .unprotected("staging", "development")
    .table("agents", "claude-code", owner="alice", environments=["staging", "production"], max_per_hour=3,
           notify=[f"slack:{CHANNEL}"])
)

TOOLS = {"list_services", "list_tags", "whats_on", "request_deploy", "get_thread", "wait_for_thread",
         "request_rollback", "cancel_thread"}


@pytest.fixture
def config(tmp_path: Path) -> Path:
    return CONFIG.write(tmp_path)


@pytest.fixture
def settings(settings, fake_slack, config: Path):
    return settings.model_copy(update={
        "deploybot_config": config, "api_token": API_TOKEN,
        "slack_bot_token": "xoxb-test-token", "slack_signing_secret": base.SECRET,
        "slack_api_url": fake_slack.base_url, "llm_base_url": None, "llm_model": None, "llm_api_key": None,
    })


@pytest.fixture
async def token(app) -> str:
    _, secret = await RedisCredentials(app.redis).create("agent:claude-code", "mcp")
    return secret


@asynccontextmanager
async def http_agent(api: httpx.AsyncClient, token: str | None) -> AsyncIterator[Client]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30, read=60)) as http:
        async with Client(streamable_http_client(str(api.base_url).rstrip("/") + "/mcp", http_client=http)) as client:
            yield client


async def call(client: Client, tool: str, **arguments: Any) -> dict[str, Any]:
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, result.content
    return result.structured_content


async def refused(client: Client, tool: str, **arguments: Any) -> str:
    result = await client.call_tool(tool, arguments)
    assert result.is_error, result.structured_content
    return " ".join(getattr(c, "text", "") for c in result.content)


async def approval_message(fake_slack, thread_id: str) -> dict[str, Any]:
    """The approval message posted in the agents' channel, as a click needs it."""
    [posted] = await fake_slack.wait_for("chat.postMessage", channel=CHANNEL, text="Approval needed")
    blocks = posted["blocks"] if isinstance(posted["blocks"], list) else json.loads(posted["blocks"])
    return {"blocks": blocks, "thread_ts": posted["thread_ts"], "ts": fake_slack.answer(posted)["ts"]}


async def test_the_tools_are_listed_with_their_schemas(api, token):
    async with http_agent(api, token) as agent:
        tools = {t.name: t for t in (await agent.list_tools()).tools}
    assert set(tools) == TOOLS
    deploy = tools["request_deploy"]
    assert set(deploy.input_schema["required"]) == {"service", "tag", "environment", "reason"}
    assert "pending_approval" in deploy.output_schema["properties"]
    assert "timeout_s" in tools["wait_for_thread"].input_schema["properties"]


async def test_an_agent_asks_a_person_approves_in_slack_and_the_agent_sees_it_done(
    app, api, token, slack, fake_slack, ledger
):
    async with http_agent(api, token) as agent:
        assert {"backend", "frontend"} <= {s["name"] for s in (await call(agent, "list_services"))["result"]}
        tags = (await call(agent, "list_tags", service="backend"))["result"]
        assert tags[0]["name"] == "v1.2.3"
        asked = await call(agent, "request_deploy", service="backend", tag="v1.2.3", environment="production",
                           reason="ships the fix for the login bug")
        assert asked["status"] == "waiting_for_approval", asked
        pending = asked["pending_approval"]
        assert pending["asked_by"] == "claude-code (agent of alice)"
        assert pending["who_may_decide"] == ["bob"]  # what the agent asks, alice (its owner) asked
        thread_id = asked["thread_id"]

        # People see who asked: the agent, and whose it is.
        message = await approval_message(fake_slack, thread_id)
        assert "claude-code (agent of alice)" in json.dumps(message["blocks"])
        [posted] = await fake_slack.wait_for("chat.postMessage", channel=CHANNEL, text="Approval needed")
        assert posted["text"].startswith(
            "Approval needed: claude-code (agent of alice) asks to deploy backend v1.2.3 (")

        # The owner cannot approve what their agent asked (approver_must_differ).
        await slack.click(APPROVE, message, ALICE)
        [told] = await fake_slack.wait_for("chat.postEphemeral", user=ALICE)
        assert "alice asked for this deploy and cannot also approve it" in told["text"]
        assert ledger_lines(ledger) == []

        # While nobody decides, the wait says so (a progress notification at least every 5 s).
        progress: list[str | None] = []

        async def heard(done: float, total: float | None, message: str | None) -> None:
            progress.append(message)

        still = await agent.call_tool("wait_for_thread", {"thread_id": thread_id, "timeout_s": 5.5},
                                      progress_callback=heard)
        assert still.structured_content["status"] == "waiting_for_approval"
        assert progress and progress[0] == f"thread {thread_id} is waiting_for_approval"

        await slack.click(APPROVE, message, BOB)
        done = await call(agent, "wait_for_thread", thread_id=thread_id, timeout_s=30)
        assert done["status"] == "done", done
        assert done["deploy_result"]["ok"] is True
        assert (done["deploy_result"]["service"], done["deploy_result"]["tag"]) == ("backend", "v1.2.3")
        assert len(ledger_lines(ledger)) == 1
        # It is finished: waiting on it again answers at once, however long the agent would wait.
        began = time.monotonic()
        again = await call(agent, "wait_for_thread", thread_id=thread_id, timeout_s=60)
        assert again["status"] == "done" and time.monotonic() - began < 30

        on = (await call(agent, "whats_on", environment="production"))["result"]
        assert [(d["service"], d["tag"]) for d in on] == [("backend", "v1.2.3")]
        resource = await agent.read_resource(f"deploybot://threads/{thread_id}")
        assert "deploy backend v1.2.3 to production" in resource.contents[0].text
        assert "asked by claude-code (agent of alice)" in resource.contents[0].text

    thread = await app.service.get(thread_id)
    calls = [e.tool for e in thread.events if e.type == "tool_called"]
    assert calls == ["request_deploy", "wait_for_thread"]  # the first look is on record, not every look
    first = thread.events[0]
    assert (first.via, first.user, first.channel) == ("agent", "claude-code", "mcp")
    # The console's audit trail of the deploy names the agent, and whose it is.
    [result] = [e for e in thread.events if e.type == "deploy_result"]
    [record] = [r for r in await app.environments.recent("production", 10) if r.deploy_id == result.deploy_id]
    assert audit(record, thread).asked_by == "claude-code (agent of alice)"
    assert audit(record, None).asked_by == "claude-code (agent of alice)"  # once the thread is gone


async def test_reading_a_thread_again_and_again_grows_it_by_one_event(app, api, token):
    async with http_agent(api, token) as agent:
        asked = await call(agent, "request_deploy", service="backend", tag="v1.2.3", environment="production",
                           reason="polls a lot")
        thread_id = asked["thread_id"]
        for _ in range(10):
            await call(agent, "get_thread", thread_id=thread_id)
            await call(agent, "wait_for_thread", thread_id=thread_id, timeout_s=0)
        cancelled = await call(agent, "cancel_thread", thread_id=thread_id)
    assert cancelled["status"] == "cancelled"
    thread = await app.service.get(thread_id)
    calls = [e.tool for e in thread.events if e.type == "tool_called"]
    assert calls == ["request_deploy", "get_thread", "cancel_thread"]  # asking is recorded each time


async def test_a_rejections_feedback_reaches_the_agent(app, api, token, slack, fake_slack, ledger):
    async with http_agent(api, token) as agent:
        asked = await call(agent, "request_deploy", service="backend", tag="v1.2.2", environment="production",
                           reason="roll forward")
        message = await approval_message(fake_slack, asked["thread_id"])
        waiting = agent.call_tool("wait_for_thread", {"thread_id": asked["thread_id"], "timeout_s": 30})
        await slack.click(REJECT, message, BOB)
        [view] = await fake_slack.wait_for("views.open")
        modal = view["view"] if isinstance(view["view"], dict) else json.loads(view["view"])
        await slack.submit_feedback(modal, BOB, "not during the sale; wait until Monday")
        answer = (await waiting).structured_content
    assert answer["rejection"] == {"by": "bob", "text": "not during the sale; wait until Monday"}
    assert "not during the sale" in answer["transcript"]
    assert ledger_lines(ledger) == []


async def test_an_agents_reason_reaches_people_without_hidden_characters_or_markup(app, api, token, fake_slack):
    # U+202E reverses what follows it, zero-width characters hide words: an agent's reason
    # is shown without them, and its markup shows as typed.
    async with http_agent(api, token) as agent:
        await call(agent, "request_deploy", service="backend", tag="v1.2.3", environment="production",
                   reason="fixes \u202elogin\u202c\u200b *now* <!channel>")
    [posted] = await fake_slack.wait_for("chat.postMessage", channel=CHANNEL, text="Approval needed")
    summary = json.loads(posted["blocks"])[0] if isinstance(posted["blocks"], str) else posted["blocks"][0]
    verbatim = "<!date^00000000^{_}|*>"
    assert summary["text"]["text"].endswith(f"*Why:* fixes login {verbatim}now{verbatim} &lt;!channel&gt;")


async def test_an_agent_cannot_approve_or_lock_even_naming_a_person(app, api, token):
    async with http_agent(api, token) as agent:
        asked = await call(agent, "request_deploy", service="backend", tag="v1.2.3", environment="production",
                           reason="x")
    approval_id = asked["pending_approval"]["approval_id"]
    agent_api = {"Authorization": f"Bearer {token}"}
    for user in (None, "bob"):
        body = {"approve": True, "approval_id": approval_id, **({"user": user} if user else {})}
        answer = await api.post(f"/threads/{asked['thread_id']}/responses", json=body, headers=agent_api)
        assert answer.status_code == 403, answer.text
    assert "claude-code is an agent" in (await api.post(
        f"/threads/{asked['thread_id']}/responses", json={"approve": True, "approval_id": approval_id},
        headers=agent_api)).json()["detail"]

    # Locking takes a person's powers: refused before a thread is started for it, in the words
    # the lock command itself would get.
    launched = await api.post("/threads", json={"message": "lock production: agents at work"}, headers=agent_api)
    assert launched.status_code == 403 and "claude-code is an agent" in launched.json()["detail"]
    assert await app.environments.holder("production", "") is None


async def _settled(app, thread_id: str):
    await app.worker.idle()
    thread = await app.service.get(thread_id)
    return thread if thread.status() != "running" else None


async def test_the_limits_answer_clearly(app, api, token):
    async with http_agent(api, token) as agent:
        for tag in ("v1.2.1", "v1.2.2", "v1.2.3"):
            await call(agent, "request_deploy", service="backend", tag=tag, environment="staging", reason="try")
        said = await refused(agent, "request_deploy", service="backend", tag="v1.2.3", environment="staging",
                             reason="once more")
        assert "max_per_hour = 3" in said
        outside = await refused(agent, "request_deploy", service="backend", tag="v1.2.3",
                                environment="development", reason="x")
        assert "may not ask for deploys to development" in outside
    # Its token does not get round the limit by the API either.
    answer = await api.post("/threads", json={"message": "deploy backend v1.2.3 to staging"},
                            headers={"Authorization": f"Bearer {token}"})
    assert answer.status_code == 403 and "max_per_hour = 3" in answer.json()["detail"]


async def test_an_agent_cancels_only_its_own_threads(app, api, token):
    person = await app.service.launch("what's on production?", app.service.directory.by_name("bob"))
    async with http_agent(api, token) as agent:
        said = await refused(agent, "cancel_thread", thread_id=person.id)
        assert "was not started by claude-code" in said
        assert "no thread nope" in (await refused(agent, "get_thread", thread_id="nope")).lower()
        # A request the deploy step would refuse starts no thread.
        before = len(await app.service.recent(limit=100))
        assert "v1 to staging" in await refused(agent, "request_deploy", service="backend", tag="v1 to staging",
                                                environment="production", reason="x")
        assert "unknown service" in (await refused(agent, "request_deploy", service="nope", tag="v1",
                                                   environment="production", reason="x")).lower()
        assert len(await app.service.recent(limit=100)) == before
        asked = await call(agent, "request_deploy", service="backend", tag="v1.2.3", environment="production",
                           reason="x")
        cancelled = await call(agent, "cancel_thread", thread_id=asked["thread_id"])
    assert cancelled["status"] == "cancelled"


async def test_strangers_get_401_before_anything_is_read(app, api, token):
    bare = httpx.AsyncClient(base_url=str(api.base_url))
    async with bare:
        for headers in ({}, {"Authorization": "Bearer dbt_0123456789abcdef_" + "x" * 43},
                        {"Authorization": f"Bearer {API_TOKEN}"}):
            answer = await bare.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                                     headers={**headers, "Accept": "application/json, text/event-stream"})
            assert answer.status_code == 401, (headers, answer.text)
    person_token = (await RedisCredentials(app.redis).create("bob", "laptop"))[1]
    async with httpx.AsyncClient(base_url=str(api.base_url)) as again:
        answer = await again.post("/mcp", json={}, headers={"Authorization": f"Bearer {person_token}"})
    assert answer.status_code == 403 and "agent" in answer.json()["detail"]


# --- stdio: `python -m bot mcp`, the bridge to /mcp an agent's MCP client spawns ---------------


def agent_env(tmp_path: Path, **setup: str) -> dict[str, str]:
    """An agent's process: a PATH and a HOME of its own, and only what its MCP configuration
    gives it (nothing of the team's: no Redis, no deploybot.toml)."""
    home = tmp_path / "agent-home"
    home.mkdir(exist_ok=True)
    return {"PATH": os.environ["PATH"], "HOME": str(home), **setup}


@pytest.fixture
def agent_dir(tmp_path: Path) -> Path:
    """Where the agent works: not deploybot's folder, no deploybot.toml in it."""
    path = tmp_path / "agent-work"
    path.mkdir()
    return path


@pytest.fixture
def over_stdio(api, token, tmp_path) -> dict[str, str]:
    """docs/agents.md's stdio setup: the agent's token and the server's address."""
    return agent_env(tmp_path, DEPLOYBOT_TOKEN=token, DEPLOYBOT_URL=str(api.base_url).rstrip("/"))


def bridge(env: dict[str, str], cwd: Path) -> StdioServerParameters:
    return StdioServerParameters(command=sys.executable, args=["-m", "bot", "mcp"], env=env, cwd=str(cwd))


async def started(env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """`python -m bot mcp` with nothing on its stdin: what it says before any message. (In a
    thread: the server it may ask runs on this test's event loop.)"""
    return await asyncio.to_thread(
        subprocess.run, [sys.executable, "-m", "bot", "mcp"], env=env, cwd=cwd, capture_output=True, text=True,
        timeout=60, stdin=subprocess.DEVNULL,
    )


def one_line(done: subprocess.CompletedProcess[str]) -> str:
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    return lines[0]


async def test_over_stdio_an_agent_asks_and_sees_the_deploy_done(
    app, api, over_stdio, agent_dir, slack, fake_slack, ledger
):
    async with Client(bridge(over_stdio, agent_dir)) as agent:
        assert {t.name for t in (await agent.list_tools()).tools} == TOOLS
        began = time.monotonic()
        await call(agent, "list_services")
        print(f"\nstdio round trip of list_services: {(time.monotonic() - began) * 1000:.1f} ms")
        asked = await call(agent, "request_deploy", service="backend", tag="v1.2.3", environment="production",
                           reason="over stdio")
        assert asked["status"] == "waiting_for_approval", asked
        thread_id = asked["thread_id"]
        assert (await call(agent, "get_thread", thread_id=thread_id))["pending_approval"]["approval_id"]

        progress: list[str | None] = []

        async def heard(done: float, total: float | None, message: str | None) -> None:
            progress.append(message)

        still = await agent.call_tool("wait_for_thread", {"thread_id": thread_id, "timeout_s": 2.5},
                                      progress_callback=heard)
        assert still.structured_content["status"] == "waiting_for_approval"
        assert progress == [f"thread {thread_id} is waiting_for_approval"]  # through the bridge

        message = await approval_message(fake_slack, thread_id)
        await slack.click(APPROVE, message, BOB)
        done = await call(agent, "wait_for_thread", thread_id=thread_id, timeout_s=30)
    assert done["status"] == "done" and done["deploy_result"]["ok"] is True
    assert len(ledger_lines(ledger)) == 1
    assert not (agent_dir / ".deploybot").exists()  # it started no store of its own


async def test_over_stdio_a_revoked_token_stops_at_once(app, over_stdio, agent_dir):
    async with Client(bridge(over_stdio, agent_dir)) as agent:
        await call(agent, "list_services")
        [listed] = await RedisCredentials(app.redis).list("agent:claude-code")
        await RedisCredentials(app.redis).revoke(listed.token_id)
        with pytest.raises(MCPError, match=r"refused DEPLOYBOT_TOKEN \(401\): this personal token is unknown"):
            await agent.call_tool("list_services", {})


async def test_the_bridge_refuses_a_wrong_token_or_a_persons_in_one_line(app, api, over_stdio, agent_dir):
    wrong = await started({**over_stdio, "DEPLOYBOT_TOKEN": "dbt_0123456789abcdef_" + "x" * 43}, agent_dir)
    assert wrong.returncode == 2
    said = one_line(wrong)
    assert said.startswith(f"refused: the deploybot server at {str(api.base_url).rstrip('/')} refused "
                           "DEPLOYBOT_TOKEN (401): "), said
    assert "unknown or revoked" in said and "tokens create --agent NAME" in said

    person = (await RedisCredentials(app.redis).create("bob", "laptop"))[1]
    theirs = await started({**over_stdio, "DEPLOYBOT_TOKEN": person}, agent_dir)
    assert theirs.returncode == 2 and "(403): the MCP endpoint needs an agent's token" in one_line(theirs)
    assert person not in theirs.stderr


@pytest.mark.parametrize("variable, value", [
    ("REDIS_URL", "{redis_url}"), ("redis_url", "{redis_url}"), ("REDIS_PASSWORD", "hunter2"),
    ("REDIS_SENTINELS", "127.0.0.1:26379"), ("REDIS_SENTINEL_MASTER", "deploybot"),
    ("REDIS_SENTINEL_PASSWORD", "hunter2"), ("REDIS_CLUSTER", "true"), ("DATA_DIR", "{data}"),
])
async def test_the_bridge_refuses_to_run_with_the_stores_credentials(
    settings, config, over_stdio, agent_dir, tmp_path, variable, value
):
    # The team's setup handed to the agent, as docs/agents.md once showed it: the store and
    # deploybot.toml. With these, the agent is the operator: it refuses, before any work.
    value = value.format(redis_url=settings.redis_url, data=tmp_path / "data")
    done = await started({**over_stdio, "DEPLOYBOT_CONFIG": str(config), variable: value}, agent_dir)
    assert done.returncode == 2, done.stderr
    said = one_line(done)
    assert said.startswith(f"refused: {variable.upper()} is set") and "store" in said, said
    assert "hunter2" not in said and settings.redis_url not in said
    assert not (agent_dir / ".deploybot").exists()


@pytest.mark.parametrize("unset, expected", [("DEPLOYBOT_TOKEN", "DEPLOYBOT_TOKEN"),
                                             ("DEPLOYBOT_URL", "DEPLOYBOT_URL")])
async def test_the_bridge_needs_its_token_and_the_servers_address(over_stdio, agent_dir, unset, expected):
    done = await started({k: v for k, v in over_stdio.items() if k != unset}, agent_dir)
    assert done.returncode == 2
    assert expected in one_line(done)


async def test_the_bridge_says_plainly_when_the_server_is_not_there(over_stdio, agent_dir):
    for url, code in (("deploybot.example.com", 2), (f"http://127.0.0.1:{cluster.free_port()}", 1)):
        done = await started({**over_stdio, "DEPLOYBOT_URL": url}, agent_dir)
        assert done.returncode == code, done.stderr
        assert url in one_line(done)


# --- the examples of docs/agents.md -------------------------------------------------------------

DOCS = ROOT / "docs"


def readme_agents() -> str:
    return (DOCS / "agents.md").read_text()


def test_the_docs_agent_configuration_and_client_snippets_work(tmp_path, monkeypatch):
    import re

    from bot.__main__ import parser
    from bot.config.settings import BridgeSettings, Settings

    readme = (DOCS / "people-and-approvals.md").read_text()
    people = re.search(r"```toml\n(# deploybot\.toml\n.*?)```", readme, re.S)[1]
    section = readme_agents()
    agent_toml = re.search(r"```toml\n(.*?)```", section, re.S)[1]
    (tmp_path / "deploybot.toml").write_text(people + "\n" + agent_toml)
    monkeypatch.chdir(tmp_path)
    agent = Settings(_env_file=None).directory(KINDS).agents["claude-code"]
    assert (agent.owner, agent.environments, agent.max_open, agent.max_per_hour) == \
        ("alice", ("staging", "production"), 5, 20)
    assert agent.label == "claude-code (agent of alice)"

    command = re.search(r"```sh\n(python -m bot [^\n#]*)", section)[1].split()
    assert parser().parse_args(command[3:]).agent == "claude-code"
    stdio, http = (json.loads(block)["mcpServers"]["deploybot"] for block in re.findall(r"```json\n(.*?)```",
                                                                                         section, re.S))
    assert stdio["command"] == "python" and parser().parse_args(stdio["args"][2:]).command == "mcp"
    # The agent's process gets its token and the server's address: no store, no deploybot.toml.
    assert set(stdio["env"]) == {"DEPLOYBOT_TOKEN", "DEPLOYBOT_URL"}
    assert BridgeSettings.read(stdio["env"]).problem() is None
    assert http["url"].endswith("/mcp") and http["headers"]["Authorization"].startswith("Bearer dbt_")


def test_tokens_are_created_for_agents_by_name(settings, config, tmp_path):
    env = cluster.clean_env(REDIS_URL=settings.redis_url, DEPLOYBOT_CONFIG=str(config),
                            DATA_DIR=str(tmp_path / "data"), LOG_LEVEL="WARNING")
    run = [sys.executable, "-m", "bot", "tokens", "create", "--agent"]
    made = subprocess.run([*run, "claude-code"], env=env, capture_output=True, text=True, timeout=60)
    assert made.returncode == 0, made.stderr
    assert made.stdout.startswith("dbt_") and "agent:claude-code" in made.stderr
    stranger = subprocess.run([*run, "gpt"], env=env, capture_output=True, text=True, timeout=60)
    assert stranger.returncode == 2
    assert "'gpt' is not an agent in deploybot.toml (agents: claude-code)" in stranger.stderr

    async def holder() -> str | None:
        client = Redis.from_url(settings.redis_url)
        try:
            info = await RedisCredentials(client).verify(made.stdout.strip())
        finally:
            await client.aclose()
        who = settings.directory(KINDS).by_token(info.person, info.token_id) if info else None
        return who.principal if who else None

    assert asyncio.run(holder()) == "agent:claude-code"
