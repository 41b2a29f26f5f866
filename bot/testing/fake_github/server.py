"""The stand-in itself: its fields (what a test sets and reads), scripted failures, and the
routing of every request to its part (repository.py, actions.py, deployments.py, app.py)."""

from __future__ import annotations

import hashlib
import json
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from bot.testing.fake_github.actions import Actions
from bot.testing.fake_github.answers import Answer, not_found, paging
from bot.testing.fake_github.app import App
from bot.testing.fake_github.deployments import Deployments
from bot.testing.fake_github.repository import Repository
from bot.testing.http import serve, stop, url


@dataclass
class FakeGitHub(Repository, Actions, Deployments, App):
    repository: str = "acme/shop"
    token: str = "ghp_testtoken"
    tags: list[tuple[str, str]] = field(default_factory=list)  # newest first, as (name, sha)
    branches: dict[str, str] = field(default_factory=lambda: {"main": "f" * 40})
    inputs: tuple[str, ...] = ("tag", "environment", "deploy_id", "commit")  # what the workflow declares
    moves_at_dispatch: dict[str, str] = field(default_factory=dict)  # tag -> sha, when the next run is created
    conclusion: str = "success"
    hold_runs: bool = False  # runs stay in_progress until release_runs()
    dispatches: list[dict[str, Any]] = field(default_factory=list)
    cancels: list[int] = field(default_factory=list)  # run ids asked to cancel
    runs: dict[int, dict[str, Any]] = field(default_factory=dict)
    requests: list[tuple[str, str]] = field(default_factory=list)
    not_modified: int = 0  # GETs answered 304 (If-None-Match named the current ETag)
    failures: list[tuple[str, str, Answer]] = field(default_factory=list)
    failures_after: list[tuple[str, str, Answer]] = field(default_factory=list)
    # The linear history, oldest first: {"sha", "message", "author" (name), "login" (or None)}.
    commits: list[dict[str, Any]] = field(default_factory=list)
    statuses: dict[str, dict[str, str]] = field(default_factory=dict)  # sha -> context -> state
    check_runs: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # sha -> runs, in order
    deployments: list[dict[str, Any]] = field(default_factory=list)  # as created, oldest first
    deployment_statuses: dict[int, list[dict[str, Any]]] = field(default_factory=dict)  # id -> statuses, in order
    # deploybot as a GitHub App (the gate, bot/adapters/channels/github_gate.py): the App's id,
    # its public key (PEM; `app_key()` makes the pair), the installation tokens issued
    # (token -> (installation, expires at, Unix seconds)) and the callbacks GitHub took.
    app_id: int = 4242
    app_public_key: str = ""
    token_seconds: int = 3600
    installation_tokens: dict[str, tuple[int, float]] = field(default_factory=dict)
    app_jwts: list[dict[str, Any]] = field(default_factory=list)  # the claims of every app JWT verified
    callbacks: list[dict[str, Any]] = field(default_factory=list)  # {"run_id", "installation", **body}
    gated_runs: dict[int, int] = field(default_factory=dict)  # run id -> its job's deployment id
    _server: ThreadingHTTPServer | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def api_url(self) -> str:
        return url(self._server)

    def fail(
        self, method: str, path_pattern: str, status: int, body: Any, headers: dict[str, str] | None = None
    ) -> None:
        """The next request matching `method` and the regex `path_pattern` gets this answer."""
        with self._lock:
            self.failures.append((method, path_pattern, (status, body, headers or {})))

    def fail_after(self, method: str, path_pattern: str, status: int, body: Any) -> None:
        """The next matching request is carried out, and then answered with this error (the
        answer a dispatch gets when GitHub started the run but a proxy failed on the way back)."""
        with self._lock:
            self.failures_after.append((method, path_pattern, (status, body, {})))

    def start(self) -> FakeGitHub:
        def route(method: str, path: str, headers: Any, raw: bytes) -> Answer:
            return self._answer(method, path, headers, json.loads(raw) if raw else None)

        self._server = serve(route)
        return self

    def stop(self) -> None:
        stop(self._server)

    def _answer(self, method: str, raw_path: str, headers: Any, body: Any) -> Answer:
        url = urlsplit(raw_path)
        path, query = url.path, {k: v[0] for k, v in parse_qs(url.query).items()}
        with self._lock:
            self.requests.append((method, path))
            for i, (m, pattern, answer) in enumerate(self.failures):
                if m == method and re.search(pattern, path):
                    del self.failures[i]
                    return answer
            if m := re.fullmatch(r"/app/installations/(\d+)/access_tokens", path):
                return self._installation_token(method, int(m[1]), headers.get("Authorization", ""))
            if not self._authorized(headers.get("Authorization", "")):
                return 401, {"message": "Bad credentials"}, {}
            if m := re.fullmatch(r"/repos/([^/]+/[^/]+)/actions/runs/(\d+)/deployment_protection_rule", path):
                return self._callback(method, m[1], int(m[2]), headers.get("Authorization", ""), body)
            prefix = f"/repos/{self.repository}"
            if not path.startswith(prefix + "/"):
                return not_found()
            answer = self._route(method, path[len(prefix):], query, body)
            for i, (m, pattern, failure) in enumerate(self.failures_after):
                if m == method and re.search(pattern, path):
                    del self.failures_after[i]
                    return failure
            return self._conditional(method, headers, answer)

    def _conditional(self, method: str, headers: Any, answer: Answer) -> Answer:
        """As GitHub: every GET answer carries an ETag (of its body and links), and a GET whose
        If-None-Match names the current one is a 304 with no body (counted in `not_modified`)."""
        status, payload, extra = answer
        if method != "GET" or status != 200:
            return answer
        tag = '"' + hashlib.sha256(json.dumps([payload, extra], sort_keys=True).encode()).hexdigest()[:32] + '"'
        if headers.get("If-None-Match") == tag:
            self.not_modified += 1
            return 304, None, {"ETag": tag}
        return status, payload, {**extra, "ETag": tag}

    def _route(self, method: str, path: str, query: dict[str, str], body: Any) -> Answer:
        for methods, pattern, handle in _ROUTES:  # the first that matches: order matters
            if method in methods and (m := re.fullmatch(pattern, path)):
                return handle(self, m, query, body or {})
        return not_found()


# What the fake answers: (methods, path pattern, handler(fake, match, query, body)).
_Handler = Callable[[FakeGitHub, re.Match[str], dict[str, str], Any], Answer]
_ROUTES: tuple[tuple[tuple[str, ...], str, _Handler], ...] = (
    (("GET",), r"/tags", lambda f, m, q, b: f._tags(*paging(q))),
    (("GET",), r"/compare/(.+?)\.\.\.(.+)", lambda f, m, q, b: f._compare(unquote(m[1]), unquote(m[2]), q)),
    (("GET",), r"/commits/(.+)/(status|check-runs)", lambda f, m, q, b: f._checks(unquote(m[1]), m[2], *paging(q))),
    (("GET",), r"/commits/(?:refs/tags/)?(.+)", lambda f, m, q, b: f._commit(m[1])),
    (("POST",), r"/actions/workflows/([^/]+)/dispatches", lambda f, m, q, b: f._dispatch(m[1], b)),
    (("GET",), r"/actions/workflows/([^/]+)/runs", lambda f, m, q, b: f._runs(m[1])),
    (("POST",), r"/actions/runs/(\d+)/cancel", lambda f, m, q, b: f._cancel(int(m[1]))),
    (("POST",), r"/deployments", lambda f, m, q, b: f._create_deployment(b)),
    (("GET",), r"/deployments", lambda f, m, q, b: f._list_deployments(q)),
    (("POST",), r"/deployments/(\d+)/statuses", lambda f, m, q, b: f._deployment_status(int(m[1]), b)),
    (("GET",), r"/deployments/(\d+)/statuses", lambda f, m, q, b: f._statuses(int(m[1]))),
    (("GET",), r"/actions/runs/(\d+)", lambda f, m, q, b: f._run(int(m[1]))),
)
