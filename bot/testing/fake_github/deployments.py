"""Deployments: created on a commit, branch or tag the repository has (checked against its
commit statuses), listed newest first, and given statuses."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from bot.testing.fake_github.answers import Answer, not_found, page_of, paging


class Deployments:
    """The Deployments part of FakeGitHub (server.py), on its fields: deployments and
    deployment_statuses."""

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
        per_page, page = paging(query)
        return 200, page_of(found, min(per_page, 100), page), {}

    def _deployment_status(self, deployment_id: int, body: dict[str, Any]) -> Answer:
        if deployment_id not in self.deployment_statuses:
            return not_found()
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
            return not_found()
        return 200, list(reversed(self.deployment_statuses[deployment_id])), {}
