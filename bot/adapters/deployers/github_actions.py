"""Deploys by GitHub Actions `workflow_dispatch`, tags from GitHub's REST API.

The workflow receives `tag`, `environment` and `deploy_id` inputs and must put the deploy id
in its run name (`run-name: deploy ${{ inputs.tag }} to ${{ inputs.environment }}
(${{ inputs.deploy_id }})`): the dispatch API returns no run id, so that is how the deployer
finds the run it started, and how a resumed deploy finds a run started before a crash
instead of dispatching a second one.

The approved commit goes to the workflow too, as the input GITHUB_COMMIT_INPUT names
(`commit`), for it to check out: a tag moved after the approval cannot change what ships.
With GITHUB_REF={tag} (or the tag written out) the run is dispatched on the tag itself, so
GitHub checks out whatever the tag points to when the run is created; the run's head_sha is
then compared with the approved commit, and a run on any other commit is cancelled and
reported as failed.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Sequence
from datetime import datetime
from typing import Any
from urllib.parse import quote

import httpx

from bot.adapters import outbound
from bot.adapters.deployers import commit_times
from bot.adapters.deployers.command import commit_summary
from bot.adapters.deployers.pair import Pair
from bot.adapters.deployers.tag_order import newest_first
from bot.adapters.github_api import GitHub
from bot.core.events import CommitSummary, GitTag
from bot.runtime.ports import Check, CheckState, Comparison, DeployerError, DeployOutcome, DeployRequest

log = logging.getLogger(__name__)
RETRIES = 4
TAG_REF = "{tag}"  # GITHUB_REF: dispatch on the tag being deployed
# A commit status's state, and a completed check run's conclusion, as a Check's state. A
# conclusion not named here (stale, startup_failure, one GitHub adds later) is no pass.
STATUS_STATES: dict[str, CheckState] = {"success": "success", "pending": "pending", "error": "failure",
                                        "failure": "failure"}
CONCLUSIONS: dict[str, CheckState] = {"success": "success", "neutral": "success", "skipped": "success",
                                      "failure": "failure", "cancelled": "failure", "timed_out": "failure",
                                      "action_required": "failure"}
_SEVERITY: tuple[CheckState, ...] = ("success", "pending", "failure")  # the worse wins, for one name


class GitHubApi:
    """GitHub's REST API for one repository: one client (bot/adapters/github_api.py: headers,
    retries, rate limits, pages), and what a failure means (a DeployerError that says what to
    fix). The versions and the workflow runner share it."""

    def __init__(
        self, token: str, repository: str, api_url: str = "https://api.github.com",
        poll_seconds: float = 5.0, commit_input: str = "commit",
    ) -> None:
        self.repository, self.poll_seconds = repository, poll_seconds
        self.commit_input = commit_input  # named in the error for a workflow without that input
        self.github = GitHub(token, api_url, timeout=30)
        self.http = self.github.http

    async def aclose(self) -> None:
        await self.github.aclose()

    async def call(self, method: str, url: str, what: str, once: bool = False, **kwargs: Any) -> httpx.Response:
        """One API call with retries for network failures, 5xx and rate limits; every other
        failure becomes a DeployerError that says what to fix. `once`: a call that must not run
        twice (a dispatch) is retried only where GitHub surely did not act on it (the connection
        was never made, or a rate limit refused it); otherwise it raises outbound.Unsure."""
        try:
            return await self.github.call(method, url, self._backoff(), log, once=once, **kwargs)
        except (httpx.TransportError, outbound.Failed) as e:
            raise self._failure(e, what) from None

    async def pages(self, path: str, what: str, conditional: bool = False) -> list[httpx.Response]:
        """Every page of `path`, following the `next` links; errors as `call` makes them.
        `conditional`: asked with ETags (GitHub answers 304 for a page that did not change)."""
        try:
            return [page async for page in self.github.pages(path, self._backoff(), log, conditional=conditional)]
        except (httpx.TransportError, outbound.Failed) as e:
            raise self._failure(e, what) from None

    def _backoff(self) -> list[float]:
        return [min(2**n, 10) * self.poll_seconds for n in range(RETRIES)]

    def _failure(self, e: httpx.TransportError | outbound.Failed, what: str) -> Exception:
        """What a call that failed for good raises: unreachable, or what GitHub's answer means."""
        if isinstance(e, httpx.TransportError):
            return DeployerError(f"could not reach GitHub at {self.github.base_url}: {e!r}")
        return self.error(e.response, what)

    def error(self, response: httpx.Response, what: str) -> Exception:
        status = response.status_code
        try:
            message = response.json().get("message", "")
        except ValueError:
            message = response.text[:200]
        if status == 401:
            return DeployerError(f"GitHub rejected GITHUB_TOKEN (401 {message}); check the token")
        if status == 403 and what in ("statuses", "check runs"):
            return DeployerError(
                f"GitHub refused (403 {message}): reading {what} needs the token to have "
                f"{'statuses' if what == 'statuses' else 'checks'}:read on {self.repository}"
            )
        if status == 403:
            return DeployerError(
                f"GitHub refused (403 {message}): the token needs actions:write and contents:read "
                f"on {self.repository}"
            )
        if status == 404 and what.startswith("commit "):
            return DeployerError(
                f"GitHub found no {what} in {self.repository} (404): check the commits and GITHUB_REPOSITORY"
            )
        if status == 404:
            return DeployerError(
                f"GitHub found no {what} (404): check GITHUB_REPOSITORY={self.repository} "
                "and the workflow file names"
            )
        if status == 422 and what == "tag":  # GitHub's answer for a ref that names no commit
            return _Missing()
        if status == 422 and self.commit_input and "Unexpected inputs" in message and self.commit_input in message:
            return DeployerError(
                f"GitHub rejected the request (422): {message}; give the workflow a {self.commit_input!r} "
                "input and check out that commit (docs/channels.md#github-actions), or name its input in "
                "GITHUB_COMMIT_INPUT"
            )
        if status == 422:
            return DeployerError(f"GitHub rejected the request (422): {message}")
        return DeployerError(f"GitHub answered {status}: {message}")




class GitHubVersions:
    """Tags, commits, change previews and CI checks from GitHub."""

    def __init__(self, api: GitHubApi) -> None:
        self.api, self.repository = api, api.repository

    async def aclose(self) -> None:
        await self.api.aclose()

    async def list_tags(self) -> list[GitTag]:
        """All tags, newest first by version order (GitHub's tag list carries no dates)."""
        tags: list[GitTag] = []
        for page in await self.api.pages(f"/repos/{self.repository}/tags", what="repository", conditional=True):
            tags += [GitTag(name=t["name"], commit=t["commit"]["sha"]) for t in page.json()]
        return newest_first(tags)

    async def resolve(self, tag: str) -> str | None:
        try:
            response = await self.api.call("GET", f"/repos/{self.repository}/commits/refs/tags/{tag}", what="tag")
        except _Missing:
            return None
        return response.json()["sha"]

    async def compare(self, base: str, head: str, limit: int) -> Comparison:
        """GitHub's compare of base...head for the counts and the commits added; for the
        commits removed (a rollback), the compare the other way round. Asked without paging,
        GitHub lists up to 250 commits oldest first, the last being the newest of all."""
        forward = await self._compare(base, head)
        ahead, behind = int(forward.get("ahead_by") or 0), int(forward.get("behind_by") or 0)
        added = _newest(forward.get("commits") or [], limit) if ahead else ()
        removed: tuple[CommitSummary, ...] = ()
        if behind and limit > 0:
            removed = _newest((await self._compare(head, base)).get("commits") or [], limit)
        return Comparison(ahead=ahead, behind=behind, added=added, removed=removed)

    async def _compare(self, base: str, head: str) -> dict[str, Any]:
        path = f"/repos/{self.repository}/compare/{quote(base, safe='/')}...{quote(head, safe='/')}"
        response = await self.api.call("GET", path, what=f"commit {base[:40]!r} or {head[:40]!r}")
        return response.json()

    async def checks(self, commit: str) -> list[Check]:
        """Every commit status context (the combined status: the latest state of each) and
        every check run (the latest of each name) on `commit`; [] when it has none. A CI that
        reports one check both ways (a status and a run named alike) is one check, in its worst
        state, so it is named once."""
        ref = quote(commit, safe="/")
        found: dict[str, CheckState] = {}

        def add(name: str, state: CheckState) -> None:
            found[name] = max(found.get(name, state), state, key=_SEVERITY.index)

        for status in await self._pages(f"/repos/{self.repository}/commits/{ref}/status", "statuses", "statuses"):
            add(str(status.get("context") or "status"), STATUS_STATES.get(status.get("state") or "", "failure"))
        for run in await self._pages(f"/repos/{self.repository}/commits/{ref}/check-runs", "check_runs",
                                     "check runs"):
            state: CheckState = "pending"
            if run.get("status") == "completed":
                state = CONCLUSIONS.get(run.get("conclusion") or "", "failure")
            add(str(run.get("name") or "check run"), state)
        return [Check(name=name, state=state) for name, state in found.items()]

    async def commit_times(self, commits: Sequence[str]) -> dict[str, datetime]:
        """A call per commit, for the first GITHUB_LOOKUPS of them (callers cache the answers,
        so the rest come on later asks); a commit GitHub does not know is left out."""
        found: dict[str, datetime] = {}
        for sha in commit_times.wanted(commits)[:commit_times.GITHUB_LOOKUPS]:
            try:
                response = await self.api.call("GET", f"/repos/{self.repository}/commits/{sha}",
                                               what=f"commit {sha!r}")
            except DeployerError:
                continue  # unknown here (a 404, a 422): no lead time for it
            when = commit_times.github_time(response.json())
            if when is not None:
                found[sha] = when
        return found

    async def _pages(self, path: str, field: str, what: str) -> list[dict[str, Any]]:
        """The `field` lists of every page of `path`, following the `next` links."""
        items: list[dict[str, Any]] = []
        for page in await self.api.pages(path, what):
            items += page.json().get(field) or []
        return items


class WorkflowRunner:
    """Deploys by dispatching a GitHub Actions workflow and following its run (see the
    module's docstring for how the run is found, and why the commit goes with it)."""

    resumable = True

    def __init__(
        self, api: GitHubApi, workflows: dict[str, str], ref: str = "main", poll_seconds: float = 5.0,
        find_seconds: float = 60.0, timeout_seconds: float = 3600.0, commit_input: str = "commit",
    ) -> None:
        self.api, self.repository, self.workflows, self.ref = api, api.repository, workflows, ref
        self.commit_input = commit_input  # "": the workflow takes no commit input
        self.poll_seconds, self.find_seconds, self.timeout_seconds = poll_seconds, find_seconds, timeout_seconds

    async def aclose(self) -> None:
        await self.api.aclose()

    async def deploy(self, request: DeployRequest) -> DeployOutcome:
        workflow = self.workflows.get(request.service)
        if not workflow:
            raise DeployerError(
                f"no workflow is configured for {request.service} (GITHUB_WORKFLOW_{request.service.upper()})"
            )
        ref = request.tag if self.ref == TAG_REF else self.ref
        # Dispatched on the tag (as {tag} or written out), GitHub checks out wherever the tag
        # points when the run starts, which may not be the approved commit.
        on_tag = ref in (request.tag, f"refs/tags/{request.tag}")
        run = await self._find_run(workflow, request.deploy_id)
        if run is None:
            inputs = {"tag": request.tag, "environment": request.environment, "deploy_id": request.deploy_id}
            if self.commit_input:
                inputs[self.commit_input] = request.commit
            try:
                await self.api.call(
                    "POST",
                    f"/repos/{self.repository}/actions/workflows/{workflow}/dispatches",
                    what="workflow",
                    json={"ref": ref, "inputs": inputs},
                    once=True,
                )
            except outbound.Unsure as e:
                # GitHub may have started the run before the answer was lost: sending the
                # dispatch again could start a second one. Look for it instead.
                log.warning("deploy %s: the dispatch may or may not have reached GitHub (%s); "
                            "looking for its run instead of sending it again", request.deploy_id, e)
            run = await self._wait_for_run(workflow, request.deploy_id)
        else:
            log.info("deploy %s: following run %s started earlier", request.deploy_id, run["id"])
        if on_tag and run.get("head_sha") != request.commit:
            return await self._refuse(run, request)
        run = await self._follow(run)
        conclusion = run.get("conclusion") or run.get("status")
        return DeployOutcome(
            ok=conclusion == "success",
            exit_code=None,
            output=f"GitHub Actions run {run['id']} finished: {conclusion} ({run['html_url']})",
            url=run["html_url"],
        )

    async def _refuse(self, run: dict[str, Any], request: DeployRequest) -> DeployOutcome:
        """A run on a commit nobody approved (the tag moved after the approval): cancel it,
        wait until it stopped, and report a failed deploy, whatever the run concluded."""
        found = str(run.get("head_sha") or "an unknown commit")
        log.warning("deploy %s: run %s is on %s, not the approved %s; cancelling it",
                    request.deploy_id, run["id"], found, request.commit)
        said = (f"GitHub Actions run {run['id']} was on commit {found[:12]}, not the approved "
                f"{request.commit[:12]}: has {request.tag} moved?")
        if run.get("status") == "completed":  # found on a resume: too late to stop it
            done = f"it had already finished: {run.get('conclusion')}"
        else:
            try:
                await self.api.call("POST", f"/repos/{self.repository}/actions/runs/{run['id']}/cancel", what="run")
            except DeployerError as e:
                return DeployOutcome(False, None, f"{said}; cancelling it failed, stop it by hand: {e} "
                                     f"({run['html_url']})", run["html_url"])
            run = await self._follow(run)
            done = f"cancelled it; it finished: {run.get('conclusion')}"
        return DeployOutcome(False, None, f"{said}; {done} ({run['html_url']})", run["html_url"])

    async def _find_run(self, workflow: str, deploy_id: str) -> dict[str, Any] | None:
        response = await self.api.call(
            "GET",
            f"/repos/{self.repository}/actions/workflows/{workflow}/runs",
            what="workflow",
            params={"event": "workflow_dispatch", "per_page": 100},
        )
        for run in response.json().get("workflow_runs", []):
            if deploy_id in (run.get("display_title") or "") or deploy_id in (run.get("name") or ""):
                return run
        return None

    async def _wait_for_run(self, workflow: str, deploy_id: str) -> dict[str, Any]:
        deadline = time.monotonic() + self.find_seconds
        while time.monotonic() < deadline:
            run = await self._find_run(workflow, deploy_id)
            if run:
                return run
            await asyncio.sleep(self.poll_seconds)
        raise DeployerError(
            f"dispatched {workflow}, but no run with {deploy_id} in its name appeared within "
            f"{self.find_seconds:.0f} s; does the workflow set run-name with inputs.deploy_id?"
        )

    async def _follow(self, run: dict[str, Any]) -> dict[str, Any]:
        deadline, wait = time.monotonic() + self.timeout_seconds, self.poll_seconds
        while run.get("status") != "completed":
            if time.monotonic() > deadline:
                raise DeployerError(
                    f"run {run['id']} did not finish within {self.timeout_seconds:.0f} s: {run['html_url']}"
                )
            await asyncio.sleep(wait)
            wait = min(wait * 1.5, 30)
            run = (await self.api.call("GET", f"/repos/{self.repository}/actions/runs/{run['id']}", what="run")).json()
        return run



class GitHubDeployer(Pair):
    """GitHub's versions, deployed by a workflow, over one client."""

    def __init__(
        self,
        token: str,
        repository: str,
        workflows: dict[str, str],
        api_url: str = "https://api.github.com",
        ref: str = "main",
        poll_seconds: float = 5.0,
        find_seconds: float = 60.0,
        timeout_seconds: float = 3600.0,
        commit_input: str = "commit",
    ) -> None:
        api = GitHubApi(token, repository, api_url, poll_seconds, commit_input)
        super().__init__(GitHubVersions(api), WorkflowRunner(
            api, workflows, ref, poll_seconds, find_seconds, timeout_seconds, commit_input,
        ))
        self.api, self.http = api, api.http

    async def aclose(self) -> None:
        await self.api.aclose()  # the one client both parts use


def _newest(commits: list[dict[str, Any]], limit: int) -> tuple[CommitSummary, ...]:
    """A compare's commits (oldest first) as summaries, newest first, at most `limit`."""
    newest = list(reversed(commits))[: max(limit, 0)]
    return tuple(
        commit_summary(
            str(c.get("sha") or ""),
            ((c.get("commit") or {}).get("author") or {}).get("name") or (c.get("author") or {}).get("login") or "",
            (c.get("commit") or {}).get("message") or "",
        )
        for c in newest
    )


class _Missing(Exception):
    """An unknown ref: not an error, just no such tag."""
