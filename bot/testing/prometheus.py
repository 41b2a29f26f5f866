"""A real Prometheus server (Debian's /usr/bin/prometheus) scraping a tiny exporter whose error
ratio the caller sets, and an HTTP health endpoint whose status the caller sets: what the
verification tests and bench/verify_rollback.py check deploys against. And a stand-in for a
Prometheus that misbehaves (it drips its answer, or sends far too much of one), which a real
one cannot be made to do on demand."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx

from bot.testing.cluster import free_port

PROMETHEUS = shutil.which("prometheus") or "/usr/bin/prometheus"
QUERY = "app_error_ratio"


class Exporter:
    """`/metrics`: `app_error_ratio <ratio>` in the text exposition format; `/health`: answers
    `health_status` with "ok" in its body."""

    def __init__(self) -> None:
        self.ratio = 0.001
        self.health_status = 200
        exporter = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 (the standard library's name)
                if self.path == "/metrics":
                    status, body = 200, f"# TYPE app_error_ratio gauge\napp_error_ratio {exporter.ratio}\n"
                    kind = "text/plain; version=0.0.4"
                elif self.path == "/health":
                    status, body, kind = exporter.health_status, "ok\n", "text/plain"
                else:
                    status, body, kind = 404, "not found\n", "text/plain"
                data = body.encode()
                self.send_response(status)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class UnrulyPrometheus:
    """`/api/v1/query` answered as a hostile or broken server would. `drip_every` seconds
    (when set): the headers, then one byte of whitespace that often, for `drip_for` seconds,
    then a healthy answer. `size` bytes (when set): a valid, healthy answer that long, streamed
    in chunks without a length. `asked` counts the requests; `sent` is how many bytes of the
    last answer were written before the client stopped reading, and `finished` is set when
    that answer is over (written whole, or the client went away)."""

    HEALTHY = b'{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1,"0.001"]}]}}'
    CHUNK = 64 * 1024

    def __init__(self, drip_every: float = 0.0, drip_for: float = 60.0, size: int = 0) -> None:
        self.asked = 0
        self.sent = 0
        self.finished = threading.Event()
        unruly = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 (the standard library's name)
                unruly.asked += 1
                unruly.sent = 0
                unruly.finished.clear()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.end_headers()  # no length: the answer ends when the connection closes
                try:
                    for part in unruly._answer(drip_every, drip_for, size):
                        self.wfile.write(part)
                        self.wfile.flush()
                        unruly.sent += len(part)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client stopped reading: what it was meant to do
                finally:
                    unruly.finished.set()

            def log_message(self, format: str, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def _answer(self, drip_every: float, drip_for: float, size: int) -> Iterator[bytes]:
        if drip_every:
            until = time.monotonic() + drip_for
            while time.monotonic() < until:
                yield b" "
                time.sleep(drip_every)
            yield self.HEALTHY
            return
        # Series with long labels: valid JSON of `size` bytes, every value healthy.
        series = b'{"metric":{"pad":"' + b"x" * 1000 + b'"},"value":[1,"0.001"]}'
        yield b'{"status":"success","data":{"resultType":"vector","result":['
        written, chunk = 0, bytearray()
        while written < size:
            chunk += (b"," if written else b"") + series
            written += len(series) + 1
            if len(chunk) >= self.CHUNK:
                yield bytes(chunk)
                chunk.clear()
        yield bytes(chunk) + b"]}}"

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class PrometheusServer:
    """Prometheus in a temporary directory, scraping `target` (host:port) every second."""

    def __init__(self, target: str, scrape_interval: str = "1s", job: str = "app", bearer: str = "") -> None:
        """`bearer`: a token Prometheus sends with each scrape (from a file, as its docs advise)."""
        self.dir = Path(tempfile.mkdtemp(prefix="prometheus-"))
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        auth = ""
        if bearer:
            (self.dir / "token").write_text(bearer)
            auth = f"    authorization: {{type: Bearer, credentials_file: {self.dir / 'token'}}}\n"
        config = self.dir / "prometheus.yml"
        config.write_text(
            f"global:\n  scrape_interval: {scrape_interval}\n  evaluation_interval: {scrape_interval}\n"
            f"scrape_configs:\n  - job_name: {job}\n{auth}    static_configs:\n      - targets: ['{target}']\n"
        )
        self.process = subprocess.Popen(
            [PROMETHEUS, f"--config.file={config}", f"--storage.tsdb.path={self.dir / 'data'}",
             f"--web.listen-address=127.0.0.1:{self.port}"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )

    def value(self, query: str = QUERY) -> float | None:
        """What the server answers for `query` right now (None: nothing, or not up)."""
        try:
            body = httpx.get(f"{self.url}/api/v1/query", params={"query": query}, timeout=2).json()
            result = body["data"]["result"]
            return float(result[0]["value"][1]) if result else None
        except (httpx.HTTPError, ValueError, KeyError, IndexError):
            return None

    def wait_for(self, predicate: object, within: float = 30) -> float:
        """Poll until the query's value meets `predicate` (a callable on float); the value."""
        deadline = time.monotonic() + within
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"prometheus exited with {self.process.returncode}")
            found = self.value()
            if found is not None and callable(predicate) and predicate(found):
                return found
            time.sleep(0.1)
        raise TimeoutError(f"prometheus at {self.url} did not answer as expected within {within} s")

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        shutil.rmtree(self.dir, ignore_errors=True)
