"""The console in a real browser: one Chromium for the whole session (Playwright drives the
system's /usr/bin/chromium; it downloads no browser), and for each test module a real
`python -m bot serve` (web and worker, API_TOKEN on, a deploybot.toml naming alice, who
approves and locks, bob, who does neither, and erin, who approves in staging, where a deploy
needs two approvals; a weekly freeze of development; the services backend and frontend, from
one repository tagged v1.2.1 to v1.3.0) on a real Redis, a model stand-in and a deploy command
that keeps a ledger.

Screenshots go to a temporary folder; with CONSOLE_SCREENSHOTS=1 to docs/console/ (the
README shows those).
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import threading
import time
from collections.abc import Coroutine, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import httpx
import pytest
from redis.asyncio import Redis

from bot.testing import cluster
from bot.testing.cluster import free_port, make_repo
from bot.testing.fake_llm import FakeLlm
from tests import ROOT
from tests.helpers import SETTLED, reply

T = TypeVar("T")
CHROMIUM = "/usr/bin/chromium"
# What Playwright's own launch() passes: above all, pages in the background keep rendering (a
# board left open in another tab is what the live tests watch, and what screenshots wait on).
QUIET_CHROMIUM = (
    "--no-first-run", "--no-default-browser-check", "--disable-gpu", "--disable-dev-shm-usage",
    "--disable-background-networking", "--disable-background-timer-throttling",
    "--disable-backgrounding-occluded-windows", "--disable-renderer-backgrounding",
    "--disable-back-forward-cache", "--disable-extensions", "--disable-component-update",
    "--disable-default-apps", "--disable-hang-monitor", "--disable-ipc-flooding-protection",
    "--disable-popup-blocking", "--force-color-profile=srgb", "--hide-scrollbars", "--mute-audio",
    "--password-store=basic", "--use-mock-keychain",
)
TOKEN = "console-shared-api-token"
DOCS = ROOT / "docs" / "console"
PEOPLE = """
[people.alice]
email = "alice@example.com"

[people.bob]
email = "bob@example.com"

[people.erin]
email = "erin@example.com"

[environments.development]

[environments.staging]
protected = true
approvers = ["alice", "erin"]
required_approvals = 2

[environments.production]
protected = true
approvers = ["alice"]

[[freezes]]  # nothing deploys to development in these tests: the board shows it as the next window
environments = ["development"]
from = "Sun 23:00"
to = "Mon 00:00"
timezone = "Europe/Berlin"
reason = "weekly maintenance"
"""


# The subject of the commit tagged v1.3.0: commit subjects are other people's text, shown as text.
HOSTILE_SUBJECT = '<img src=x onerror="window.__pwned = 3"> <b>faster</b> sign-in'


def release(repo: Path, tag: str, subject: str) -> Path:
    """One more commit on `repo`, tagged `tag` (after make_repo's v1.2.1 to v1.2.3)."""
    env = {**os.environ, "GIT_AUTHOR_NAME": "dana", "GIT_AUTHOR_EMAIL": "dana@example.com",
           "GIT_COMMITTER_NAME": "dana", "GIT_COMMITTER_EMAIL": "dana@example.com",
           "GIT_AUTHOR_DATE": "2026-11-20T12:00:00Z", "GIT_COMMITTER_DATE": "2026-11-20T12:00:00Z"}
    for args in (("commit", "-q", "--allow-empty", "-m", subject), ("tag", tag)):
        subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, env=env)
    return repo


def in_a_thread(coroutine: Coroutine[Any, Any, T]) -> T:
    """Run `coroutine` to its end on a thread of its own: Playwright's sync API keeps an
    event loop of its own on this one."""
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coroutine).result()


@pytest.fixture(scope="session")
def chromium(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """One headless Chromium for the whole session: its DevTools address."""
    if not os.access(CHROMIUM, os.X_OK):
        pytest.fail(f"{CHROMIUM} is missing: `make install` installs it (apt-get install chromium)")
    profile = tmp_path_factory.mktemp("chromium")
    process = subprocess.Popen(
        [CHROMIUM, "--headless=new", "--no-sandbox", "--remote-debugging-port=0",
         f"--user-data-dir={profile}", *QUIET_CHROMIUM, "about:blank"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )
    try:
        assert process.stderr is not None
        deadline = time.monotonic() + 30
        for line in process.stderr:
            if line.startswith("DevTools listening on "):
                break
            assert time.monotonic() < deadline and process.poll() is None, "chromium did not start"
        endpoint = line.removeprefix("DevTools listening on ").strip()
        threading.Thread(target=process.stderr.read, daemon=True).start()  # keep its pipe drained
        yield endpoint
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()


@pytest.fixture(scope="module")
def browser(chromium: str) -> Iterator[Any]:
    """Playwright connected to the session's Chromium, for one module. Playwright's sync API
    runs an event loop of its own on this thread, so it is stopped after each module: the
    asyncio tests that follow need the thread to themselves."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.connect_over_cdp(chromium)
        yield browser
        browser.close()


@dataclass
class Console:
    url: str
    env: dict[str, str]
    redis_url: str
    llm: FakeLlm
    ledger: Path
    log: Path
    shots: Path

    def api(self) -> httpx.Client:
        """The JSON API with the shared token (starts threads, never decides)."""
        return httpx.Client(base_url=self.url, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=10)

    def link(self, person: str) -> str:
        """A one-time sign-in link for `person`, as `python -m bot login-link` makes one."""
        from bot.adapters.redis.credentials import RedisCredentials

        async def issue() -> str:
            redis = Redis.from_url(self.redis_url)
            try:
                return await RedisCredentials(redis).issue_link(person, 600)
            finally:
                await redis.aclose()

        return f"{self.url}/auth/link?code={in_a_thread(issue())}"

    def start(self, message: str, *replies: str) -> str:
        """A thread started over the API (by the shared token, as "carol"), the model
        scripted with `replies`; its id."""
        self.llm.script(*replies)
        with self.api() as api:
            r = api.post("/threads", json={"message": message, "user": "carol"})
            assert r.status_code == 201, r.text
            return r.json()["id"]

    def thread(self, thread_id: str) -> dict:
        with self.api() as api:
            return api.get(f"/threads/{thread_id}").json()

    def wait(self, thread_id: str, until: set[str] = SETTLED, timeout: float = 20) -> dict:
        deadline = time.monotonic() + timeout
        while True:
            body = self.thread(thread_id)
            if body["status"] in until:
                return body
            assert time.monotonic() < deadline, f"thread {thread_id} still {body['status']}: {body['events']}"
            time.sleep(0.05)

    def waiting_deploy(self, tag: str = "v1.2.3") -> tuple[str, dict]:
        """A thread asking to deploy backend `tag` to production: (its id, the pending approval)."""
        thread_id = self.start(
            "deploy the latest backend to production",
            reply(intent="list_git_tags"),
            reply(intent="deploy", service="backend", tag=tag, environment="production", reason="the newest tag"),
        )
        body = self.wait(thread_id)
        assert body["status"] == "waiting_for_approval", body["events"]
        return thread_id, body["pending_approval"]

    def shot(self, page: object, name: str) -> None:
        page.bring_to_front()  # type: ignore[attr-defined]  # a tab in the background paints no frames
        page.screenshot(path=str(self.shots / f"{name}.png"), full_page=True)  # type: ignore[attr-defined]


def serve_console(redis_url: str, tmp: Path, config: str, repo: Path, port: int | None = None,
                  model: bool = True) -> Iterator[Console]:
    """A `python -m bot serve` of its own on an emptied Redis, with `config` as its deploybot.toml
    and `repo` as its repository (`port`: when the config must name it first; `model`: False for
    a bot with no model configured, which takes only exact commands); stopped after."""

    async def flush() -> None:
        redis = Redis.from_url(redis_url)
        await redis.flushdb()
        await redis.aclose()

    in_a_thread(flush())
    port = port or free_port()
    (tmp / "deploybot.toml").write_text(config)
    ledger, llm = tmp / "deploys.log", FakeLlm().start()
    env = cluster.clean_env(
        REDIS_URL=redis_url, PORT=str(port), HOST="127.0.0.1", DATA_DIR=str(tmp / "data"),
        GIT_REPO=str(repo), DEPLOY_COMMAND=cluster.deploy_command(tmp, ledger),
        API_TOKEN=TOKEN, DEPLOYBOT_CONFIG=str(tmp / "deploybot.toml"), LLM_BASE_URL=llm.base_url,
        LLM_MODEL="fake-model", LLM_API_KEY="sk-console-test-key-0123456789", PUBLIC_URL=f"http://127.0.0.1:{port}",
    )
    if not model:
        env = {k: v for k, v in env.items() if not k.startswith("LLM_")}
    shots = DOCS if os.environ.get("CONSOLE_SCREENSHOTS") == "1" else tmp / "screenshots"
    shots.mkdir(parents=True, exist_ok=True)
    log = tmp / "serve.log"
    process = cluster.web(env, log)
    try:
        yield Console(f"http://127.0.0.1:{port}", env, redis_url, llm, ledger, log, shots)
    finally:
        process.kill()
        llm.stop()
        if shots != DOCS:
            shutil.rmtree(shots, ignore_errors=True)


@pytest.fixture(scope="module")
def console(redis_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Console]:
    tmp = tmp_path_factory.mktemp("console")
    yield from serve_console(redis_url, tmp, PEOPLE, release(make_repo(tmp / "repo"), "v1.3.0", HOSTILE_SUBJECT))


@pytest.fixture
def context(browser):
    """A fresh browser profile (no cookies) per test, laptop-sized."""
    ctx = browser.new_context(viewport={"width": 1280, "height": 860})
    ctx.set_default_timeout(10_000)
    yield ctx
    ctx.close()
