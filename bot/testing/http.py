"""The plumbing the stand-in servers share: a threaded HTTP/1.1 server on a free loopback
port, answering with JSON."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

# (method, path with query, headers, raw body) -> (status, payload, extra headers)
Route = Callable[[str, str, Any, bytes], tuple[int, Any, dict[str, str]]]


def serve(route: Route) -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive, as the real services do

        def _answer(self) -> None:
            raw = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            status, payload, headers = route(self.command, self.path, self.headers, raw)
            if isinstance(payload, str):
                data = payload.encode()
            else:
                data = b"" if payload is None else json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", headers.pop("Content-Type", "application/json"))
            self.send_header("Content-Length", str(len(data)))
            for k, v in headers.items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST = _answer  # noqa: N815 (http.server's naming)

        def log_message(self, *args: object) -> None:
            pass

    server = _Server(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


class _Server(ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that went away mid-answer (a worker SIGKILLed by the chaos suite) is
        # expected; anything else is still printed.
        import sys

        if not isinstance(sys.exc_info()[1], (BrokenPipeError, ConnectionResetError)):
            super().handle_error(request, client_address)


def url(server: ThreadingHTTPServer | None) -> str:
    assert server, "start() first"
    host, port = server.server_address[:2]
    return f"http://{host}:{port}"


def stop(server: ThreadingHTTPServer | None) -> None:
    if server:
        server.shutdown()
        server.server_close()
