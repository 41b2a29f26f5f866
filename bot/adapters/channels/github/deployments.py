"""GitHub Deployments: each deploy of a service on GitHub becomes a GitHub deployment whose
status follows it, so the repository's Environments page shows what deploybot shipped.

One Notifier among the others (bot/wiring/app.py's fan-out), for the services that name their GitHub
repository (`deployer = "github"`, or the command deployer with `github = "owner/name"`).

| deploybot event | GitHub |
|---|---|
| approval_requested | create the deployment (ref: the approved commit), status `queued` |
| deploy_queued (a lock or freeze ahead) | `queued`, saying what it waits for |
| deploy_started | `in_progress` (an unprotected deploy's deployment is created here) |
| deploy_result | `success` or `failure`, with the console page and the run link |
| error on a deploy step | `error` (a deployer failure, an interrupted deploy, a failed re-check) |
| a rejection, an expired approval, a cancel | `inactive` |

Nothing was deployed when an approval is rejected, expires or the thread is cancelled, and
GitHub has no "cancelled" state. Its docs give `inactive` for a deployment that is not (or no
longer) what runs in the environment; `failure` and `error` mean the deploy itself went wrong,
and would mark the environment red on GitHub although it still runs what it ran before. So
such a deployment is closed as `inactive`, with the reason as its description.

The deployment is created with `auto_merge: false` (the approved commit is what ships) and
`required_contexts: []` (deploybot has its own CI gate, `required_checks`). Its id is kept in
the Inbox (`names.github_deployment(deploy id)`) for the later statuses. Creating is idempotent:
before a POST the deployments of that commit and environment are searched for this deploy's id
(in the payload), so a retried attempt whose answer was lost, or an event published twice,
never makes a second one.

Each deploy's statuses are posted in order, in the background (a slow GitHub never holds up a
run). Connection failures, timeouts, 408, 429, 5xx and rate limits are retried with backoff
(bot/adapters/outbound.py); any other answer, or retries running out, is recorded on the
thread as a delivery_failed event (channel `github-deployments`) and logged. The deploy itself is never affected.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol
from urllib.parse import quote

import httpx

from bot.adapters import github_api, outbound
from bot.adapters.channels.deliveries import Deliveries, Record
from bot.adapters.channels.github import names
from bot.adapters.channels.github.gate import Gated
from bot.adapters.channels.github.kind import KIND as GITHUB
from bot.core import standing
from bot.core.deploys import deploy_id as deploy_id_of
from bot.core.events import (
    DEPLOY_STEPS,
    ApprovalExpired,
    ApprovalRequested,
    Cancelled,
    Deploy,
    DeployQueued,
    DeployResult,
    DeployStarted,
    Error,
    Event,
    HumanResponse,
    principal_of,
)
from bot.core.public_url import without_userinfo
from bot.core.thread import Thread

log = logging.getLogger(__name__)

CHANNEL = "github-deployments"  # a delivery_failed event's channel
BACKOFF = (1.0, 2.0, 4.0, 8.0, 16.0)  # five retries, about half a minute in all
TIMEOUT = 10.0  # seconds per request
DESCRIPTION_MAX = 140  # GitHub's limit on a status's description
TASK = "deploy"

State = Literal["queued", "in_progress", "success", "failure", "error", "inactive"]


class Links(Protocol):
    """The Inbox's pointers (bot/adapters/redis/inbox.py)."""

    async def link(self, name: str, value: str) -> str: ...

    async def lookup(self, name: str) -> str | None: ...


@dataclass(frozen=True)
class Update:
    """One status for one deploy's GitHub deployment. `create`: make the deployment if it
    does not exist yet (a deploy that is happening); otherwise an update without one (a
    rejection of a deploy whose deployment could not be created) is dropped."""

    deploy_id: str  # thread id + step id: the key of the deployment
    thread_id: str
    service: str
    tag: str
    environment: str
    commit: str  # the approved commit ("": a thread older than commits; the tag is used)
    state: State
    description: str
    create: bool
    result: bool = False  # a deploy_result: the console's deploy page exists
    run_url: str = ""


# --- what each event means for GitHub (pure) ----------------------------------------------


def updates(thread: Thread, event: Event) -> list[Update]:
    """The status `event` gives its deploy's GitHub deployment; [] for any other event."""
    update = _update_for(thread, event)
    return [update] if update is not None else []


def _update_for(thread: Thread, event: Event) -> Update | None:
    match event:
        case ApprovalRequested():
            asked = f"waiting for approval (asked by {_who(event.requested_by)})"
            return _update(thread, event.step_id, "queued", asked, create=True)
        case DeployQueued():
            return _update(thread, event.step_id, "queued", f"waiting in line: {event.behind}", create=True)
        case DeployStarted():
            by = _approved_by(thread, event.step_id)
            return _update(thread, event.step_id, "in_progress", f"deploying{by}", create=True, commit=event.commit)
        case DeployResult():
            return _finished(thread, event)
        case HumanResponse(approval_id=str(approval_id), approve=False):
            return _rejected(thread, event, approval_id)
        case ApprovalExpired():
            return _update(thread, event.step_id, "inactive", "approval expired", create=False)
        case Cancelled():
            step = _waiting_step(thread, event)
            by = f"cancelled by {_who(principal_of(event))}"
            return _update(thread, step.id, "inactive", by, create=False) if step else None
        case Error(step_id=str(step_id)):
            started = thread.started(step_id) is not None  # else it never ran: only an existing one is closed
            # The kind only: an error's message can hold a deployer's output or a path.
            return _update(thread, step_id, "error", f"{event.kind} error (see the thread)", create=started)
    return None


def _finished(thread: Thread, result: DeployResult) -> Update | None:
    said = "deployed" if result.ok else "failed"
    if not result.ok and result.exit_code not in (None, 0):
        said += f" (exit code {result.exit_code})"
    said += _approved_by(thread, result.step_id)
    return _update(thread, result.step_id, "success" if result.ok else "failure", said, create=True,
                   commit=result.commit, result=True, run_url=result.url)


def _rejected(thread: Thread, reply: HumanResponse, approval_id: str) -> Update | None:
    found = standing.find(thread, approval_id)
    if found is None or found.decision is None or found.decision.id != reply.id:
        return None  # not the rejection that closed it
    request = found.request
    if reply.at > request.expires_at:  # a reply that closed an approval nobody decided
        why = "approval expired"
    else:
        # Not the feedback: what people wrote stays out of a repository others may read.
        why = f"rejected by {_who(principal_of(reply))}"
    return _update(thread, request.step_id, "inactive", why, create=False)


def _approved_by(thread: Thread, step_id: str) -> str:
    """", approved by <who>" for a step whose approval was granted; "" otherwise."""
    decision = _closing_approval(thread, step_id)
    return f", approved by {_who(principal_of(decision))}" if decision else ""


def _update(
    thread: Thread, step_id: str, state: State, said: str, *, create: bool, commit: str = "",
    result: bool = False, run_url: str = "",
) -> Update | None:
    step = _step(thread, step_id)
    if step is None:
        return None
    request = thread.approval_for(step_id)
    commit = commit or (request.commit if request else "")
    if not commit and (started := thread.started(step_id)):
        commit = started.commit
    return Update(
        deploy_id=deploy_id_of(thread.id, step_id), thread_id=thread.id, service=step.service, tag=step.tag,
        environment=step.environment, commit=commit, state=state,
        description=_short(f"{step.service} {step.tag}: {said}"), create=create, result=result, run_url=run_url,
    )


def _who(principal: str) -> str:
    """A person as GitHub may show them: their name in deploybot.toml; someone it does not
    name is not shown by their address or Slack id (a repository can be public)."""
    return principal if ":" not in principal else f"someone by {principal.partition(':')[0]}"


def _closing_approval(thread: Thread, step_id: str) -> HumanResponse | None:
    request = thread.approval_for(step_id)
    found = standing.of(thread, request) if request is not None else None
    return found.decision if found is not None and found.state == "approved" else None


def _step(thread: Thread, step_id: str) -> Deploy | None:
    return next((e for e in thread.events if e.id == step_id and isinstance(e, DEPLOY_STEPS)), None)


def _waiting_step(thread: Thread, cancel: Cancelled) -> Deploy | None:
    """The deploy step a cancel closed before it started: the last step, a deploy, waiting
    for approval or in line."""
    before = Thread(thread.id, tuple(e for e in thread.events if e.id != cancel.id), thread.origin)
    last = before.last_step()
    if last is None or not isinstance(last[1], DEPLOY_STEPS):
        return None
    step = last[1]
    waiting = before.approval_for(step.id) is not None or before.queued(step.id) is not None
    return step if waiting and before.started(step.id) is None and before.outcome(step) is None else None


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= DESCRIPTION_MAX else text[: DESCRIPTION_MAX - 1] + "…"


# --- the notifier ----------------------------------------------------------------------------


class GitHubDeployments:
    def __init__(
        self,
        token: str,
        repositories: Mapping[str, str],
        record: Record,
        links: Links,
        api_url: str = github_api.API_URL,
        public_url: str | None = None,
        backoff: Sequence[float] = BACKOFF,
        timeout: float = TIMEOUT,
    ) -> None:
        """`repositories`: service -> "owner/name", for the services on GitHub; `public_url`:
        PUBLIC_URL, for the console links (unset: the run link is the log)."""
        self.token, self.repositories, self.links = token, dict(repositories), links
        self.api_url = api_url.rstrip("/")
        self.public_url = without_userinfo(public_url.rstrip("/")) if public_url else None
        self.backoff, self.timeout = tuple(backoff), timeout
        self._github: github_api.GitHub | None = None
        self._deliveries = Deliveries(CHANNEL, record)
        self._last: dict[str, asyncio.Task[None]] = {}  # deploy id -> its newest update's task

    async def publish(self, thread: Thread, new: Sequence[Event]) -> None:
        gated = await self._gated(thread)
        for event in new:
            for update in updates(thread, event):
                if update.service in self.repositories and update.deploy_id != gated:
                    self._send(update)

    async def _gated(self, thread: Thread) -> str | None:
        """The deploy id of the thread's deploy that is a gated deployment, GitHub's own
        deployment: no second one is made for it (github_gate.py). Any other deploy of the
        thread is deploybot's, and gets its deployment like every other."""
        if thread.origin.channel != GITHUB:
            return None
        bound = await self.links.lookup(names.github_gate(thread.id))
        step = Gated.load(bound).step(thread) if bound else None
        return deploy_id_of(thread.id, step.id) if step is not None else None

    def _send(self, update: Update) -> None:
        """Post `update` in the background, after every earlier update of the same deploy."""
        before = self._last.get(update.deploy_id)
        task = self._deliveries.spawn(self._after(before, update))
        self._last[update.deploy_id] = task

        def done(t: asyncio.Task[None]) -> None:
            if self._last.get(update.deploy_id) is t:
                del self._last[update.deploy_id]

        task.add_done_callback(done)

    async def _after(self, before: asyncio.Task[None] | None, update: Update) -> None:
        if before is not None:
            await asyncio.gather(before, return_exceptions=True)
        try:
            await self._deliver(update)
        except Exception:  # a bug or a Redis outage: logged, never raised into the loop
            log.exception("thread %s: GitHub deployment status %s failed", update.thread_id, update.state)

    async def _deliver(self, update: Update) -> None:
        repository = self.repositories[update.service]
        what = f"GitHub deployment status {update.state} for {update.deploy_id} on {repository}"

        async def attempt() -> None:
            deployment = await self._deployment(repository, update)
            if deployment is not None:
                await self._status(repository, deployment, update)

        def reason(attempts: int, why: str) -> str:
            return (f"GitHub deployment status {update.state} for {update.service} in {update.environment}"
                    f" failed {attempts} times: {why}")

        await self._deliveries.retried(update.thread_id, repository, what, attempt, self.backoff, reason)

    # --- GitHub ----------------------------------------------------------------------------

    async def _deployment(self, repository: str, update: Update) -> int | None:
        """The deploy's GitHub deployment: the one linked, else (when `update.create`) the one
        made for it before (found by its payload), else a new one. None: none, none wanted."""
        name = names.github_deployment(update.deploy_id)
        linked = await self.links.lookup(name)
        if linked is not None:
            return int(linked)
        if not update.create:
            return None
        found = await self._find(repository, update)
        made = found if found is not None else await self._create(repository, update)
        bound = int(await self.links.link(name, str(made)))
        if bound != made:  # another process made one at the same moment: its is the one
            log.warning("deploy %s: GitHub deployment %s made twice; keeping %s", update.deploy_id, made, bound)
        return bound

    async def _find(self, repository: str, update: Update) -> int | None:
        params = {"environment": update.environment, "task": TASK, "per_page": "100"}
        params |= {"sha": update.commit} if update.commit else {"ref": update.tag}
        response = await self._call("GET", f"/repos/{repository}/deployments", params=params)
        for deployment in response.json():
            payload = deployment.get("payload")
            if isinstance(payload, str):
                try:
                    payload = json.loads(payload)
                except ValueError:
                    continue
            if isinstance(payload, dict) and (payload.get("deploybot") or {}).get("deploy_id") == update.deploy_id:
                return int(deployment["id"])
        return None

    async def _create(self, repository: str, update: Update) -> int:
        body = {
            "ref": update.commit or update.tag,
            "task": TASK,
            "auto_merge": False,  # the approved commit is what ships, never a merge
            "required_contexts": [],  # deploybot gates on CI itself (required_checks)
            "environment": update.environment,
            "description": _short(f"{update.service} {update.tag} by deploybot"),
            "transient_environment": False,
            "payload": {"deploybot": {
                "deploy_id": update.deploy_id, "thread_id": update.thread_id, "service": update.service,
                "tag": update.tag,
            }},
        }
        response = await self._call("POST", f"/repos/{repository}/deployments", json=body)
        if response.status_code != 201:  # 202: GitHub merged instead of deploying (auto_merge is off)
            raise outbound.Refused(response, github_api.message(response))
        return int(response.json()["id"])

    async def _status(self, repository: str, deployment: int, update: Update) -> None:
        body: dict[str, Any] = {
            "state": update.state, "description": update.description, "environment": update.environment,
        }
        if log_url := self._log_url(update):
            body["log_url"] = log_url  # GitHub sets target_url to it as well
        if update.run_url:
            body["environment_url"] = update.run_url
        await self._call("POST", f"/repos/{repository}/deployments/{deployment}/statuses", json=body)

    def _log_url(self, update: Update) -> str:
        """The console's page of the deploy once it has a result (the thread's until then),
        with PUBLIC_URL; without it the run link, if any."""
        if self.public_url is None:
            return update.run_url
        if update.result:
            return f"{self.public_url}/console/deploys/{quote(update.environment, safe='')}/{update.deploy_id}"
        return f"{self.public_url}/console/threads/{update.thread_id}"

    async def _call(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        """One call to GitHub, its answer checked (outbound.Retryable, outbound.Refused)."""
        if self._github is None:
            self._github = github_api.GitHub(self.token, self.api_url, self.timeout)
        return await self._github.request(method, path, **kwargs)

    async def drain(self) -> None:
        await self._deliveries.drain()

    async def aclose(self) -> None:
        await self.drain()
        if self._github is not None:
            await self._github.aclose()
            self._github = None
