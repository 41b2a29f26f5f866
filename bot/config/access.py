"""People and approvals: deploybot.toml and APPROVERS, APPROVER_EMAILS, PROTECTED_ENVIRONMENTS,
APPROVER_MUST_DIFFER, REQUIRED_APPROVALS... together make the policy (bot/core/policy.py),
failing closed. `s`: the Settings; `file`: the deploybot.toml read, if any."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from datetime import timedelta

from bot.config import settings_file
from bot.config.fields import Fields
from bot.config.reading import words
from bot.config.services import catalog
from bot.config.settings_file import FileConfig
from bot.core.people import Normalise
from bot.core.policy import DEFAULT_ENVIRONMENTS, Policy, Timing, parse_approvers, parse_required
from bot.core.verification import VerifyPlan


def approvers_naming_nobody(s: Fields) -> list[str]:
    """An approver variable set but naming nobody (`APPROVERS=`, `" "`, `";;;"`): read as
    unset it would be open mode, where anyone approves production, so it is refused."""
    return [
        f"{name} is set but names nobody: list the approvers, write * to let anyone approve, or leave it unset"
        for name, value in (("APPROVERS", s.approvers), ("APPROVER_EMAILS", s.approver_emails))
        if value is not None and not any(parse_approvers(value).values())
    ]


def people_variables(s: Fields) -> dict[str, str]:
    """The variables deploybot.toml must not repeat, as set (unset ones left out)."""
    values = {
        "DEPLOYBOT_CONFIG": str(s.deploybot_config) if s.deploybot_config else None,
        "ENVIRONMENTS": s.environments, "PROTECTED_ENVIRONMENTS": s.protected_environments,
        "APPROVERS": s.approvers, "APPROVER_EMAILS": s.approver_emails,
        "APPROVER_MUST_DIFFER": None if s.approver_must_differ is None else str(s.approver_must_differ),
    }
    return {name: value for name, value in values.items() if value is not None and value.strip()}


def approval_conflicts(s: Fields, file: FileConfig | None) -> list[str]:
    name = file.source.name if file and file.source else settings_file.FILE_NAME
    entries = file.environments if file else {}
    required = parse_required(s.required_approvals or "")
    return [
        f"REQUIRED_APPROVALS names {env}, which is not an environment"
        for env in required if env not in policy_environments(s, file)
    ] + [
        f"{env}'s required_approvals is set in {name} and by REQUIRED_APPROVALS; set it in one place"
        for env, entry in entries.items() if entry.required_approvals is not None and env in required
    ]


def policy_environments(s: Fields, file: FileConfig | None) -> frozenset[str]:
    """Every environment's name, as the policy will have them."""
    named_protected = words(s.protected_environments) if s.protected_environments is not None else None
    protected = named_protected if named_protected is not None else frozenset({"production"})
    if file is not None and file.environments:
        return frozenset(file.environments) | (named_protected or frozenset())
    named = words(s.environments) if s.environments is not None else DEFAULT_ENVIRONMENTS
    return named | protected


def build_policy(s: Fields, file: FileConfig | None, normalisers: Mapping[str, Normalise] | None = None) -> Policy:
    named_protected = words(s.protected_environments) if s.protected_environments is not None else None
    protected = named_protected if named_protected is not None else frozenset({"production"})
    environments = policy_environments(s, file)  # with [environments.*], the file names them
    entries = file.environments if file is not None else {}
    policy = Policy.configured(
        environments,
        protected,
        directory=file.directory(normalisers) if file is not None else None,
        written=file.written() if file is not None else None,
        listed={"slack": s.approvers, "email": s.approver_emails},  # APPROVERS: Slack ids
        normalisers=normalisers,
        approver_must_differ=bool(s.approver_must_differ),
        approval_ttl=timedelta(seconds=s.approval_ttl),
        max_steps=s.max_steps,
        catalog=catalog(s, file),
        timing=_timing(s, file, environments),
        default_timing=Timing(remind_after=_seconds(s.approval_remind)),
        required_checks=frozenset(env for env, e in entries.items() if e.required_checks),
        freezes=file.freeze_list() if file is not None else (),
        no_lock_after_rollback=frozenset(env for env, e in entries.items() if not e.lock_after_rollback),
    ).with_verify(verify_plans(file))
    if file is None:
        return policy
    # Where a service is verified in an environment, a commit passes it only once verified.
    return replace(policy, promotion=replace(file.promotion_orders(), verified=frozenset(policy.verify)))


def verify_plans(file: FileConfig | None) -> dict[tuple[str, str], VerifyPlan]:
    """[services.NAME.verify.ENV]: each (service, environment) verified after a deploy."""
    if file is None:
        return {}
    return {(name, env): v.plan() for name, e in file.services.items() for env, v in e.verify.items()}


def _timing(s: Fields, file: FileConfig | None, environments: frozenset[str]) -> dict[str, Timing]:
    """Each environment's reminders, escalation and approvals needed: its entry in the
    file, else APPROVAL_REMIND and REQUIRED_APPROVALS."""
    entries = file.environments if file is not None else {}
    required = parse_required(s.required_approvals or "")
    directory = file.directory() if file is not None else None
    timing = {}
    for env in environments:
        entry = entries.get(env)
        remind = entry.remind_after if entry and entry.remind_after is not None else s.approval_remind
        escalate_to = directory.expand(entry.escalate_to) if entry and directory else frozenset()
        timing[env] = Timing(
            remind_after=_seconds(remind),
            escalate_after=_seconds(entry.escalate_after) if entry and entry.escalate_after else None,
            escalate_to=escalate_to,
            required=(entry.required_approvals if entry and entry.required_approvals else required.get(env, 1)),
        )
    return timing


def _seconds(value: int | None) -> timedelta | None:
    return timedelta(seconds=value) if value else None

