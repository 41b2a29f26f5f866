"""A real HTTP server that plays the parts of GitHub's REST API the GitHub deployer uses.

Tags are paginated with `Link` headers; a workflow dispatch creates a run whose title carries
the `deploy_id` input (as the documented `run-name` does) and whose `head_sha` is what the
dispatched ref (a branch or a tag) points to then; each read of a run moves it on
(queued -> in_progress -> completed) unless runs are held; a run can be cancelled. Inputs the
workflow does not declare are refused, as GitHub does; tags can be set to move the moment a
run is dispatched (the race a queued run is exposed to). Failures can be scripted.

Commits form one linear history (`commits`, oldest first; add to it with `commit()`), which
the compare endpoint answers from: a commit later in the history is ahead of an earlier one.
With no commits given, the history is the tags' commits, oldest tag first (one commit per
tag, as a repository that tags every release). Commit statuses and check runs are set per
commit (`set_status()`, `add_check_run()`) and served, paginated, as GitHub does.

A gated run (`protection_rule()`: a job waits for deploybot's answer) waits until answered:
`approved` sets it in progress, `rejected` completes it as failed; it then runs until its
deployment finishes (`finish_deployment()`) or the run is ended (`end_run()`, as cancelling it
on GitHub does), never moved on by being read.

Deployments (`deployments`, oldest first) are created on a commit, branch or tag the repository
has, checked against its commit statuses unless `required_contexts` is `[]`, listed newest
first (filtered by sha, ref, task and environment), and given statuses (`deployment_statuses`:
deployment id -> the statuses posted to it, in order; listed newest first, as GitHub does).
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http.server import ThreadingHTTPServer
from typing import Any, TypeVar
from urllib.parse import parse_qs, unquote, urlsplit

from bot.testing.http import serve, stop, url

Answer = tuple[int, Any, dict[str, str]]
T = TypeVar("T")


def _not_found() -> Answer:
    return 404, {"message": "Not Found"}, {}


def _page(query: dict[str, str]) -> tuple[int, int]:
    """The query's per_page and page, GitHub's defaults where missing."""
    return int(query.get("per_page", 30)), int(query.get("page", 1))


def _chunk(items: list[T], per_page: int, page: int) -> list[T]:
    """Page `page` (from 1) of `items`, `per_page` a page."""
    return items[(page - 1) * per_page : page * per_page]


@dataclass
class FakeGitHub:
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

    def move_tag(self, name: str, sha: str) -> None:
        with self._lock:
            self.tags = [(n, sha if n == name else s) for n, s in self.tags]

    def commit(
        self, message: str, author: str = "Dev Eloper", login: str | None = "dev", sha: str | None = None,
        tag: str | None = None, date: str | None = None,
    ) -> str:
        """Add a commit on top of the history (tagged `tag`, as the newest tag; committed at
        `date`, ISO 8601, if given); its sha."""
        with self._lock:
            if not self.commits:
                self.commits = self._history()
            sha = sha or f"{len(self.commits) + 1:040x}"
            self.commits.append({"sha": sha, "message": message, "author": author, "login": login, "date": date})
            if tag:
                self.tags = [(tag, sha), *((n, s) for n, s in self.tags if n != tag)]
            return sha

    def set_status(self, sha: str, context: str, state: str) -> None:
        """The latest commit status of `context` on `sha` (success, pending, failure, error)."""
        with self._lock:
            self.statuses.setdefault(sha, {})[context] = state

    def add_check_run(self, sha: str, name: str, status: str = "completed", conclusion: str | None = "success") -> None:
        """A check run on `sha`; one of the same name replaces it (GitHub lists the latest)."""
        with self._lock:
            runs = [r for r in self.check_runs.get(sha, []) if r["name"] != name]
            run_id = 5000 + sum(len(r) for r in self.check_runs.values())
            runs.append({"id": run_id, "head_sha": sha, "name": name, "status": status,
                         "conclusion": conclusion if status == "completed" else None})
            self.check_runs[sha] = runs

    def app_key(self) -> str:
        """A new RSA key pair for the App: the private key (PEM) for deploybot; the public
        key is what this stand-in verifies app JWTs with, as GitHub does."""
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric import rsa

        key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.app_public_key = key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo).decode()
        return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL,
                                 serialization.NoEncryption()).decode()

    def protection_rule(
        self, environment: str, sha: str, creator: str = "octocat", ref: str = "main", installation: int = 77,
        repository: str | None = None,
    ) -> dict[str, Any]:
        """A job of a new workflow run targets `environment`: its deployment is made (waiting)
        and the `deployment_protection_rule` delivery GitHub would send is returned."""
        repository = repository or self.repository
        with self._lock:
            run_id = 1000 + len(self.runs)
            self.runs[run_id] = {"id": run_id, "workflow": "gated.yml", "name": "deploy", "status": "waiting",
                                 "conclusion": None, "head_sha": sha, "event": "push",
                                 "html_url": f"https://github.com/{repository}/actions/runs/{run_id}"}
            deployment_id = 1 + len(self.deployments)
            deployment = {"id": deployment_id, "sha": sha, "ref": ref, "task": "deploy", "environment": environment,
                          "creator": {"login": creator}, "payload": {}, "created_at": datetime.now(UTC).isoformat()}
            self.deployments.append(deployment)
            self.deployment_statuses[deployment_id] = [{"id": 9000 + deployment_id, "state": "waiting"}]
            self.gated_runs[run_id] = deployment_id
        return {
            "action": "requested", "environment": environment, "event": "push",
            "deployment_callback_url": f"{self.api_url}/repos/{repository}/actions/runs/{run_id}/"
                                       "deployment_protection_rule",
            "deployment": {k: v for k, v in deployment.items() if k != "payload"},
            "repository": {"full_name": repository}, "installation": {"id": installation},
            "sender": {"login": creator}, "pull_requests": [],
        }

    def finish_deployment(self, deployment_id: int, state: str) -> None:
        """The job that was let go ended: its deployment's newest status is `state`."""
        with self._lock:
            statuses = self.deployment_statuses[deployment_id]
            statuses.append({"id": 9000 + deployment_id + 100 * len(statuses), "state": state})
            run = next(r for r, d in self.gated_runs.items() if d == deployment_id)
            self._end(run, "success" if state == "success" else "failure")

    def finish_every_deployment(self, state: str = "error") -> None:
        """Every gated job still running ends (`state`): no test leaves one to be followed."""
        for deployment_id in list(self.gated_runs.values()):
            if self.deployment_statuses[deployment_id][-1]["state"] == "waiting":
                self.finish_deployment(deployment_id, state)

    def end_run(self, run_id: int, conclusion: str) -> None:
        """The gated run ends (`cancelled`, `failure`, `timed_out`, ...) with its deployment
        never told: a run cancelled on GitHub, or a job that died before it reported."""
        with self._lock:
            self._end(run_id, conclusion)

    def _end(self, run_id: int, conclusion: str) -> None:
        self.runs[run_id]["status"], self.runs[run_id]["conclusion"] = "completed", conclusion

    def release_runs(self) -> None:
        self.hold_runs = False

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
                return _not_found()
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

    def _authorized(self, authorization: str) -> bool:
        """The token, or an installation token that has not expired."""
        token = authorization.removeprefix("Bearer ")
        if authorization == f"Bearer {self.token}":
            return True
        issued = self.installation_tokens.get(token)
        return issued is not None and issued[1] > datetime.now(UTC).timestamp()

    def _installation_token(self, method: str, installation: int, authorization: str) -> Answer:
        """GitHub's `POST /app/installations/{id}/access_tokens`: the app JWT verified with
        the App's public key (RS256, issued by the App, at most 10 minutes long)."""
        import jwt

        if method != "POST":
            return _not_found()
        try:
            claims = jwt.decode(authorization.removeprefix("Bearer "), self.app_public_key, algorithms=["RS256"],
                                options={"require": ["iat", "exp", "iss"]}, leeway=0)
        except (jwt.PyJWTError, ValueError):
            return 401, {"message": "A JSON web token could not be decoded"}, {}
        if str(claims["iss"]) != str(self.app_id) or claims["exp"] - claims["iat"] > 600:
            return 401, {"message": "'Expiration time' claim ('exp') is too far in the future"}, {}
        self.app_jwts.append(claims)
        token = f"ghs_{installation}_{len(self.installation_tokens)}"
        expires = datetime.now(UTC).timestamp() + self.token_seconds
        self.installation_tokens[token] = (installation, expires)
        return 201, {"token": token, "expires_at": datetime.fromtimestamp(expires, UTC).isoformat()
                     .replace("+00:00", "Z")}, {}

    def _callback(self, method: str, repository: str, run_id: int, authorization: str, body: Any) -> Answer:
        """GitHub's review of a deployment protection rule: an installation token only."""
        issued = self.installation_tokens.get(authorization.removeprefix("Bearer "))
        if method != "POST" or repository != self.repository or run_id not in self.runs:
            return _not_found()
        if issued is None:
            return 403, {"message": "Resource not accessible by personal access token"}, {}
        body = body or {}
        if body.get("state") not in ("approved", "rejected") or not body.get("environment_name"):
            return 422, {"message": "Invalid request: state and environment_name are required"}, {}
        self.callbacks.append({"run_id": run_id, "installation": issued[0], **body})
        if self.runs[run_id]["status"] == "waiting":  # the job goes, or fails without running
            if body["state"] == "approved":
                self.runs[run_id]["status"] = "in_progress"
            else:
                self._end(run_id, "failure")
        return 204, None, {}

    def _route(self, method: str, path: str, query: dict[str, str], body: Any) -> Answer:
        for methods, pattern, handle in _ROUTES:  # the first that matches: order matters
            if method in methods and (m := re.fullmatch(pattern, path)):
                return handle(self, m, query, body or {})
        return _not_found()

    def _commit(self, ref: str) -> Answer:
        sha = dict(self.tags).get(ref)
        if sha is None:  # a commit by its sha: the whole commit, as GitHub answers it
            commit = next((c for c in self._history() if c["sha"] == ref), None)
            if commit is not None:
                return 200, self._commit_json(commit), {}
            return 422, {"message": f"No commit found for SHA: {ref}"}, {}
        return 200, {"sha": sha}, {}

    def _runs(self, workflow: str) -> Answer:
        runs = [r for r in self.runs.values() if r["workflow"] == workflow]
        runs.sort(key=lambda r: r["id"], reverse=True)
        return 200, {"total_count": len(runs), "workflow_runs": runs}, {}

    def _run(self, run_id: int) -> Answer:
        run = self.runs.get(run_id)
        if run is None:
            return _not_found()
        self._advance(run)
        return 200, run, {}

    def _tags(self, per_page: int, page: int) -> Answer:
        chunk = _chunk(self.tags, per_page, page)
        headers = {}
        if page * per_page < len(self.tags):
            nxt = f"{self.api_url}/repos/{self.repository}/tags?per_page={per_page}&page={page + 1}"
            headers["Link"] = f'<{nxt}>; rel="next"'
        return 200, [{"name": n, "commit": {"sha": s}} for n, s in chunk], headers

    def _history(self) -> list[dict[str, Any]]:
        """The commits, oldest first: those given, or else one per tag (oldest tag first)."""
        if self.commits:
            return self.commits
        history, seen = [], set()
        for name, sha in reversed(self.tags):
            if sha not in seen:
                seen.add(sha)
                history.append({"sha": sha, "message": f"release {name}", "author": "t", "login": None})
        return history

    def _known_shas(self) -> set[str]:
        """Every commit the repository has: in the history, tagged, or a branch's head."""
        return {c["sha"] for c in self._history()} | {s for _, s in self.tags} | set(self.branches.values())

    def _compare(self, base: str, head: str, query: dict[str, str]) -> Answer:
        history = self._history()
        index = {c["sha"]: i for i, c in enumerate(history)}
        b, h = (index.get(self._ref_sha(ref) or ref) for ref in (base, head))
        if b is None or h is None:
            return _not_found()
        commits = history[b + 1 : h + 1]  # what head has that base lacks (none when behind)
        if "per_page" in query or "page" in query:
            commits = _chunk(commits, *_page(query))
        else:
            commits = commits[-250:]  # unpaged: up to 250, the last being the newest
        status = "identical" if b == h else "ahead" if h > b else "behind"
        return 200, {
            "status": status,
            "ahead_by": max(h - b, 0),
            "behind_by": max(b - h, 0),
            "total_commits": max(h - b, 0),
            "base_commit": self._commit_json(history[b]),
            "merge_base_commit": self._commit_json(history[min(b, h)]),
            "commits": [self._commit_json(c) for c in commits],
        }, {}

    def _commit_json(self, commit: dict[str, Any]) -> dict[str, Any]:
        return {
            "sha": commit["sha"],
            "commit": {"message": commit["message"],
                       "author": {"name": commit["author"], "email": "dev@example.com"},
                       **({"committer": {"date": commit["date"]}} if commit.get("date") else {})},
            "author": {"login": commit["login"]} if commit.get("login") else None,
        }

    def _checks(self, ref: str, kind: str, per_page: int, page: int) -> Answer:
        sha = self._ref_sha(ref) or ref
        known = self._known_shas()
        if sha not in known:
            return 422, {"message": f"No commit found for SHA: {ref}"}, {}
        per_page = min(per_page, 100)
        if kind == "status":
            items: list[dict[str, Any]] = [{"context": c, "state": s} for c, s in self.statuses.get(sha, {}).items()]
        else:
            items = list(self.check_runs.get(sha, []))
        chunk = _chunk(items, per_page, page)
        headers = {}
        if page * per_page < len(items):
            nxt = f"{self.api_url}/repos/{self.repository}/commits/{ref}/{kind}?per_page={per_page}&page={page + 1}"
            headers["Link"] = f'<{nxt}>; rel="next"'
        if kind == "check-runs":
            return 200, {"total_count": len(items), "check_runs": chunk}, headers
        states = [s["state"] for s in items]
        combined = ("failure" if {"failure", "error"} & set(states)
                    else "pending" if not states or "pending" in states else "success")
        return 200, {"state": combined, "sha": sha, "total_count": len(items), "statuses": chunk}, headers

    def _dispatch(self, workflow: str, body: dict[str, Any]) -> Answer:
        inputs = body.get("inputs") or {}
        missing = [k for k in ("tag", "environment", "deploy_id") if not inputs.get(k)]
        if not body.get("ref") or missing:
            return 422, {"message": f"Required input '{(missing or ['ref'])[0]}' not provided"}, {}
        unexpected = [k for k in inputs if k not in self.inputs]
        if unexpected:
            return 422, {"message": f"Unexpected inputs provided: {json.dumps(unexpected)}"}, {}
        if self.moves_at_dispatch:
            self.tags = [(n, self.moves_at_dispatch.pop(n, s)) for n, s in self.tags]
        head_sha = self._ref_sha(body["ref"])
        if head_sha is None:
            return 422, {"message": f"No ref found for: {body['ref']}"}, {}
        self.dispatches.append({"workflow": workflow, **body})
        run_id = 1000 + len(self.runs)
        self.runs[run_id] = {
            "id": run_id,
            "workflow": workflow,
            "name": "deploy",
            "display_title": f"deploy {inputs['tag']} to {inputs['environment']} ({inputs['deploy_id']})",
            "event": "workflow_dispatch",
            "head_sha": head_sha,
            "status": "queued",
            "conclusion": None,
            "html_url": f"https://github.com/{self.repository}/actions/runs/{run_id}",
            "created_at": datetime.now(UTC).isoformat(),
        }
        return 204, None, {}

    def _ref_sha(self, ref: str) -> str | None:
        """The commit a branch or tag name (or refs/heads/..., refs/tags/...) points to."""
        tags = dict(self.tags)
        if ref.startswith("refs/heads/"):
            return self.branches.get(ref.removeprefix("refs/heads/"))
        if ref.startswith("refs/tags/"):
            return tags.get(ref.removeprefix("refs/tags/"))
        return self.branches.get(ref) or tags.get(ref)

    DEPLOYMENT_STATES = ("error", "failure", "inactive", "in_progress", "queued", "pending", "success")

    def _create_deployment(self, body: dict[str, Any]) -> Answer:
        ref = body.get("ref")
        if not isinstance(ref, str) or not ref:
            return 422, {"message": "Invalid request.\n\n\"ref\" wasn't supplied."}, {}
        known = self._known_shas()
        sha = ref if ref in known else self._ref_sha(ref)
        if sha is None:
            return 422, {"message": f"No ref found for: {ref}"}, {}
        required = body.get("required_contexts")
        contexts = self.statuses.get(sha, {})
        failing = [c for c, s in contexts.items() if s != "success" and (required is None or c in required)]
        if failing:
            return 409, {"message": f"Conflict: Commit status checks failed for {ref}."}, {}
        deployment_id = 7000 + len(self.deployments)
        deployment = {
            "id": deployment_id, "sha": sha, "ref": ref, "task": body.get("task", "deploy"),
            "payload": body.get("payload", {}), "environment": body.get("environment", "production"),
            "description": body.get("description", ""),
            "transient_environment": body.get("transient_environment", False),
            "production_environment": body.get("production_environment",
                                               body.get("environment", "production") == "production"),
            "created_at": datetime.now(UTC).isoformat(),
            "request": body,  # what was sent, for tests (not a field GitHub has)
        }
        self.deployments.append(deployment)
        self.deployment_statuses[deployment_id] = []
        return 201, deployment, {}

    def _list_deployments(self, query: dict[str, str]) -> Answer:
        found = [d for d in reversed(self.deployments)
                 if all(query.get(k) in (None, d[k]) for k in ("sha", "ref", "task", "environment"))]
        per_page, page = _page(query)
        return 200, _chunk(found, min(per_page, 100), page), {}

    def _deployment_status(self, deployment_id: int, body: dict[str, Any]) -> Answer:
        if deployment_id not in self.deployment_statuses:
            return _not_found()
        if body.get("state") not in self.DEPLOYMENT_STATES:
            return 422, {"message": f"Invalid request: state {body.get('state')!r} is not a valid state"}, {}
        if len(body.get("description") or "") > 140:
            return 422, {"message": "description is too long (maximum is 140 characters)"}, {}
        statuses = self.deployment_statuses[deployment_id]
        deployment = next(d for d in self.deployments if d["id"] == deployment_id)
        status = {
            "id": 9000 + sum(len(s) for s in self.deployment_statuses.values()),
            "state": body["state"], "description": body.get("description", ""),
            "environment": body.get("environment", deployment["environment"]),
            "log_url": body.get("log_url", ""),
            "target_url": body.get("log_url") or body.get("target_url", ""),  # log_url sets target_url too
            "environment_url": body.get("environment_url", ""),
            "created_at": datetime.now(UTC).isoformat(),
            "request": body,  # what was sent, for tests
        }
        statuses.append(status)
        return 201, status, {}

    def _statuses(self, deployment_id: int) -> Answer:
        if deployment_id not in self.deployment_statuses:
            return _not_found()
        return 200, list(reversed(self.deployment_statuses[deployment_id])), {}

    def _cancel(self, run_id: int) -> Answer:
        run = self.runs.get(run_id)
        if run is None:
            return _not_found()
        if run["status"] == "completed":
            return 409, {"message": "Cannot cancel a workflow run that is completed."}, {}
        self.cancels.append(run_id)
        run["status"], run["conclusion"] = "completed", "cancelled"
        return 202, {}, {}

    def _advance(self, run: dict[str, Any]) -> None:
        if run["id"] in self.gated_runs:  # it ends with its deployment, or end_run()
            return
        if run["status"] == "queued":
            run["status"] = "in_progress"
        elif run["status"] == "in_progress" and not self.hold_runs:
            run["status"], run["conclusion"] = "completed", self.conclusion


# What the fake answers: (methods, path pattern, handler(fake, match, query, body)).
_Handler = Callable[[FakeGitHub, re.Match[str], dict[str, str], Any], Answer]
_ROUTES: tuple[tuple[tuple[str, ...], str, _Handler], ...] = (
    (("GET",), r"/tags", lambda f, m, q, b: f._tags(*_page(q))),
    (("GET",), r"/compare/(.+?)\.\.\.(.+)", lambda f, m, q, b: f._compare(unquote(m[1]), unquote(m[2]), q)),
    (("GET",), r"/commits/(.+)/(status|check-runs)", lambda f, m, q, b: f._checks(unquote(m[1]), m[2], *_page(q))),
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
