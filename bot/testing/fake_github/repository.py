"""The repository: its tags (paginated with `Link` headers), its linear history of commits
(the compare endpoint answers from it), and the commit statuses and check runs on each commit."""

from __future__ import annotations

from typing import Any

from bot.testing.fake_github.answers import Answer, not_found, page_of, paging


class Repository:
    """The repository part of FakeGitHub (server.py), on its fields: tags, branches, commits,
    statuses and check runs."""

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

    def _commit(self, ref: str) -> Answer:
        sha = dict(self.tags).get(ref)
        if sha is None:  # a commit by its sha: the whole commit, as GitHub answers it
            commit = next((c for c in self._history() if c["sha"] == ref), None)
            if commit is not None:
                return 200, self._commit_json(commit), {}
            return 422, {"message": f"No commit found for SHA: {ref}"}, {}
        return 200, {"sha": sha}, {}

    def _tags(self, per_page: int, page: int) -> Answer:
        chunk = page_of(self.tags, per_page, page)
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
            return not_found()
        commits = history[b + 1 : h + 1]  # what head has that base lacks (none when behind)
        if "per_page" in query or "page" in query:
            commits = page_of(commits, *paging(query))
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
        chunk = page_of(items, per_page, page)
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

    def _ref_sha(self, ref: str) -> str | None:
        """The commit a branch or tag name (or refs/heads/..., refs/tags/...) points to."""
        tags = dict(self.tags)
        if ref.startswith("refs/heads/"):
            return self.branches.get(ref.removeprefix("refs/heads/"))
        if ref.startswith("refs/tags/"):
            return tags.get(ref.removeprefix("refs/tags/"))
        return self.branches.get(ref) or tags.get(ref)
