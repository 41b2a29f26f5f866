"""deploybot as a GitHub App: the custom deployment protection rule of GitHub environments
(docs/github-gate.md).

GitHub asks, with a `deployment_protection_rule` delivery to `/github/webhook` (its signature
checked there first: bot/adapters/channels/github/webhook.py), whether a job of a workflow
run may deploy to a GitHub environment. `requested` turns it into a thread that asks to
deploy the job's commit, said by the deployment's creator (`github = "login"` in
`[people.*]`; GitHub's word about its own user, which the signature proves came from GitHub),
and the thread goes the way of any deploy (bot/runtime/deploying.py: approvers, N-of-M,
freezes, locks and the line, CI checks, the change preview).

"Running" a gated deploy is `GateDeployer.deploy`: answering `approved` to the
deployment_callback_url, then following the job's deployment to its end (polling its
deployment statuses, and its workflow run: one cancelled or completed without the deployment
reporting ends it, and so does `follow_seconds`) while the deploy path holds and renews the
environment's lock; its outcome is the deploy's result, so it lands in the history like any
other, and only a deployment that reported success is a success. A rejection, an expired
approval, a cancel or a deploy that cannot go (an error on its step) is answered `rejected`,
by the notifier (`publish`).

The gate is bound to the one deployment GitHub asked about (`Gated`: its id, service, commit
and environment), and only the thread's first deploy of it is answered and followed
(bot/core/gate.py `gated_step`). Any other deploy or rollback asked in the thread later goes to
the service's own deployer and runs for real, under the usual rules: following the
deployment again for it would record a deploy that never ran.

Each deployment gets one answer: it is bound in the Inbox (`names.github_gate_answer`) before
it is sent, so an `approved` and a `rejected` can never both go, and marked sent after GitHub
took it (`names.github_gate_sent`), so a resumed run never sends it twice; what was answered
is recorded on the thread. Sends are retried with backoff while GitHub is unreachable or
answers 5xx or a rate limit. A repository's environment with no `[[github_environments]]` rule
is answered `rejected` at once (fail closed). No second GitHub Deployment is made: the gated
one is GitHub's own (GitHubDeployments skips that one deploy of the thread).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from bot.adapters import outbound
from bot.adapters.channels.deliveries import Deliveries
from bot.adapters.channels.github import names
from bot.adapters.channels.github.kind import KIND as GITHUB
from bot.adapters.github_api import AppAuth
from bot.core import standing, wording
from bot.core.deploys import deploy_id, thread_of
from bot.core.events import (
    DEPLOY_STEPS,
    ApprovalExpired,
    Cancelled,
    Deploy,
    Error,
    Event,
    GitHubAnswered,
    HumanResponse,
    principal_of,
)
from bot.core.gate import APPROVED, REJECTED, GateRule, Requested, deploy_text, gated_step, rule_for, service_for
from bot.core.thread import Origin, Thread
from bot.runtime.ports import (
    Check,
    Comparison,
    Deployer,
    DeployerError,
    DeployOutcome,
    DeployRequest,
    Inbox,
    ThreadExists,
)
from bot.runtime.service import ThreadService

log = logging.getLogger(__name__)

CHANNEL = "github-gate"  # a delivery_failed event's channel
BACKOFF = (1.0, 2.0, 4.0, 8.0, 16.0, 32.0)  # about a minute of retries for a callback
GATE_TTL = 60 * 24 * 3600  # GitHub waits up to 30 days for an answer
ENDED = ("success", "failure", "error", "inactive")  # a deployment status that ends it
FOLLOW_SECONDS = 3600.0  # how long an approved job is followed at most (GITHUB_GATE_FOLLOW_SECONDS)
_CONCLUSION = re.compile(r"[a-z_]{1,30}")  # a workflow run's conclusion, as GitHub spells them
_SHA = re.compile(r"[0-9a-f]{40}")  # fullmatch: a tag ending in a newline is not a commit


@dataclass(frozen=True)
class Gated:
    """What the Inbox keeps of a gated deployment (names.github_gate), for its answer."""

    repository: str
    github_environment: str
    callback_path: str
    installation: int
    run_url: str
    deployment_id: int
    service: str
    # The deployment asked about, which only the thread's deploy of it answers (`step`): its
    # commit, deploybot's environment and the workflow run. ""/0 in a binding kept before these were.
    sha: str = ""
    environment: str = ""
    run_id: int = 0

    @classmethod
    def of(cls, request: Requested, service: str, environment: str) -> Gated:
        return cls(request.repository, request.github_environment, request.callback_path, request.installation,
                   request.run_url(), request.deployment_id, service, request.sha, environment, request.run_id)

    @classmethod
    def load(cls, stored: str) -> Gated:
        return cls(**json.loads(stored))

    def step(self, thread: Thread) -> Deploy | None:
        """The thread's deploy step that answers this deployment; every other is one of its own."""
        return gated_step(thread, self.service, self.sha, self.environment)


def thread_id_for(delivery: str) -> str:
    """The one thread a deployment_protection_rule delivery may start."""
    return hashlib.sha256(f"github-gate:{delivery}".encode()).hexdigest()[:16]


class GitHubGate:
    def __init__(
        self,
        app: AppAuth,
        rules: Sequence[GateRule],
        repositories: Mapping[str, str],
        service: ThreadService,
        inbox: Inbox,
        kick: Any,
        public_url: str | None = None,
        backoff: Sequence[float] = BACKOFF,
        poll_seconds: float = 5.0,
        follow_seconds: float = FOLLOW_SECONDS,
    ) -> None:
        """`repositories`: service -> owner/name (for a rule without its service); `kick`
        hands a thread to a worker; `follow_seconds`: how long an approved job is followed."""
        self.app, self.rules, self.repositories = app, tuple(rules), dict(repositories)
        self.service, self.inbox, self.kick = service, inbox, kick
        self.public_url = public_url.rstrip("/") if public_url else None
        self.backoff, self.poll_seconds, self.follow_seconds = tuple(backoff), poll_seconds, follow_seconds
        self._deliveries = Deliveries(CHANNEL, service.record)

    # --- in: GitHub asks --------------------------------------------------------------------

    async def requested(self, delivery: str, request: Requested) -> dict[str, Any]:
        """Start the deployment's thread, or answer `rejected` at once where no rule maps its
        environment. The caller took the delivery in once (by id and body)."""
        rule = rule_for(self.rules, request.repository, request.github_environment)
        service = service_for(rule, self.repositories) if rule is not None else None
        if rule is None or service is None:
            log.warning("github gate: %s's environment %r has no rule; rejected", request.repository,
                        request.github_environment)
            comment = wording.gate_unknown(request.repository, request.github_environment)
            self._deliveries.spawn(self._send_unknown(delivery, request, comment))
            return {"status": REJECTED}
        thread_id = thread_id_for(delivery)
        gated = Gated.of(request, service, rule.environment)
        await self.inbox.link(names.github_gate(thread_id), json.dumps(asdict(gated)), thread_id=thread_id)
        await self.inbox.link(names.github_gate_commit(service, request.sha), thread_id, thread_id=thread_id)
        who = self.service.directory.by(GITHUB, request.creator)
        text = deploy_text(service, request, rule.environment)
        try:
            await self.service.launch(text, who, GITHUB, Origin(channel=GITHUB, notify=rule.notify), thread_id,
                                      evidence=f"delivery {delivery}")
        except ThreadExists:
            pass  # started by an earlier try of this delivery
        await self.kick(thread_id)
        log.info("github gate: delivery %s asks to deploy %s to %s (thread %s)", delivery, service,
                 rule.environment, thread_id)
        return {"status": "started", "threads": [thread_id]}

    async def _send_unknown(self, delivery: str, request: Requested, comment: str) -> None:
        body = {"environment_name": request.github_environment, "state": REJECTED, "comment": comment}
        try:
            await outbound.retried(lambda: self.app.post(request.installation, request.callback_path, body),
                                   self.backoff, f"GitHub gate answer for delivery {delivery}", log)
        except outbound.FAILURES as e:
            log.error("github gate: answering delivery %s failed: %s", delivery, outbound.describe(e))

    # --- out: the one answer ----------------------------------------------------------------

    async def gated(self, thread_id: str) -> Gated | None:
        found = await self.inbox.lookup(names.github_gate(thread_id))
        return Gated.load(found) if found else None

    async def answers(self, request: DeployRequest, gated: Gated) -> bool:
        """Whether `request` is the deploy GitHub's deployment is answered by (`Gated.step`)."""
        thread = await self.service.get(thread_of(request.deploy_id))
        step = gated.step(thread)
        return step is not None and request.deploy_id == deploy_id(thread.id, step.id)

    async def answer(self, thread_id: str, gated: Gated, state: str, comment: str) -> bool:
        """Send the deployment's one answer, retried; False when another answer was bound
        first (nothing is sent then). Raises outbound's failures when retries run out."""
        bound = await self.inbox.link(names.github_gate_answer(thread_id), state, thread_id=thread_id)
        if bound != state:
            return False
        if await self.inbox.lookup(names.github_gate_sent(thread_id)) is None:
            body = {"environment_name": gated.github_environment, "state": state, "comment": comment}
            await outbound.retried(lambda: self.app.post(gated.installation, gated.callback_path, body),
                                   self.backoff, f"GitHub gate answer {state} for thread {thread_id}", log)
            await self.inbox.link(names.github_gate_sent(thread_id), state, thread_id=thread_id)
            await self._deliveries.record(thread_id, [GitHubAnswered(state=state, comment=comment)])
        return True

    def link(self, thread_id: str) -> str:
        return wording.gate_link(self.public_url, thread_id)

    # --- the notifier: what is answered rejected ---------------------------------------------

    async def publish(self, thread: Thread, new: Sequence[Event]) -> None:
        if thread.origin.channel != GITHUB:
            return
        for event in new:
            comment = self._rejection(thread, event)
            if comment is None:
                continue
            gated = await self.gated(thread.id)
            if gated is not None:
                self._deliveries.spawn(self._reject(thread.id, gated, comment))

    async def _reject(self, thread_id: str, gated: Gated, comment: str) -> None:
        try:
            await self.answer(thread_id, gated, REJECTED, comment)
        except outbound.FAILURES as e:
            why = outbound.describe(e)
            log.error("thread %s: answering GitHub rejected failed: %s", thread_id, why)
            await self._deliveries.failed(thread_id, gated.repository, f"GitHub gate answer failed: {why}",
                                          "GitHub gate answer")
        except Exception:
            log.exception("thread %s: answering GitHub rejected failed", thread_id)

    def _rejection(self, thread: Thread, event: Event) -> str | None:
        """The comment `event` answers the deployment `rejected` with; None: not an end."""
        link = self.link(thread.id)
        match event:
            case HumanResponse(approval_id=str(approval_id), approve=False):
                found = standing.find(thread, approval_id)
                if found is None or found.decision is None or found.decision.id != event.id:
                    return None
                if event.at > found.expires_at:
                    return wording.gate_expired(link)
                return wording.gate_rejected(principal_of(event), event.text, link)
            case ApprovalExpired():
                return wording.gate_expired(link)
            case Cancelled():
                return wording.gate_cancelled(principal_of(event), event.reason, link)
            case Error(step_id=str(step_id)) if thread.started(step_id) is None and _is_deploy(thread, step_id):
                return wording.gate_not_deploying(event.message, link)
        return None

    # --- running a gated deploy ----------------------------------------------------------------

    def wrap(self, service: str, deployer: Deployer) -> GateDeployer:
        return GateDeployer(deployer, self, service)

    async def approve_and_follow(self, request: DeployRequest, gated: Gated) -> DeployOutcome:
        """Answer `approved` (once), then follow the job's deployment to its end."""
        thread_id = thread_of(request.deploy_id)
        approvers = await self._approvers(thread_id, request.deploy_id)
        comment = wording.gate_approved(approvers, request.environment, self.link(thread_id))
        try:
            sent = await self.answer(thread_id, gated, APPROVED, comment)
        except outbound.FAILURES as e:
            raise DeployerError(f"could not answer GitHub approved: {outbound.describe(e)}") from None
        if not sent:
            return DeployOutcome(False, None, "GitHub was answered rejected already: nothing deploys", gated.run_url)
        ok, ended = await self._follow(gated)
        return DeployOutcome(ok, None, f"{wording.gate_answered(APPROVED, comment)}\n{ended}", gated.run_url)

    async def _approvers(self, thread_id: str, deploy_id: str) -> str | None:
        """Who approved the deploy; None when it asked for no approval."""
        thread = await self.service.get(thread_id)
        step_id = deploy_id.partition("-")[2]
        request = thread.approval_for(step_id)
        if request is None:
            return None
        given = standing.of(thread, request).given
        return ", ".join(dict.fromkeys(a.person or a.user for a in given if a.approve))

    async def _follow(self, gated: Gated) -> tuple[bool, str]:
        """Whether the job deployed, and how it ended, for people: polled until it ends, or
        for follow_seconds at most, so that a job that never reports does not hold the lock
        for longer: an unknown outcome, never a success."""
        if not gated.deployment_id and not gated.run_id:
            return False, wording.gate_no_deployment()
        deadline = time.monotonic() + self.follow_seconds
        while (ended := await self._ended(gated)) is None:
            if time.monotonic() >= deadline:
                return False, wording.gate_not_reported(self.follow_seconds)
            await asyncio.sleep(self.poll_seconds)
        return ended

    async def _ended(self, gated: Gated) -> tuple[bool, str] | None:
        """How the job ended, if it did: as its deployment reported; else, once its workflow
        run completed (cancelled, or a job that died before it reported), an unknown outcome.
        The deployment is read again after the run: it may have reported as the run ended."""
        if not gated.deployment_id:  # GitHub named no deployment: the run's end is the job's
            conclusion = await self._run_ended(gated)
            return None if conclusion is None else (conclusion == "success", wording.gate_run_finished(conclusion))
        state = await self._deployment_ended(gated)
        if state is None and (conclusion := await self._run_ended(gated)) is not None:
            state = await self._deployment_ended(gated)
            if state is None:
                return False, wording.gate_run_ended(conclusion)
        return (state == "success", wording.gate_deployment_ended(state)) if state is not None else None

    async def _deployment_ended(self, gated: Gated) -> str | None:
        """The state the job's deployment ended in (its newest status); None while it runs."""
        path = f"/repos/{gated.repository}/deployments/{gated.deployment_id}/statuses"
        try:
            statuses = (await self.app.get(gated.installation, path, per_page=1)).json()
        except outbound.FAILURES as e:
            log.warning("github gate: reading %s failed: %s", path, outbound.describe(e))
            return None
        state = statuses[0].get("state") if isinstance(statuses, list) and statuses else None
        return str(state) if state in ENDED else None

    async def _run_ended(self, gated: Gated) -> str | None:
        """The conclusion of the job's workflow run once it completed (GitHub's `GET
        /repos/{owner}/{repo}/actions/runs/{run_id}`: `status` "completed", then a `conclusion`);
        None while it runs, or when it cannot be read."""
        if not gated.run_id:
            return None
        path = f"/repos/{gated.repository}/actions/runs/{gated.run_id}"
        try:
            run = (await self.app.get(gated.installation, path)).json()
        except outbound.FAILURES as e:
            log.warning("github gate: reading %s failed: %s", path, outbound.describe(e))
            return None
        if not isinstance(run, dict) or run.get("status") != "completed":
            return None
        conclusion = str(run.get("conclusion") or "")
        return conclusion if _CONCLUSION.fullmatch(conclusion) else "unknown"

    async def drain(self) -> None:
        await self._deliveries.drain()

    async def aclose(self) -> None:
        await self.drain()
        await self.app.aclose()


class GateDeployer:
    """A service's deployer that also runs its gated deploys: the deploy a
    deployment_protection_rule delivery started its thread with is answered `approved` and
    followed; any other (another thread's, or a later one in that thread) goes to `inner`.
    The commit a gated deployment asks for resolves to itself."""

    def __init__(self, inner: Deployer, gate: GitHubGate, service: str) -> None:
        self.inner, self.gate, self.service = inner, gate, service
        self.resumable = inner.resumable

    async def list_tags(self) -> list[Any]:
        return await self.inner.list_tags()

    async def resolve(self, tag: str) -> str | None:
        if _SHA.fullmatch(tag) and await self.gate.inbox.lookup(names.github_gate_commit(self.service, tag)):
            return tag
        return await self.inner.resolve(tag)

    async def compare(self, base: str, head: str, limit: int) -> Comparison:
        return await self.inner.compare(base, head, limit)

    async def checks(self, commit: str) -> list[Check] | None:
        return await self.inner.checks(commit)

    async def deploy(self, request: DeployRequest) -> DeployOutcome:
        gated = await self.gate.gated(thread_of(request.deploy_id))
        if gated is None or not await self.gate.answers(request, gated):
            return await self.inner.deploy(request)
        return await self.gate.approve_and_follow(request, gated)

    async def aclose(self) -> None:
        close = getattr(self.inner, "aclose", None)
        if close is not None:
            await close()


def _is_deploy(thread: Thread, step_id: str) -> bool:
    return any(e.id == step_id and isinstance(e, DEPLOY_STEPS) for e in thread.events)
