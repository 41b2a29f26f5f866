"""Real parts for every test: a Redis server process, a git repository with tags, an
OpenAI-compatible HTTP server with scripted replies, and a deploy command that keeps a
ledger of every deploy it ran."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import AsyncIterator, Iterator

import httpx
import pytest
import uvicorn
from redis.asyncio import Redis

from bot import embedded_redis
from bot.app import App, build
from bot.settings import Settings
from bot.testing.fake_llm import FakeLlm
from bot.web import create_app

TAGS = ["v1.2.1", "v1.2.2", "v1.2.3"]  # oldest first
DEPLOY_SCRIPT = """
import os, sys, time
with open(sys.argv[1], "a") as f:
    f.write(os.environ["DEPLOY_ID"] + " " + " ".join(sys.argv[2:]) + "\\n")
print("deploying", *sys.argv[2:])
time.sleep(float(os.environ.get("FAKE_DEPLOY_SECONDS", "0")))
sys.exit(int(os.environ.get("FAKE_DEPLOY_EXIT", "0")))
"""


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


def make_repo(path: Path, tags: list[str] = TAGS) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com"}
    git = lambda *a, **kw: subprocess.run(["git", "-C", str(path), *a], check=True, capture_output=True, env=env, **kw)  # noqa: E731
    git("init", "-q", "-b", "main")
    for day, tag in enumerate(tags, start=1):
        env["GIT_COMMITTER_DATE"] = env["GIT_AUTHOR_DATE"] = f"2026-11-{day:02d}T12:00:00Z"
        git("commit", "-q", "--allow-empty", "-m", f"release {tag}")
        git("tag", tag)
    return path


@pytest.fixture
def git_repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "repo")


@pytest.fixture
def ledger(tmp_path: Path) -> Path:
    return tmp_path / "deploys.log"


@pytest.fixture
def deploy_command(tmp_path: Path, ledger: Path) -> str:
    script = tmp_path / "fake_deploy.py"
    script.write_text(DEPLOY_SCRIPT)
    return f"{sys.executable} {script} {ledger} {{service}} {{tag}} {{environment}}"


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


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


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
