"""Deploy rules: which environments exist, which need approval and from whom (each
environment's people.Rules), and whether an approval still holds right before a deploy. Pure.
Who may do what under these rules is bot/core/authority.py's to answer, and no one else's."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from types import MappingProxyType

from bot.core import people, wording
from bot.core.catalog import Catalog
from bot.core.events import ApprovalRequested, ApprovalRulesChanged, Deploy, HumanResponse, principal_of
from bot.core.freeze_windows import Freeze
from bot.core.people import ANYONE, BOT_USER, Directory, Identity, Normalise, Rules
from bot.core.promotion import Promotion
from bot.core.thread import ApprovalRules, Thread
from bot.core.verification import VerifyPlan

__all__ = ["BOT_USER", "Policy", "PolicyError", "Timing", "args_hash", "parse_approvers", "parse_required"]

DEFAULT_ENVIRONMENTS = frozenset({"development", "staging", "production"})
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


class PolicyError(ValueError):
    """The rules cannot be built: `problems` has one line each (startup errors)."""

    def __init__(self, problems: Iterable[str]) -> None:
        self.problems = list(problems)
        super().__init__("\n".join(self.problems))


@dataclass(frozen=True)
class Timing:
    """How an environment's approval requests behave over time."""

    remind_after: timedelta | None = timedelta(seconds=900)  # None: never reminded
    escalate_after: timedelta | None = None
    escalate_to: frozenset[str] = frozenset()  # people, as principals
    required: int = 1  # approvals from different people

    def escalates(self) -> bool:
        return self.escalate_after is not None and bool(self.escalate_to)


def parse_required(spec: str) -> dict[str, int]:
    """REQUIRED_APPROVALS: `production:2` or `production:2;staging:1`."""
    found: dict[str, int] = {}
    for part in filter(None, (p.strip() for p in spec.split(";"))):
        env, _, count = part.rpartition(":")
        if not env.strip() or not count.strip().isdigit() or int(count) < 1:
            raise ValueError(f"REQUIRED_APPROVALS: {part!r} is not ENVIRONMENT:COUNT (like production:2)")
        found[env.strip()] = int(count)
    return found


def _open_directory() -> Directory:
    return Directory(trust_names=True)


@dataclass(frozen=True)
class Policy:
    """The rules every channel and run decides by. `rules` holds each environment's
    (people.Rules, from `people.resolve`); an environment without an entry gets anyone
    (`*`) in open mode, else nobody. `Policy()` is open mode: nothing configured."""

    environments: frozenset[str] = DEFAULT_ENVIRONMENTS
    protected: frozenset[str] = frozenset({"production"})
    rules: Mapping[str, Rules] = field(default_factory=dict)
    directory: Directory = field(default_factory=_open_directory)
    open_mode: bool = True
    approver_must_differ: bool = False  # for environments without an entry in `rules`
    approval_ttl: timedelta = timedelta(hours=1)
    max_steps: int = 20
    max_errors: int = 3
    catalog: Catalog = field(default_factory=Catalog)
    required_checks: frozenset[str] = frozenset()  # environments whose deploys need green CI
    no_lock_after_rollback: frozenset[str] = frozenset()
    freezes: tuple[Freeze, ...] = ()  # deploybot.toml's scheduled freezes
    timing: Mapping[str, Timing] = field(default_factory=dict)  # per environment; else `default_timing`
    default_timing: Timing = field(default_factory=Timing)
    # [services.NAME.verify.ENV]: how a deploy of NAME to ENV is verified after it succeeds.
    verify: Mapping[tuple[str, str], VerifyPlan] = field(default_factory=dict)

    def with_verify(self, plans: Mapping[tuple[str, str], VerifyPlan]) -> Policy:
        return replace(self, verify=MappingProxyType(dict(plans))) if plans else self

    def verify_plan(self, service: str, environment: str) -> VerifyPlan | None:
        return self.verify.get((service, environment))

    promotion: Promotion = field(default_factory=Promotion)  # the order commits go through environments

    def timing_for(self, environment: str) -> Timing:
        return self.timing.get(environment, self.default_timing)

    @classmethod
    def configured(
        cls,
        environments: Iterable[str] = DEFAULT_ENVIRONMENTS,
        protected: Iterable[str] = ("production",),
        *,
        directory: Directory | None = None,
        written: Mapping[str, people.Written] | None = None,
        listed: Mapping[str, str | Mapping[str, Iterable[str]] | None] | None = None,
        normalisers: Mapping[str, Normalise] | None = None,
        approver_must_differ: bool = False,
        approval_ttl: timedelta = timedelta(hours=1),
        max_steps: int = 20,
        max_errors: int = 3,
        catalog: Catalog | None = None,
        required_checks: frozenset[str] = frozenset(),
        no_lock_after_rollback: frozenset[str] = frozenset(),
        timing: Mapping[str, Timing] | None = None,
        default_timing: Timing | None = None,
        freezes: Iterable[Freeze] = (),
    ) -> Policy:
        """The effective rules of deploybot.toml (`directory`: its people, None without a
        file; `written`: its [environments.*], whose names join `environments`) and the
        variables listing approvers by kind (`listed`: kind -> the variable as written, None
        or "" when unset; `normalisers`: each kind's, the channels' own), failing closed (see
        people.resolve). `protected` only marks environments, it adds none.
        Raises PolicyError naming every problem."""
        tables = {kind: parse_approvers(raw) if isinstance(raw, str) else raw for kind, raw in (listed or {}).items()}
        protected = frozenset(protected)
        resolution = people.resolve(
            list(environments), protected, directory=directory, written=written,
            raw_approvers={kind: table for kind, table in tables.items() if table}, normalisers=normalisers,
            approver_must_differ=approver_must_differ,
        )
        if resolution.problems:
            raise PolicyError(resolution.problems)
        rules = resolution.rules
        problems = [
            wording.approvals_need_people(env, timing_of.required)
            for env, timing_of in sorted((timing or {}).items())
            if timing_of.required > 1 and env in rules and not _one_per_person(rules[env].approvers, directory)
        ]
        if problems:
            raise PolicyError(problems)
        return cls(
            environments=frozenset(rules),
            protected=frozenset(env for env, r in rules.items() if r.protected),
            rules=MappingProxyType(dict(rules)),
            directory=directory or Directory(trust_names=resolution.open_mode, normalisers=normalisers),
            open_mode=resolution.open_mode,
            approver_must_differ=approver_must_differ,
            approval_ttl=approval_ttl,
            max_steps=max_steps,
            max_errors=max_errors,
            catalog=catalog or Catalog(),
            required_checks=required_checks,
            no_lock_after_rollback=no_lock_after_rollback,
            timing=MappingProxyType(dict(timing or {})),
            default_timing=default_timing or Timing(),
            freezes=tuple(freezes),
        )

    def needs_approval(self, environment: str) -> bool:
        return environment in self.protected

    def invalid_deploy(self, step: Deploy) -> str | None:
        if step.environment not in self.environments:
            return wording.unknown_environment(step.environment, self.environments)
        if not _TAG.match(step.tag):
            return wording.invalid_tag(step.tag)
        return self.catalog.invalid(step.service, step.environment)

    def rules_for(self, environment: str) -> Rules:
        """`environment`'s rules: its entry, else anyone in open mode, else nobody."""
        rules = self.rules.get(environment)
        if rules is not None:
            return rules
        return Rules(
            protected=environment in self.protected,
            approvers=frozenset({ANYONE}) if self.open_mode else frozenset(),
            approver_must_differ=self.approver_must_differ,
            environment=environment,
        )

    def requesters(self, request: ApprovalRequested) -> frozenset[str]:
        """Everyone who asked for `request`, as principals. An old thread holds raw users
        (a channel's id, an API name): each also counts as the person it is now, by any kind."""
        raw = {request.requested_by, *request.requesters} - {""}
        principals = set(raw)
        for user in raw:
            for identity in (self.directory.by(kind, user) for kind in self.directory.kinds):
                if identity.person is not None:
                    principals.add(identity.person)
            agent = self.directory.agent_of(user)
            if agent is not None and agent.owner:  # what an agent asks, its owner asked
                principals.add(agent.owner)
        return frozenset(principals)

    def approval_rules(self, environment: str) -> ApprovalRules:
        """What an approval for `environment` needs under the rules in force: how many
        approvals, and from whom (principals, sorted). What a request records when asked."""
        approvers = tuple(sorted(self.rules_for(environment).approvers))
        return ApprovalRules(self.timing_for(environment).required, approvers)

    def rules_changed(self, thread: Thread, request: ApprovalRequested) -> ApprovalRulesChanged | None:
        """The event that puts `request` under the rules in force, when they are not those it
        follows now (the settings changed since it was asked); None when they are. Recorded
        before a decision and before the deploy, so the rules of that moment decide."""
        now = self.approval_rules(request.environment)
        then = thread.approval_rules(request.approval_id)
        # A request older than the record of its approvers let anyone's approval count: the
        # same as `*` now.
        if then == now or (then.approvers is None and not self._matters(thread, request, now)):
            return None
        return ApprovalRulesChanged(
            approval_id=request.approval_id, required=now.required, approvers=list(now.approvers or ()),
        )

    @staticmethod
    def _matters(thread: Thread, request: ApprovalRequested, now: ApprovalRules) -> bool:
        """Whether rules `now` decide otherwise than those of a request older than the record
        of its approvers (anyone's approval counted): another number, or an approval given
        by someone they do not admit."""
        escalation = thread.escalation(request.approval_id)
        given = thread.approvals_for(request.approval_id)
        return now.required != request.required or not all(
            now.admits(principal_of(a), escalation.to if escalation else ()) for a in given
        )

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


def _one_per_person(approvers: frozenset[str], directory: Directory | None) -> bool:
    """Two approvals from two of these principals are two people: every approver is a person
    of deploybot.toml, or every one is a raw id of one and the same channel (`<kind>:<id>`,
    as APPROVERS' Slack ids or APPROVER_EMAILS' addresses), one channel counting each account
    once. Raw ids of two channels could be one person, and `*` is anyone twice."""
    if not approvers or ANYONE in approvers:
        return False
    if directory is not None and all(a in directory.people for a in approvers):
        return True
    kinds = {kind for kind, colon, _ in (a.partition(":") for a in approvers) if colon}
    return len(kinds) == 1 and all(":" in a for a in approvers)


def lock_owner(who: Identity) -> str:
    """The owner of a lock set by hand: `manual:` and the principal (the person's name)."""
    return f"manual:{who.principal}"
