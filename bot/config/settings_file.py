"""deploybot.toml: the optional file for what flat environment variables cannot say well:
people (one identity across Slack and email), groups, and each environment's rules.

Found in the working directory, or at the path DEPLOYBOT_CONFIG names (then it must exist).
Read with tomllib into frozen pydantic models; every problem is reported at once, one line
each, naming its key path (`people.alice.email`), and entries are checked against each other:
groups hold known people, approvers and may_lock name known people (`carol`) or groups
(`group:sre`), or `*` written on its own; no Slack id or address belongs to two people.

Only settings.py uses this module: it passes in the variables (this module reads no
environment) and turns `FileConfig` into the directory and rules of bot/core/people.py.
Each table's entries are read by a sibling module (file_people, file_services, file_triggers,
file_freezes; what they share in file_values); this one holds the file as a whole, its checks
across entries, its reading, and its clashes with the variables.
"""

from __future__ import annotations

import tomllib
from collections.abc import Iterable, Mapping
from datetime import timedelta
from pathlib import Path
from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, model_validator

from bot.config.file_freezes import FreezeEntry
from bot.config.file_people import AgentEntry, EnvironmentEntry, PersonEntry
from bot.config.file_services import DeployerKind, ServiceEntry, VerifyEntry
from bot.config.file_triggers import GitHubEnvironmentEntry, ScheduleEntry, TriggerEntry
from bot.config.file_values import (
    _NAME,
    _SLACK_ID,
    FILE_NAME,
    VARIABLE,
    FileError,
    _did_you_mean,
    _Problems,
    _soak,
    key_path,
    problems,
)
from bot.core.freeze_windows import Freeze
from bot.core.gate import GateRule
from bot.core.people import ANYONE, GROUP, Directory, Normalise, Person, Written
from bot.core.policy import parse_approvers
from bot.core.promotion import Order, Promotion, order_problems, parse_soak
from bot.core.triggers import Schedule, Trigger

# Read by settings.py, and by the tests, from here.
__all__ = [
    "FILE_NAME", "VARIABLE", "AgentEntry", "DeployerKind", "EnvironmentEntry", "FileConfig", "FileError", "FreezeEntry",
    "GitHubEnvironmentEntry", "PersonEntry", "ScheduleEntry", "ServiceEntry", "TriggerEntry", "VerifyEntry",
    "conflicts", "key_path", "load", "locate", "problems", "read",
]


class FileConfig(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    people: dict[str, PersonEntry] = Field(default_factory=dict)
    groups: dict[str, tuple[str, ...]] = Field(default_factory=dict)
    environments: dict[str, EnvironmentEntry] = Field(default_factory=dict)
    services: dict[str, ServiceEntry] = Field(default_factory=dict)
    triggers: tuple[TriggerEntry, ...] = ()
    schedules: tuple[ScheduleEntry, ...] = ()
    # Scheduled freezes (bot/core/freeze_windows.py). No key is reserved any more: every unknown key is an error.
    freezes: tuple[FreezeEntry, ...] = ()
    agents: dict[str, AgentEntry] = Field(default_factory=dict)
    github_environments: tuple[GitHubEnvironmentEntry, ...] = ()
    # Promotion in order (bot/core/promotion.py): the environments every commit goes through,
    # and how long it must have been in one before the next.
    promotion: tuple[str, ...] | None = None
    soak: Annotated[str | None, AfterValidator(_soak)] = None

    _source: Path | None = PrivateAttr(None)

    @property
    def source(self) -> Path | None:
        """The file this was read from (None when built in code)."""
        return self._source

    @model_validator(mode="after")
    def _consistent(self) -> FileConfig:
        problems = [
            *self._names(), *self._group_problems(), *self._reference_problems(), *self._shared_ids(),
            *self._repeats(), *self._agent_problems(),
        ]
        if problems:
            raise _Problems(problems)
        return self

    def directory(self, normalisers: Mapping[str, Normalise] | None = None) -> Directory:
        """The people, their ids by kind (`slack = …` of [people.NAME]), compared by the kinds'
        `normalisers` (the channels' own, handed in by the root). Told the kinds, a key of
        [people.NAME] that is none of them is refused (ValueError, a line each)."""
        if normalisers is not None and (unknown := self.unknown_kinds(normalisers)):
            raise _Problems(unknown)
        people = (Person(name, entry.ids()) for name, entry in self.people.items())
        agents = (entry.agent(name) for name, entry in self.agents.items())
        return Directory(people, self.groups, agents=agents, normalisers=normalisers)

    def unknown_kinds(self, kinds: Iterable[str]) -> list[str]:
        """Each key of a [people.NAME] that is no kind of ids the channels have (a typo)."""
        known = [*PersonEntry.model_fields, *(k for k in kinds if k not in PersonEntry.model_fields)]
        lines = []
        for name, entry in self.people.items():
            for kind in entry.model_extra or {}:
                if kind not in known:
                    hint = _did_you_mean(kind, known)
                    expected = hint or f"; expected one of: {', '.join(known)}"
                    lines.append(f"{key_path(('people', name, kind))}: unknown key{expected}")
        return lines

    def written(self) -> dict[str, Written]:
        return {env: entry.written() for env, entry in self.environments.items()}

    def trigger_list(self) -> tuple[Trigger, ...]:
        return tuple(entry.trigger() for entry in self.triggers)

    def gate_rules(self) -> tuple[GateRule, ...]:
        return tuple(entry.rule() for entry in self.github_environments)

    def schedule_list(self) -> tuple[Schedule, ...]:
        return tuple(entry.schedule() for entry in self.schedules)

    def freeze_list(self) -> tuple[Freeze, ...]:
        return tuple(entry.freeze() for entry in self.freezes)

    def promotion_orders(self) -> Promotion:
        """The promotion orders: everyone's, and each service's own (with its soak, else the
        top-level one; `promotion = []`: the service goes anywhere in any order)."""
        soak = parse_soak(self.soak) if self.soak else timedelta(0)
        default = Order(self.promotion, soak) if self.promotion else None
        services = {
            name: Order(e.promotion if e.promotion is not None else (self.promotion or ()),
                        parse_soak(e.soak) if e.soak else soak)
            for name, e in self.services.items() if e.promotion is not None or (e.soak and self.promotion)
        }
        return Promotion(default, services)

    def promotion_problems(self, environments: Iterable[str]) -> list[str]:
        """Orders naming environments that are not declared (or one twice), and a soak with
        no order to soak in."""
        known = list(environments)
        lines = [f"promotion: {why}" for why in order_problems(self.promotion or (), known)]
        if self.soak and not self.promotion:
            lines.append("soak: needs promotion, the order to soak in")
        for name, e in self.services.items():
            where = key_path(("services", name))
            lines += [f"{where}.promotion: {why}" for why in order_problems(e.promotion or (), known)]
            if e.soak and not (e.promotion or self.promotion):
                lines.append(f"{where}.soak: needs promotion, the order to soak in")
        return lines

    def freeze_problems(self, environments: Iterable[str]) -> list[str]:
        """The environments freezes name that are not among `environments` (every environment
        the bot knows, from this file or the variables): one line each, by key path. For
        settings.py, which alone knows them all."""
        known = list(environments)
        return [
            f"{key_path(('freezes', i, 'environments', j))}: there is no environment {name!r}"
            + _did_you_mean(name, known)
            for i, entry in enumerate(self.freezes)
            for j, name in enumerate(entry.environments)
            if name != ANYONE and name not in known
        ]

    def agent_environment_problems(self, environments: Iterable[str]) -> list[str]:
        """The environments agents are given that the bot does not know (as freeze_problems)."""
        known = list(environments)
        return [
            f"{key_path(('agents', name, 'environments', j))}: there is no environment {env!r}"
            + _did_you_mean(env, known)
            for name, entry in self.agents.items()
            for j, env in enumerate(entry.environments)
            if env not in known
        ]

    # --- checks across entries -----------------------------------------------------------

    def _names(self) -> Iterable[str]:
        for table in ("people", "groups", "environments", "services", "agents"):
            for name in getattr(self, table):
                if not _NAME.match(name):
                    yield (
                        f"{key_path((table, name))}: a name may hold only letters, digits, '.', '_' "
                        "and '-', and starts with a letter or a digit"
                    )

    def _group_problems(self) -> Iterable[str]:
        for group, members in self.groups.items():
            for i, member in enumerate(members):
                where = key_path(("groups", group, i))
                if member.startswith(GROUP):
                    yield f"{where}: groups hold people, not groups: list the people of {member} instead"
                elif member == ANYONE:
                    yield f"{where}: a group cannot hold '*': write '*' in approvers or may_lock instead"
                elif member not in self.people:
                    yield f"{where}: {_unknown_person(member, self.people)}"

    def _reference_problems(self) -> Iterable[str]:
        for env, entry in self.environments.items():
            if (entry.escalate_after is None) != (not entry.escalate_to):
                yield f"{key_path(('environments', env))}: escalate_after and escalate_to go together"
            for field in ("approvers", "may_lock", "escalate_to"):
                for i, ref in enumerate(getattr(entry, field) or ()):
                    why = self._bad_reference(ref)
                    if why:
                        yield f"{key_path(('environments', env, field, i))}: {why}"

    def _agent_problems(self) -> Iterable[str]:
        for name, entry in self.agents.items():
            if name in self.people:
                yield f"{key_path(('agents', name))}: {name} is a person too; name the agent otherwise"
            if entry.owner is not None and entry.owner not in self.people:
                yield f"{key_path(('agents', name, 'owner'))}: {_unknown_person(entry.owner, self.people)}"

    def _bad_reference(self, ref: str) -> str | None:
        if ref == ANYONE:
            return None
        if "*" in ref:
            return f"{ref!r}: only '*' written on its own means anyone"
        if ref.startswith(GROUP):
            group = ref.removeprefix(GROUP)
            if group in self.groups:
                return None
            return f"there is no group {group!r} under [groups]{_did_you_mean(group, self.groups)}"
        if ref in self.people:
            return None
        return _unknown_person(ref, self.people)

    def _repeats(self) -> Iterable[str]:
        """A trigger or schedule written twice would start two threads for one event."""
        seen: dict[object, int] = {}
        for i, trigger in enumerate(self.triggers):
            first = seen.setdefault((trigger.on, trigger.service, trigger.environment), i)
            if first != i:
                yield (
                    f"{key_path(('triggers', i))}: the same trigger as triggers[{first}] "
                    f"(on {trigger.on!r}, {trigger.service} to {trigger.environment}): one event would "
                    "start two threads; merge their notify lists"
                )
        seen = {}
        for i, schedule in enumerate(self.schedules):
            first = seen.setdefault(schedule.schedule().id, i)
            if first != i:
                yield f"{key_path(('schedules', i))}: the same schedule as schedules[{first}]"

    def _shared_ids(self) -> Iterable[str]:
        for field, what in (("slack", "Slack id"), ("email", "address")):
            owners: dict[str, str] = {}
            for name, entry in self.people.items():
                for value in getattr(entry, field):
                    owner = owners.setdefault(value, name)
                    if owner != name:
                        yield f"{key_path(('people', name, field))}: {value} is also {owner}'s {what}"


def _unknown_person(ref: str, people: Mapping[str, PersonEntry]) -> str:
    if "@" in ref or _SLACK_ID.match(ref):
        return (
            f"{ref!r} is not a person: name people here, not Slack ids or addresses "
            "(give them a [people.NAME] entry and write NAME)"
        )
    return f"there is no person {ref!r} under [people]{_did_you_mean(ref, people)}"



# --- reading the file -------------------------------------------------------------------------


def locate(variables: Mapping[str, str], cwd: Path) -> Path | None:
    """The file to read: DEPLOYBOT_CONFIG's (relative to `cwd`; it must exist), else
    deploybot.toml in `cwd` when there is one, else None (no file: that is fine)."""
    named = _variable(variables, VARIABLE)
    if named is not None:
        path = cwd / Path(named).expanduser()
        if not path.is_file():
            raise FileError([f"{VARIABLE} names {path}, which is not a file"])
        return path
    path = cwd / FILE_NAME
    return path if path.is_file() else None


def read(variables: Mapping[str, str], cwd: Path) -> FileConfig | None:
    """`locate` then `load`: None when there is no file."""
    path = locate(variables, cwd)
    return load(path) if path is not None else None


def load(path: Path) -> FileConfig:
    """The file at `path`, or FileError with every problem, each line starting with the path."""
    try:
        with path.open("rb") as f:
            data = tomllib.load(f)
    except FileNotFoundError:
        raise FileError([f"{path}: no such file"]) from None
    except OSError as e:
        raise FileError([f"{path}: cannot be read: {e.strerror or e}"]) from None
    except UnicodeDecodeError:
        raise FileError([f"{path}: not valid TOML: it is not UTF-8 text"]) from None
    except tomllib.TOMLDecodeError as e:
        raise FileError([f"{path}: not valid TOML: {e}"]) from None
    try:
        config = FileConfig.model_validate(data)
    except ValidationError as e:
        raise FileError(f"{path}: {line}" for line in problems(e, _TABLES)) from None
    config._source = path
    return config


_TABLES: dict[tuple[str, ...], type[BaseModel]] = {
    (): FileConfig, ("people", "*"): PersonEntry, ("environments", "*"): EnvironmentEntry,
    ("services", "*"): ServiceEntry, ("agents", "*"): AgentEntry,
    ("services", "*", "verify", "*"): VerifyEntry,
    ("triggers", "*"): TriggerEntry, ("schedules", "*"): ScheduleEntry, ("freezes", "*"): FreezeEntry,
    ("github_environments", "*"): GitHubEnvironmentEntry,
}  # by key path (a name as "*"), for the keys an unknown one may have meant


# --- the file and the variables ---------------------------------------------------------------


def _variable(variables: Mapping[str, str], name: str) -> str | None:
    """A variable's value, its name matched case-insensitively (as Settings reads them);
    None when unset or blank."""
    for key, value in variables.items():
        if key.upper() == name and value.strip():
            return value.strip()
    return None


def conflicts(file: FileConfig, variables: Mapping[str, str]) -> list[str]:
    """What is set both in the file and by a variable: one line each, for the operator.
    Pass every variable Settings reads (the environment and .env together)."""
    name = file.source.name if file.source else FILE_NAME
    lines: list[str] = []
    for variable in ("APPROVERS", "APPROVER_EMAILS"):
        value = _variable(variables, variable)
        written = [env for env, entry in file.environments.items() if entry.approvers is not None]
        if value is None or not written:
            continue
        table = parse_approvers(value)
        covered = [env for env in written if env in table or ANYONE in table]
        for env in covered:
            lines.append(f"{env}'s approvers are set in {name} and by {variable}; set them in one place")
        if not covered:
            lines.append(
                f"approvers are set in {name} (for {', '.join(written)}) and by {variable} "
                f"(for {', '.join(table)}); set them in one place"
            )
    settings = (
        ("PROTECTED_ENVIRONMENTS", "protected", "whether {env} is protected is set"),
        ("APPROVER_MUST_DIFFER", "approver_must_differ", "{env}'s approver_must_differ is set"),
    )
    for variable, field, what in settings:
        if _variable(variables, variable) is None:
            continue
        for env, entry in file.environments.items():
            if getattr(entry, field) is not None:
                lines.append(f"{what.format(env=env)} in {name} and by {variable}; set it in one place")
    if file.environments and _variable(variables, "ENVIRONMENTS") is not None:
        lines.append(
            f"the environments' names are set in {name} ([environments.*]) and by ENVIRONMENTS; "
            "set them in one place"
        )
    return lines
