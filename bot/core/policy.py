"""Deploy rules: which environments exist, which need approval, who may approve, lock and
unlock (people, by bot/core/people.py's rules), and whether an approval still holds right before
a deploy. Pure."""

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
from bot.core.people import ANYONE, BOT_USER, Directory, Identity, Rules
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


_ANYONE = Rules(protected=True, approvers=frozenset({ANYONE}))


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

    def may_skip_verification(self, who: Identity, environment: str) -> str | None:
        """Why `who` may not skip a deploy's verification in `environment`, or None: only
        whoever may approve deploys there may."""
        why = people.may_approve(who, self.rules_for(environment), frozenset())
        return None if why is None else wording.may_not_skip_verification(who.label, environment)
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
        approvers: str | Mapping[str, Iterable[str]] | None = None,
        approver_emails: str | Mapping[str, Iterable[str]] | None = None,
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
        variables (APPROVERS and APPROVER_EMAILS as written, None or "" when unset), failing
        closed (see people.resolve). `protected` only marks environments, it adds none.
        Raises PolicyError naming every problem."""
        slack = parse_approvers(approvers) if isinstance(approvers, str) else approvers
        email = parse_approvers(approver_emails) if isinstance(approver_emails, str) else approver_emails
        protected = frozenset(protected)
        resolution = people.resolve(
            list(environments), protected, directory=directory, written=written,
            slack_approvers=slack or None, email_approvers=email or None,
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
            directory=directory or Directory(trust_names=resolution.open_mode),
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

    def may_force(self, who: Identity, environment: str) -> str | None:
        """Why `who` may not deploy past failing CI checks or a freeze to `environment`, or
        None: its approvers may (the requester too: forcing is not approving, which still
        follows where the environment is protected)."""
        why = people.may_approve(who, self.rules_for(environment), frozenset())
        if why is None:
            return None
        return why if who.via == people.AGENT else wording.may_not_force(who.label, environment)

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

    def email_approvers(self, environment: str) -> list[tuple[str | None, str]]:
        """Where approval emails for `environment` go: (person, address) for each address
        of each person who may approve, and (None, address) for each address an approver
        list names for nobody. `*` sends nothing: anyone is nobody's address."""
        found: dict[str, str | None] = {}
        for principal in sorted(self.rules_for(environment).approvers):
            person = self.directory.people.get(principal)
            if person is not None:
                for address in person.emails:
                    found.setdefault(address, person.name)
            elif principal.startswith(f"{people.EMAIL}:"):
                found.setdefault(principal.removeprefix(f"{people.EMAIL}:"), None)
        return [(person, address) for address, person in found.items()]

    def requesters(self, request: ApprovalRequested) -> frozenset[str]:
        """Everyone who asked for `request`, as principals. An old thread holds raw users
        (a Slack id, an address, an API name): each also counts as the person it is now."""
        raw = {request.requested_by, *request.requesters} - {""}
        principals = set(raw)
        for user in raw:
            for identity in (self.directory.by_slack(user), self.directory.by_email(user)):
                if identity.person is not None:
                    principals.add(identity.person)
            agent = self.directory.agent_of(user)
            if agent is not None and agent.owner:  # what an agent asks, its owner asked
                principals.add(agent.owner)
        return frozenset(principals)

    def may_request(self, who: Identity, environment: str) -> str | None:
        """Why `who` may not ask for a deploy to `environment`, or None: anyone may, but an
        agent only for the environments its [agents.NAME] entry lists (none listed: any)."""
        agent = self.directory.agent_of(who.principal) if who.via == people.AGENT else None
        if agent is not None and agent.environments and environment not in agent.environments:
            return wording.agent_environment_not_allowed(agent.name, environment, agent.environments)
        return None

    def may_decide(
        self, who: Identity, request: ApprovalRequested, escalated_to: Iterable[str] = ()
    ) -> str | None:
        """Why `who` may not decide on `request`, or None when they may: an approver of its
        environment (by person: any channel is the same approver), or someone it was
        escalated to, and, with approver_must_differ, nobody who asked for it by any channel."""
        rules = self.rules_for(request.environment)
        extra = frozenset(escalated_to)
        if extra:
            rules = replace(rules, approvers=rules.approvers | extra)
        asked = self.requesters(request)
        why = people.may_approve(who, rules, asked)
        if why is None and rules.approver_must_differ and who.evidence in asked:
            why = wording.requester_cannot_approve(who.label)  # an old thread's raw user
        return why

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

    def still_to_decide(self, thread: Thread, request: ApprovalRequested) -> list[str]:
        """Who may still decide on `request`, as principals (`*`: anyone): its environment's
        approvers and whoever it was escalated to, but not those who approved already (one of
        several). What reminders name, in every channel."""
        escalation = thread.escalation(request.approval_id)
        principals = set(self.rules_for(request.environment).approvers) | set(escalation.to if escalation else ())
        if ANYONE in principals:
            return [ANYONE]
        approved = {principal_of(a) for a in thread.approvals_for(request.approval_id)}
        return sorted(principals - approved)

    def may_lock(self, who: Identity, environment: str) -> str | None:
        """Why `who` may not lock `environment`, or None: by default its approvers may
        (`may_lock` in deploybot.toml says otherwise); the refusal names who can."""
        return people.may_lock(who, self.rules_for(environment))

    def may_stop(self, who: Identity, scope: str) -> str | None:
        """Why `who` may not stop (or resume) deploys to `scope` (an environment, or "*":
        every one): whoever may lock each environment it covers may."""
        for environment in sorted(self.environments) if scope == "*" else [scope]:
            why = self.may_lock(who, environment)
            if why:
                return why
        return None

    def may_unlock(
        self, who: Identity, environment: str, owner: str, *, target: str = "", locked_by: str = "",
    ) -> str | None:
        """Why `who` may not lift a lock held by `owner`, or None. Whoever set a lock by hand
        may lift it (someone unknown only where they may lock); so may whoever may lock the
        environment (also for a stuck deploy lock), someone else's with --force and a reason
        (bot/runtime/steps.py). `target` (`api in production`) and `locked_by` word the refusal."""
        powerless = people.may_lock(who, _ANYONE)  # the bot, nobody, the shared token
        if powerless:
            return powerless
        rules = self.rules_for(environment)
        if people.may_lock(who, rules) is None:
            return None
        if owner == lock_owner(who) and (who.known or self.open_mode):
            return None
        who_can = people.describe(rules.lockers_as_written or sorted(rules.lockers))
        return wording.unlock_not_allowed(who.label, target or environment, who_can, locked_by)

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
    of deploybot.toml, or every one is a Slack id (APPROVERS) or every one an address
    (APPROVER_EMAILS), one channel each counting each account once. A Slack id and an address
    could be one person, and `*` is anyone twice."""
    if not approvers or ANYONE in approvers:
        return False
    if directory is not None and all(a in directory.people for a in approvers):
        return True
    return any(all(a.startswith(f"{via}:") for a in approvers) for via in (people.SLACK, people.EMAIL))


def lock_owner(who: Identity) -> str:
    """The owner of a lock set by hand: `manual:` and the principal (the person's name)."""
    return f"manual:{who.principal}"
