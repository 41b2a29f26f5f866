"""GitHub Actions: a workflow dispatch creates a run, each read of a run moves it on (unless
runs are held or it is gated), and a run can be cancelled or ended."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from bot.testing.fake_github.answers import Answer, not_found


class Actions:
    """The Actions part of FakeGitHub (server.py), on its fields: runs, dispatches, cancels."""

    def release_runs(self) -> None:
        self.hold_runs = False

    def end_run(self, run_id: int, conclusion: str) -> None:
        """The gated run ends (`cancelled`, `failure`, `timed_out`, ...) with its deployment
        never told: a run cancelled on GitHub, or a job that died before it reported."""
        with self._lock:
            self._end(run_id, conclusion)

    def _end(self, run_id: int, conclusion: str) -> None:
        self.runs[run_id]["status"], self.runs[run_id]["conclusion"] = "completed", conclusion

    def _runs(self, workflow: str) -> Answer:
        runs = [r for r in self.runs.values() if r["workflow"] == workflow]
        runs.sort(key=lambda r: r["id"], reverse=True)
        return 200, {"total_count": len(runs), "workflow_runs": runs}, {}

    def _run(self, run_id: int) -> Answer:
        run = self.runs.get(run_id)
        if run is None:
            return not_found()
        self._advance(run)
        return 200, run, {}

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

    def _cancel(self, run_id: int) -> Answer:
        run = self.runs.get(run_id)
        if run is None:
            return not_found()
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
