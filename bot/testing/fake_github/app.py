"""deploybot as a GitHub App (the gate, bot/adapters/channels/github_gate.py): its key pair, the
installation tokens it is issued, the gated runs (deployment protection rules) and their
callbacks."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from bot.testing.fake_github.answers import Answer, not_found


class App:
    """The GitHub App part of FakeGitHub (server.py), on its fields: the App's id and key,
    installation tokens, app JWTs, callbacks and gated runs."""

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
            return not_found()
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
            return not_found()
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
