"""A real HTTP server that plays Slack's Web API for tests and benchmarks.

Point `SLACK_API_URL` at `base_url`. Every call is recorded with its arguments; failures
can be scripted per method (rate limits with Retry-After, `channel_not_found`, ...).
`apps.connections.open` answers with `socket_url` (a bot.testing.fake_socket_mode server)
for Socket Mode; a slash command's `response_url` can point at `base_url + "response"`.
"""

from __future__ import annotations

import asyncio
import json
import threading
from dataclasses import dataclass, field
from http.server import ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs

from bot.testing.http import serve, stop, url

BOT_USER = "UBOT"


@dataclass
class Call:
    method: str
    args: dict[str, Any]
    answer: dict[str, Any] = field(default_factory=dict)


@dataclass
class FakeSlack:
    calls: list[Call] = field(default_factory=list)
    # per method: (status, body, headers, the arguments a call must contain to get it)
    failures: dict[str, list[tuple[int, dict[str, Any], dict[str, str], dict[str, Any]]]] = field(
        default_factory=dict)
    _server: ThreadingHTTPServer | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _ts: int = 0
    socket_url: str | None = None  # what apps.connections.open answers (Socket Mode)

    @property
    def base_url(self) -> str:
        return url(self._server) + "/api/"

    def fail(
        self, method: str, status: int, body: dict[str, Any], headers: dict[str, str] | None = None,
        when: dict[str, Any] | None = None,
    ) -> None:
        """The next call of `method` (whose arguments contain `when`, if given) gets this
        answer instead of success."""
        with self._lock:
            self.failures.setdefault(method, []).append((status, body, headers or {}, when or {}))

    def answer(self, args: dict[str, Any]) -> dict[str, Any]:
        """What the fake answered to the call made with `args` (e.g. the ts of a post)."""
        with self._lock:
            return next(c.answer for c in self.calls if c.args is args)

    def called(self, method: str) -> list[dict[str, Any]]:
        with self._lock:
            return [c.args for c in self.calls if c.method == method]

    async def wait_for(
        self, method: str, count: int = 1, within: float = 10, **match: Any
    ) -> list[dict[str, Any]]:
        """Wait until `method` was called `count` times with arguments containing `match`.
        Async: the bot under test usually runs in the same event loop, and must go on
        running (and calling this fake) while the test waits."""
        hits = self.matching(method, **match)
        try:
            async with asyncio.timeout(within):
                while len(hits) < count:
                    await asyncio.sleep(0.02)
                    hits = self.matching(method, **match)
        except TimeoutError:
            seen = f"{method} {match} called {len(hits)}x, not {count}x"
            raise AssertionError(f"{seen}: {self.calls}") from None
        return hits

    def matching(self, method: str, **match: Any) -> list[dict[str, Any]]:
        """The calls of `method` so far whose arguments contain `match`."""
        return [a for a in self.called(method) if all(_contains(a.get(k), v) for k, v in match.items())]

    def start(self) -> FakeSlack:
        def route(method: str, path: str, headers: Any, raw: bytes) -> tuple[int, Any, dict[str, str]]:
            path, _, query = path.partition("?")
            if "json" in (headers.get("Content-Type") or ""):
                args = json.loads(raw or b"{}")
            else:
                args = {k: v[0] for k, v in parse_qs(raw.decode()).items()}
            args = {**{k: v[0] for k, v in parse_qs(query).items()}, **args}
            return self._answer(path.rsplit("/", 1)[-1], args)

        self._server = serve(route)
        return self

    def stop(self) -> None:
        stop(self._server)

    def _answer(self, method: str, args: dict[str, Any]) -> tuple[int, dict[str, Any], dict[str, str]]:
        with self._lock:
            call = Call(method, args)
            self.calls.append(call)
            scripted = self.failures.get(method, [])
            due = next((f for f in scripted if all(_contains(args.get(k), v) for k, v in f[3].items())), None)
            if due is not None:
                scripted.remove(due)
                status, call.answer, headers, _ = due
                return status, call.answer, headers
            self._ts += 1
            call.answer = _success(method, args, f"1700000000.{self._ts:06d}")
            if method == "apps.connections.open":
                call.answer = {"ok": True, "url": self.socket_url} if self.socket_url else {
                    "ok": False, "error": "not_allowed_token_type"}
            return 200, call.answer, {}


def _success(method: str, args: dict[str, Any], ts: str) -> dict[str, Any]:
    if method == "auth.test":
        return {"ok": True, "user_id": BOT_USER, "bot_id": "BBOT", "team_id": "T1", "user": "deploybot"}
    if method in ("chat.postMessage", "chat.update"):
        return {"ok": True, "channel": args.get("channel"), "ts": args.get("ts", ts)}
    if method == "chat.postEphemeral":
        return {"ok": True, "message_ts": ts}
    return {"ok": True}


def _contains(actual: Any, expected: Any) -> bool:
    if isinstance(expected, str) and isinstance(actual, (str, list, dict)):
        return expected in (actual if isinstance(actual, str) else json.dumps(actual))
    return actual == expected
