"""Deploy rules: which environments exist, which need approval, who may approve, and
whether an approval still holds right before a deploy. Pure."""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from bot.events import ApprovalRequested, Deploy, HumanResponse

BOT_USER = "deploybot"
_TAG = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._/+-]{0,127}$")


def args_hash(service: str, tag: str, environment: str) -> str:
    blob = json.dumps({"service": service, "tag": tag, "environment": environment}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def parse_approvers(spec: str) -> dict[str, frozenset[str]]:
    """`U1,U2` (every environment) or `production:U1,U2;staging:*`. `*` means anyone."""
    rules: dict[str, frozenset[str]] = {}
    for part in filter(None, (p.strip() for p in spec.split(";"))):
        env, _, users = part.rpartition(":") if ":" in part else ("*", "", part)
        rules[env.strip() or "*"] = frozenset(u.strip() for u in users.split(",") if u.strip())
    return rules


@dataclass(frozen=True)
class Policy:
    environments: frozenset[str] = frozenset({"development", "staging", "production"})
    protected: frozenset[str] = frozenset({"production"})
    approvers: dict[str, frozenset[str]] = field(default_factory=lambda: {"*": frozenset("*")})
    approver_must_differ: bool = False
    approval_ttl: timedelta = timedelta(hours=1)
    max_steps: int = 20
    max_errors: int = 3

    def needs_approval(self, environment: str) -> bool:
        return environment in self.protected

    def invalid_deploy(self, step: Deploy) -> str | None:
        if step.environment not in self.environments:
            known = ", ".join(sorted(self.environments))
            return f"unknown environment {step.environment!r}; known environments: {known}"
        if not _TAG.match(step.tag):
            return f"{step.tag!r} is not a valid git tag name"
        return None

    def may_decide(self, user: str, request: ApprovalRequested) -> str | None:
        """Why `user` may not decide on `request`, or None when they may."""
        if not user or user == BOT_USER:
            return "the bot cannot decide on its own deploys"
        allowed = self.approvers.get(request.environment, self.approvers.get("*", frozenset()))
        if "*" not in allowed and user not in allowed:
            return f"{user} is not an approver for {request.environment}"
        if self.approver_must_differ and user in {request.requested_by, *request.requesters}:
            return f"{user} asked for this deploy and cannot also approve it"
        return None

    def may_unlock(self, user: str, environment: str, owner: str) -> str | None:
        """Why `user` may not lift a lock held by `owner`, or None. Whoever set a lock by hand
        may lift it; so may the environment's approvers (also for a stuck deploy lock)."""
        if owner == f"manual:{user}":
            return None
        allowed = self.approvers.get(environment, self.approvers.get("*", frozenset()))
        if user and user != BOT_USER and ("*" in allowed or user in allowed):
            return None
        return f"only whoever locked {environment} or its approvers can unlock it"

    def recheck(
        self,
        thread_id: str,
        step: Deploy,
        request: ApprovalRequested,
        decision: HumanResponse,
        now: datetime,
    ) -> str | None:
        """Why an approved deploy must not start now, or None when it may. The commit is
        checked by the caller, who can ask the deployer where the tag points."""
        if request.thread_id != thread_id:
            return "the approval was given in another thread (this one was forked); asking again"
        if request.args_hash != args_hash(step.service, step.tag, step.environment):
            return "the approved deploy does not match the step it guards"
        if decision.at > request.expires_at or now > request.expires_at:
            return f"the approval expired at {request.expires_at:%Y-%m-%d %H:%M} UTC"
        return None
