"""Deploy rules: which environments exist, which need approval, who may approve, and
whether an approval still holds right before a deploy. Pure."""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from bot import wording
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


def join_approvers(*tables: dict[str, frozenset[str]]) -> dict[str, frozenset[str]]:
    """One table from several (APPROVERS and APPROVER_EMAILS): per environment each table
    falls back to its own "*" entry, then the tables add up."""
    none: frozenset[str] = frozenset()
    environments: set[str] = set().union(*tables)
    return {
        env: none.union(*(table.get(env, table.get("*", none)) for table in tables))
        for env in environments
    }


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
            return wording.unknown_environment(step.environment, self.environments)
        if not _TAG.match(step.tag):
            return wording.invalid_tag(step.tag)
        return None

    def approvers_for(self, environment: str) -> frozenset[str]:
        """Who may approve deploys to `environment`: its own entry, else the "*" entry,
        else nobody. A "*" in it means anyone. The one rule every channel asks."""
        return self.approvers.get(environment, self.approvers.get("*", frozenset()))

    def is_named_approver(self, user: str) -> bool:
        """Whether `user` is named in any approver list ("*" names nobody): such a user
        is told why a message was refused, where a stranger is only logged."""
        return any(user in people for people in self.approvers.values())

    def _approves(self, user: str, environment: str) -> bool:
        allowed = self.approvers_for(environment)
        return bool(user) and user != BOT_USER and ("*" in allowed or user in allowed)

    def may_decide(self, user: str, request: ApprovalRequested) -> str | None:
        """Why `user` may not decide on `request`, or None when they may."""
        if not user or user == BOT_USER:
            return wording.bot_cannot_decide()
        if not self._approves(user, request.environment):
            return wording.not_an_approver(user, request.environment)
        if self.approver_must_differ and user in {request.requested_by, *request.requesters}:
            return wording.requester_cannot_approve(user)
        return None

    def may_unlock(self, user: str, environment: str, owner: str) -> str | None:
        """Why `user` may not lift a lock held by `owner`, or None. Whoever set a lock by hand
        may lift it; so may the environment's approvers (also for a stuck deploy lock)."""
        if owner == f"manual:{user}":
            return None
        if self._approves(user, environment):
            return None
        return wording.unlock_not_allowed(environment)

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
            return wording.approved_in_another_thread()
        if request.args_hash != args_hash(step.service, step.tag, step.environment):
            return wording.approval_does_not_match()
        if decision.at > request.expires_at or now > request.expires_at:
            return wording.approval_expired(request.expires_at)
        return None
