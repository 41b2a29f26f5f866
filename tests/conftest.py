"""Real parts for every test: a Redis server process, a git repository with tags, an
OpenAI-compatible HTTP server with scripted replies, and a deploy command that keeps a
ledger of every deploy it ran."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Iterator, Mapping
from pathlib import Path

import httpx
import pytest
import uvicorn
from pydantic import AliasChoices, AliasPath
from redis.asyncio import Redis

from bot.adapters.redis import connect
from bot.adapters.redis import embedded as embedded_redis
from bot.config.settings import Settings
from bot.core.redis_target import RedisTarget
from bot.testing import cluster
from bot.testing.cluster import free_port, make_repo
from bot.testing.fake_llm import FakeLlm
from bot.testing.ha import ClusterServers
from bot.wiring.app import App, build, http_app
from tests import needs
from tests.helpers import eventually
from tests.memory_parts import parts, runner, service  # noqa: F401 (fixtures of the in-memory layer)

TAGS = ["v1.2.1", "v1.2.2", "v1.2.3"]  # oldest first


def pytest_configure(config: pytest.Config) -> None:
    needs.register(config)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    needs.mark(items)


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    return True if needs.left_out(collection_path, config) else None


# Setup and call only: the last test's teardown also stops what the session started (the
# Redis server of the marked tests that ran before it), which is not that test's doing.
@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_setup(item: pytest.Item):
    with needs.guarding(item):
        yield


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item: pytest.Item):
    with needs.guarding(item):
        yield


def settings_variables(environ: Mapping[str, str]) -> list[str]:
    """The variables in `environ` that Settings would read: one per field (or its alias,
    with the env prefix; case-insensitive, and a nested model's `NAME<delimiter>...` too),
    derived from Settings.model_fields so it keeps up with Settings; plus whatever
    cluster.clean_env() keeps from bot processes (model keys, Slack, SMTP, Redis)."""
    config = Settings.model_config
    prefix = config.get("env_prefix") or ""
    delimiter = config.get("env_nested_delimiter") or None
    names = set()
    for name, field in Settings.model_fields.items():
        names.add(prefix + name)
        for alias in (field.alias, field.validation_alias):
            choices = alias.choices if isinstance(alias, AliasChoices) else [alias]
            for choice in choices:
                if isinstance(choice, AliasPath):
                    choice = choice.path[0]
                if isinstance(choice, str):
                    names |= {choice, prefix + choice}
    names = {n.lower() for n in names}
    dropped = set(environ) - set(cluster.clean_env())
    return [
        key for key in environ
        if key in dropped or key.lower() in names
        or (delimiter and key.lower().split(delimiter.lower(), 1)[0] in names)
    ]


@pytest.fixture(autouse=True)
def isolated_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    """Settings in tests read only what the test sets: an SLACK_BOT_TOKEN or DEPLOYER=github
    exported in the developer's shell, or a .env in the working directory, must not switch
    anything on. (A test may still pass `_env_file=` or set variables itself.)"""
    for key in settings_variables(os.environ):
        monkeypatch.delenv(key)
    monkeypatch.setitem(Settings.model_config, "env_file", None)


@pytest.fixture(scope="session")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    data = tmp_path_factory.mktemp("redis")
    url = embedded_redis.ensure_running(data)
    yield url
    embedded_redis.stop(data)


@pytest.fixture
async def redis(redis_url: str) -> AsyncIterator[Redis]:
    client = Redis.from_url(redis_url)
    await client.flushdb()
    yield client
    await client.aclose()


@pytest.fixture
def git_repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "repo", TAGS)


@pytest.fixture
def ledger(tmp_path: Path) -> Path:
    return tmp_path / "deploys.log"


@pytest.fixture
def deploy_command(tmp_path: Path, ledger: Path) -> str:
    return cluster.deploy_command(tmp_path, ledger)


@pytest.fixture
def fake_llm() -> Iterator[FakeLlm]:
    llm = FakeLlm().start()
    yield llm
    llm.stop()


@pytest.fixture
def settings(redis_url: str, git_repo: Path, deploy_command: str, fake_llm: FakeLlm) -> Settings:
    return Settings(
        _env_file=None,
        redis_url=redis_url,
        git_repo=git_repo,
        deploy_command=deploy_command,
        deploy_env_passthrough=cluster.FAKE_DEPLOY_ENV,
        llm_base_url=fake_llm.base_url,
        llm_model="fake-model",
        llm_api_key="sk-test-secret-key-1234567890",
    )


@pytest.fixture
async def app(settings: Settings, redis: Redis) -> AsyncIterator[App]:
    app = build(settings)
    yield app
    await app.close()


@pytest.fixture
async def api(settings: Settings, app: App) -> AsyncIterator[httpx.AsyncClient]:
    """The real web app served by uvicorn on a loopback port, and a client for it."""
    port = free_port()
    server = uvicorn.Server(
        uvicorn.Config(http_app(app), host="127.0.0.1", port=port, log_level="warning")
    )
    task = asyncio.create_task(server.serve())
    try:
        await eventually(lambda: server.started, every=0.01, message=f"uvicorn is not serving on port {port}")
    except AssertionError:
        task.cancel()
        raise
    token = settings.api_token
    headers = {"Authorization": f"Bearer {token.get_secret_value()}"} if token else {}
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", headers=headers) as client:
        yield client
    server.should_exit = True
    await task


# --- Redis Cluster and Sentinel: real topologies from the same binary (bot/testing/ha.py) ---


@pytest.fixture(scope="session")
def cluster_servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ClusterServers]:
    """Three cluster masters, slots split evenly; started once, stopped at the end."""
    servers = ClusterServers(tmp_path_factory.mktemp("redis-cluster"))
    yield servers
    servers.stop()


@pytest.fixture
async def redis_cluster(cluster_servers: ClusterServers) -> AsyncIterator[Redis]:
    """deploybot's own cluster client (bot/adapters/redis/connect.py), every master flushed."""
    client = connect.client(RedisTarget("cluster", url=cluster_servers.url))
    await client.flushdb()  # sent to every master
    yield client
    await client.aclose()
