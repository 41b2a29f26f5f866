"""A real Prometheus server (Debian's /usr/bin/prometheus) scraping a tiny exporter whose error
ratio the caller sets, and an HTTP health endpoint whose status the caller sets: what the
verification tests and bench/verify_rollback.py check deploys against."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import threading
import time
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
