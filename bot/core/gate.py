"""The GitHub deployment gate (docs/github-gate.md), its pure part: which `[[github_environments]]`
rule a `deployment_protection_rule` delivery falls under, what the delivery says, and the
deploy command its thread starts with. No I/O: bot/adapters/channels/github/gate.py does that.

A delivery is GitHub asking, for one job of a workflow run that targets a GitHub environment,
whether it may proceed. deploybot answers it as a deploy of the job's commit to the
deploybot environment the rule maps that GitHub environment to, through the same deploy path
as any other (approvers, freezes, locks, checks): "running" such a deploy is answering
`approved`, and following the run to its end. Only that one deploy step: anything else asked
in the thread later is a deploy of its own (`gated_step`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from bot.core.events import DEPLOY_STEPS, Deploy
from bot.core.thread import Thread

# Matched whole (fullmatch): `$` would let a trailing newline through, into a path or a command.
_SHA = re.compile(r"[0-9a-f]{40}")
_REPOSITORY = re.compile(r"[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+")
# GitHub's callback URL names the run: .../repos/OWNER/REPO/actions/runs/RUN_ID/deployment_protection_rule
_CALLBACK = re.compile(r"/repos/([A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+)/actions/runs/(\d+)/deployment_protection_rule")
_LOGIN = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})(?:\[bot\])?")

APPROVED = "approved"
REJECTED = "rejected"


@dataclass(frozen=True)
class GateRule:
    """`[[github_environments]]`: deployments of `repository` to its GitHub environment
    `github_environment` are deploys of `service` to deploybot's `environment`, posted to
    `notify` (besides the approvers' own approval messages)."""

    repository: str
    github_environment: str
    environment: str
    service: str = ""  # "": the service whose `github` is the repository
    notify: tuple[str, ...] = ()


@dataclass(frozen=True)
class Requested:
    """What a `deployment_protection_rule` delivery (action `requested`) says."""

    repository: str  # owner/name
    github_environment: str
    sha: str
    ref: str
    creator: str  # the deployment's creator's login: GitHub's word about its own user
    callback_path: str  # the deployment_callback_url's path (its host is GitHub's API)
    callback_url: str
    installation: int
    run_id: int
    deployment_id: int

    def run_url(self, web_url: str = "https://github.com") -> str:
        return f"{web_url.rstrip('/')}/{self.repository}/actions/runs/{self.run_id}"


def requested(payload: Mapping[str, Any]) -> Requested | str:
    """The delivery's request, or why it is not one deploybot can answer (a missing or
    malformed field: GitHub's shape is checked, never trusted to be well formed).

    As GitHub's schema has it, the commit is the delivery's own `sha` and `ref`, and
    `deployment` may hold only its id and environment, or be null; older deliveries carried
    the commit in `deployment` only, which is read where the top level lacks it. The creator is
    the deployment's, else the delivery's `sender`."""
    if payload.get("action") != "requested":
        return "not a request (action is not 'requested')"
    try:
        repository = str(payload["repository"]["full_name"])
        environment = str(payload["environment"])
        deployment = payload.get("deployment") or {}
        if not isinstance(deployment, Mapping):
            raise TypeError("deployment")
        sha = str(payload.get("sha") or deployment["sha"]).lower()
        ref = str(payload.get("ref") or deployment.get("ref") or "")
        creator = str(_login(deployment.get("creator")) or _login(payload.get("sender")))
        callback = str(payload["deployment_callback_url"])
        installation = int(payload["installation"]["id"])
        deployment_id = int(deployment.get("id") or 0)
    except (KeyError, TypeError, ValueError):
        return "missing repository, environment, sha, deployment_callback_url or installation"
    path = re.sub(r"\Ahttps?://[^/]+", "", callback)
    path = re.sub(r"\A/api/v3", "", path)  # GitHub Enterprise Server's API lives under /api/v3
    m = _CALLBACK.fullmatch(path)
    if not _REPOSITORY.fullmatch(repository) or not _SHA.fullmatch(sha) or m is None or m[1] != repository:
        return "a malformed repository, commit or deployment_callback_url"
    if not environment or len(environment) > 255 or not _LOGIN.fullmatch(creator):
        return "a malformed environment or creator"
    return Requested(repository, environment, sha, ref[:255], creator, path, callback, installation, int(m[2]),
                     deployment_id)


def _login(user: object) -> str:
    """A GitHub user object's login ("" when there is none)."""
    return str(user.get("login") or "") if isinstance(user, Mapping) else ""


def rule_for(rules: Iterable[GateRule], repository: str, github_environment: str) -> GateRule | None:
    """The rule for a repository's GitHub environment (names compare as GitHub does: without case)."""
    return next((r for r in rules if r.repository.lower() == repository.lower()
                 and r.github_environment.lower() == github_environment.lower()), None)


def service_for(rule: GateRule, repositories: Mapping[str, str]) -> str | None:
    """The service a rule's deployments deploy: its own `service`, else the one service whose
    GitHub repository it is (`repositories`: service -> owner/name); None when that is not one."""
    if rule.service:
        return rule.service
    found = [s for s, repo in repositories.items() if repo.lower() == rule.repository.lower()]
    return found[0] if len(found) == 1 else None


def gated_step(thread: Thread, service: str, commit: str, environment: str) -> Deploy | None:
    """The deploy step that answers GitHub's deployment (of `commit` of `service` to deploybot's
    `environment`) and whose outcome is the deployment's: the thread's first deploy of them,
    not a rollback. Any other deploy in the thread is one of its own, which deploys for real;
    were it answered by following the deployment, it would be recorded as deployed while
    nothing ran. `commit` and `environment` "" (a binding kept before it held them): the
    thread's first deploy of `service`."""
    for step in (e for e in thread.events if isinstance(e, DEPLOY_STEPS)):
        if step.service != service or getattr(step, "rollback_of", None):
            continue
        if (not commit or step.tag.lower() == commit.lower()) and (not environment or step.environment == environment):
            return step
    return None


def deploy_text(service: str, request: Requested, environment: str) -> str:
    """The exact command the gated deployment's thread starts with (bot/core/commands.py):
    the commit is the tag (it resolves to itself for a gated deployment), the note says what
    it is and links the run."""
    ref = re.sub(r"[^A-Za-z0-9._/-]", "", request.ref)[:100] or "?"
    return (f"deploy {service} {request.sha} to {environment} (GitHub Actions deployment of {ref} "
            f"by {request.creator}: {request.run_url()})")
