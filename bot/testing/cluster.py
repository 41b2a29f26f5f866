"""Real processes for scenario tests, the chaos suite and benchmarks: a Redis server that
can be killed and restarted on its own data, and `python -m bot serve|worker` processes.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import httpx

from bot.adapters.redis.embedded import server_binary

DEPLOY_SCRIPT = """
import os, sys, time
with open(sys.argv[1], "a") as f:
    f.write(os.environ["DEPLOY_ID"] + " " + " ".join(sys.argv[2:]) + "\\n")
print("deploying", *sys.argv[2:], flush=True)
if os.path.exists(sys.argv[1] + ".slow"):  # beside the ledger: print its lines slowly, one by one
    with open(sys.argv[1] + ".slow") as slow:
        for line in slow.read().splitlines():
            print(line, flush=True)
            time.sleep(0.4)
time.sleep(float(os.environ.get("FAKE_DEPLOY_SECONDS", "0")))
if os.path.exists(sys.argv[1] + ".fail"):  # beside the ledger: a test fails the deploys from now on
    print("failing as asked")
    sys.exit(1)
sys.exit(int(os.environ.get("FAKE_DEPLOY_EXIT", "0")))
"""
# The fake deploy command's knobs. The deploy command gets only the variables
# DEPLOY_ENV_PASSTHROUGH names from the bot's environment, so bot processes pass these on.
FAKE_DEPLOY_ENV = "FAKE_DEPLOY_SECONDS,FAKE_DEPLOY_EXIT"


def clean_env(**settings: str) -> dict[str, str]:
    """This process's environment without anything that would point a bot process at a
    real model, Slack, SMTP or Redis, passing the fake deploy command's knobs on, plus
    `settings`."""
    own = ("LLM_", "OPENAI_", "ANTHROPIC_", "SLACK_", "SMTP_", "REDIS_")
    return {
        **{k: v for k, v in os.environ.items() if not k.startswith(own)},
        "DEPLOY_ENV_PASSTHROUGH": FAKE_DEPLOY_ENV,
        **settings,
    }


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def make_repo(path: Path, tags: Sequence[str] = ("v1.2.1", "v1.2.2", "v1.2.3")) -> Path:
    """A git repository with one commit per tag, oldest first."""
    path.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com"}

    def git(*args: str) -> None:
        subprocess.run(["git", "-C", str(path), *args], check=True, capture_output=True, env=env)

    git("init", "-q", "-b", "main")
    for day, tag in enumerate(tags, start=1):
        env["GIT_COMMITTER_DATE"] = env["GIT_AUTHOR_DATE"] = f"2026-11-{day:02d}T12:00:00Z"
        git("commit", "-q", "--allow-empty", "-m", f"release {tag}")
        git("tag", tag)
    return path


def deploy_command(directory: Path, ledger: Path) -> str:
    """A deploy command that appends DEPLOY_ID and its arguments to `ledger`, then sleeps
    FAKE_DEPLOY_SECONDS: the record of every deploy that really started."""
    script = directory / "fake_deploy.py"
    script.write_text(DEPLOY_SCRIPT)
    return f"{sys.executable} {script} {ledger} {{service}} {{tag}} {{environment}}"


def ledger_lines(ledger: Path) -> list[str]:
    """The deploys the command from deploy_command() started, one line each."""
    return ledger.read_text().splitlines() if ledger.exists() else []


class RedisServer:
    """A Redis-compatible server on its own port and directory, AOF with fsync on every
    write, that can be SIGKILLed and started again on the same data."""

    def __init__(
        self, directory: Path, appendfsync: str = "always", args: Sequence[str] = (), password: str = ""
    ) -> None:
        self.dir = directory
        self.dir.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        self.appendfsync = appendfsync
        self.password = password  # set: the server refuses every client without it (requirepass)
        self.args = [*args, *(["--requirepass", password] if password else [])]  # cluster mode, replicaof, ...
        self.proc: subprocess.Popen[bytes] | None = None
        self.start()

    @property
    def url(self) -> str:
        return f"redis://{f':{self.password}@' if self.password else ''}127.0.0.1:{self.port}/0"

    def start(self) -> None:
        self.proc = subprocess.Popen(
            [server_binary(), "--bind", "127.0.0.1", "--port", str(self.port), "--dir", str(self.dir),
             "--appendonly", "yes", "--appendfsync", self.appendfsync, "--save", "",
             "--logfile", str(self.dir / "redis.log"), *self.args],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 10
        while not self._answers():
            if time.monotonic() > deadline:
                raise RuntimeError(f"redis did not start: {(self.dir / 'redis.log').read_text()[-2000:]}")
            time.sleep(0.02)

    def kill(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def restart(self, down_for: float = 0.0) -> float:
        """SIGKILL, wait, then start on the same data; returns the seconds it was down."""
        began = time.monotonic()
        self.kill()
        time.sleep(down_for)
        self.start()
        return time.monotonic() - began

    def _answers(self) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=0.5) as s:
                if self.password:
                    s.sendall(f"AUTH {self.password}\r\n".encode())
                    if not s.recv(16).startswith(b"+OK"):
                        return False
                s.sendall(b"PING\r\n")
                return s.recv(16).startswith(b"+PONG")
        except OSError:
            return False


class BotProcess:
    """`python -m bot <args>` in its own session, so SIGKILL takes its deploys with it."""

    def __init__(
        self, args: Sequence[str], env: dict[str, str], log: Path, ready: str | None = None,
        prefix: Sequence[str] = (),
    ) -> None:
        """`prefix`: what runs the process (`faketime -f +300s`: a clock five minutes ahead)."""
        self.args, self.env, self.log = list(args), env, log
        self._offset = log.stat().st_size if log.exists() else 0  # a restart appends to the log
        self.proc = subprocess.Popen(
            [*prefix, sys.executable, "-m", "bot", *self.args], env=env,
            stdout=log.open("ab"), stderr=subprocess.STDOUT, start_new_session=True,
        )
        if ready:
            self.wait_for_log(ready)

    @property
    def pid(self) -> int:
        return self.proc.pid

    def alive(self) -> bool:
        return self.proc.poll() is None

    def wait_for_log(self, text: str, timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        while text.encode() not in self.log.read_bytes()[self._offset:]:
            if not self.alive():
                raise RuntimeError(f"{self.args} exited: {self.log.read_text()[-3000:]}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"{self.args} did not log {text!r}: {self.log.read_text()[-3000:]}")
            time.sleep(0.02)

    def kill(self) -> None:
        if self.alive():
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()

    def terminate(self, timeout: float = 30) -> int:
        self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(timeout)


def worker(env: dict[str, str], log: Path) -> BotProcess:
    return BotProcess(["worker"], env, log, ready="taking work")


def web(env: dict[str, str], log: Path, *args: str) -> BotProcess:
    process = BotProcess(["serve", *args], env, log)
    url = f"http://127.0.0.1:{env['PORT']}/healthz"
    deadline = time.monotonic() + 30
    while True:
        try:
            if httpx.get(url, timeout=1).status_code == 200:
                return process
        except httpx.TransportError:
            pass
        if not process.alive() or time.monotonic() > deadline:
            raise RuntimeError(f"serve did not become healthy: {log.read_text()[-3000:]}")
        time.sleep(0.05)


def bot_command(env: dict[str, str], *args: str, timeout: float = 60) -> str:
    """`python -m bot <args>` to the end: its standard output (a failure raises, saying why)."""
    done = subprocess.run(
        [sys.executable, "-m", "bot", *args], env=env, capture_output=True, text=True, timeout=timeout,
    )
    if done.returncode != 0:
        raise RuntimeError(f"python -m bot {' '.join(args)} failed ({done.returncode}): {done.stderr[-2000:]}")
    return done.stdout
