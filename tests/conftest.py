"""Real parts for every test: a Redis server process, a git repository with tags, an
OpenAI-compatible HTTP server with scripted replies, and a deploy command that keeps a
ledger of every deploy it ran."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import AsyncIterator, Iterator

import httpx
import pytest
import uvicorn
from redis.asyncio import Redis

from bot import embedded_redis
from bot.app import App, build
from bot.settings import Settings
from bot.testing import cluster
from bot.testing.cluster import free_port, make_repo
from bot.testing.fake_llm import FakeLlm
from bot.web import create_app

TAGS = ["v1.2.1", "v1.2.2", "v1.2.3"]  # oldest first


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
        uvicorn.Config(create_app(settings, app), host="127.0.0.1", port=port, log_level="warning")
    )
    task = asyncio.create_task(server.serve())
    while not server.started:
        await asyncio.sleep(0.01)
    headers = {"Authorization": f"Bearer {settings.api_token}"} if settings.api_token else {}
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", headers=headers) as client:
        yield client
    server.should_exit = True
    await task
