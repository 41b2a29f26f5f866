"""People: one identity across Slack, email, the API and sign-in, and each environment's rules
in principals. Pure: no I/O, no clock, no environment. What an identity may do under those
rules is bot/core/authority.py's to answer.

A person is a name with each channel's ids that are theirs, by kind (from deploybot.toml:
`slack = "U…"`, `email = "…"` under [people.NAME]). Whatever reaches the bot (a channel's
user id, an email sender, an API token, a signed-in session) is turned into an `Identity`:
the person, or None for someone the directory does not know, plus how they were seen (`via`)
and the channel's detail (`evidence`: the channel's id, the token id). How a kind's ids
compare (an address lower-cased) is the channel's own: its normaliser, handed to the
`Directory` by whoever builds it; the core knows no channel.

Rules name *principals*:
- a person's name: whichever channel they come by, they are that person, so alice's Slack
  id and alice's address are one approver, and approver_must_differ compares people;
- `*`: anyone, known or not; it is there only where someone wrote it (or in open mode, when
  nothing at all is configured: today's default);
- `<kind>:<id>` (e.g. `slack:U9`): a channel's id listed by kind (the variables APPROVERS,
  APPROVER_EMAILS) that belongs to nobody in the directory (so those variables keep working
  without a people file).
An unknown identity's principal is `<via>:<evidence>`, so it matches only where its raw id
was listed: it never approves or locks where approvers are named.

Groups are flat: they hold people, not other groups. There are no cycles to guard against,
and who is in a group can be read off one line of the file.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from bot.core import wording

# An identity and the ways one is seen live in bot/core/identity.py, which the events import
# without importing people (and the wording people needs); its callers may import them here too.
from bot.core.identity import (
    AGENT,
    API,
    BOT_USER,
    CLI,
    NAME,
    SESSION,
    TOKEN,
    Identity,
)
from bot.core.identity import ANONYMOUS as ANONYMOUS
from bot.core.identity import SERVICE as SERVICE

ANYONE = "*"
GROUP = "group:"

OPEN_MODE_NOTICE = wording.no_approvers_configured()


# A channel's own way of comparing its ids (an address lower-cased): raw id -> the id compared.
Normalise = Callable[[str], str]


def _stripped(raw: str) -> str:
    """A kind's ids when its channel hands in no normaliser: compared as written, trimmed."""
    return raw.strip()


@dataclass(frozen=True)
class Person:
    name: str
    # kind -> that channel's ids for the person (`{"slack": ("U012AB3CD",)}`).
    ids: Mapping[str, tuple[str, ...]] = field(default_factory=dict)


@dataclass(frozen=True)
class Agent:
    """An AI agent (deploybot.toml's `[agents.NAME]`): it may ask for deploys to
    `environments` (empty: any), never decide, lock, unlock, stop, resume or deploy anyway.
    What it asks counts as its `owner`'s where the requester may not approve. At most
    `max_open` of its requests are open at once, and `max_per_hour` are made in an hour.
    Its threads are posted to `notify` (`slack:C…`, `email:…`), where people decide."""

    name: str
    owner: str | None = None
    environments: tuple[str, ...] = ()
    max_open: int = 5
    max_per_hour: int = 20
    notify: tuple[str, ...] = ()

    @property
    def principal(self) -> str:
        return f"{AGENT}:{self.name}"

    @property
    def label(self) -> str:
        """How people see it: `claude-code (agent of alice)`."""
        return wording.agent_name(self.name, self.owner)


class Directory:
    """The people and groups of deploybot.toml, looked up by any channel's id. Refuses an id
    of one kind that two people share, and groups naming anyone but people.

    `normalisers`: each kind's normaliser (the channel's own); a kind without one compares
    its ids trimmed. `trust_names`: open mode (nothing configured, so no people either): a
    name given by something trusted (`by_name`: the API's `user` field, the CLI's `--user`)
    is that person, as before people were known; channels' ids stay unknown."""

    def __init__(
        self,
        people: Iterable[Person] = (),
        groups: Mapping[str, Iterable[str]] | None = None,
        *,
        trust_names: bool = False,
        agents: Iterable[Agent] = (),
        normalisers: Mapping[str, Normalise] | None = None,
    ) -> None:
        self._normalisers: Mapping[str, Normalise] = MappingProxyType(dict(normalisers or {}))
        by_name: dict[str, Person] = {}
        owners: dict[str, dict[str, str]] = {kind: {} for kind in self._normalisers}  # kind -> id -> name
        for given in people:
            ids = {kind: tuple(map(self._normaliser(kind), values)) for kind, values in given.ids.items()}
            person = Person(given.name, MappingProxyType(ids))
            if not person.name or person.name in by_name or person.name == ANYONE or ":" in person.name:
                raise ValueError(f"{person.name!r} cannot name a person (empty, taken, or holds ':' or '*')")
            by_name[person.name] = person
            for kind, values in ids.items():
                table = owners.setdefault(kind, {})
                for id_ in values:
                    owner = table.setdefault(id_, person.name)
                    if owner != person.name:
                        raise ValueError(f"the {kind} id {id_} is both {owner}'s and {person.name}'s")
        members: dict[str, frozenset[str]] = {}
        for group, names in (groups or {}).items():
            members[group] = frozenset(names)
            strangers = sorted(members[group] - by_name.keys())
            if strangers:
                raise ValueError(f"group {group}: {strangers[0]} is not a person (groups hold people, not groups)")
        self.people: Mapping[str, Person] = MappingProxyType(by_name)
        self.agents: Mapping[str, Agent] = MappingProxyType(_agents(agents, by_name))
        self.groups: Mapping[str, frozenset[str]] = MappingProxyType(members)
        self._owners = owners
        self.trust_names = trust_names and not by_name

    @property
    def kinds(self) -> tuple[str, ...]:
        """The kinds of ids the directory knows: those it was told a normaliser for, and
        those its people hold."""
        return tuple(self._owners)

    def by(self, kind: str, raw: str) -> Identity:
        """Whoever `raw`, an id of channel `kind`, is (compared as the kind's normaliser has it:
        an address lower-cased); an id nobody lists is unknown (`kind:id`, no powers but `*`)."""
        id_ = self._normaliser(kind)(raw)
        return Identity(self._owners.get(kind, {}).get(id_), kind, id_)

    def _normaliser(self, kind: str) -> Normalise:
        return self._normalisers.get(kind, _stripped)

    def by_name(self, name: str, *, via: str = NAME, evidence: str | None = None) -> Identity:
        """A person named by something already trusted: a verified token (via=TOKEN,
        evidence=the token id), a session, the CLI. A name not in the directory is unknown
        (in open mode, `trust_names`, any plain name is that person)."""
        name = name.strip()
        known = name in self.people or (self.trust_names and _plain_name(name))
        return Identity(name if known else None, via, name if evidence is None else evidence)

    def person_named(self, text: str) -> str | None:
        """The person `text` names by any of their ids (their name, an id of any kind), or None."""
        for identity in (self.by_name(text), *(self.by(kind, text) for kind in self.kinds)):
            if identity.person is not None and identity.person in self.people:
                return identity.person
        return None

    def by_agent(self, name: str) -> Identity | None:
        """An agent of deploybot.toml's [agents] (None: no such agent): nobody's person, its
        principal `agent:NAME`, so no approver list can name it."""
        return Identity(None, AGENT, name) if name in self.agents else None

    def by_token(self, holder: str, token_id: str) -> Identity | None:
        """Whoever a verified token was made for (`holder`: a person's name, or an agent's
        principal `agent:NAME`), or None when they are no longer in deploybot.toml."""
        if holder.startswith(f"{AGENT}:"):
            return self.by_agent(holder.removeprefix(f"{AGENT}:"))
        return self.by_name(holder, via=TOKEN, evidence=token_id) if holder in self.people else None

    def agent_of(self, principal: str) -> Agent | None:
        """The agent whose principal (`agent:NAME`) this is, if any."""
        via, _, name = principal.partition(":")
        return self.agents.get(name) if via == AGENT else None

    def display(self, principal: str) -> str:
        """How people see whoever `principal` is: an agent with its owner, else as it is."""
        agent = self.agent_of(principal)
        return agent.label if agent is not None else principal

    def expand(self, refs: Iterable[str]) -> frozenset[str]:
        """`["group:sre", "carol", "*"]` -> the people's names, with `*` kept as the marker
        for anyone. A name or group the directory does not know is a ValueError."""
        names: set[str] = set()
        for ref in refs:
            if ref == ANYONE:
                names.add(ANYONE)
            elif ref.startswith(GROUP):
                group = ref.removeprefix(GROUP)
                if group not in self.groups:
                    raise ValueError(f"{ref}: there is no group {group}")
                names |= self.groups[group]
            elif ref in self.people:
                names.add(ref)
            else:
                raise ValueError(f"{ref}: there is no such person")
        return frozenset(names)


def _agents(agents: Iterable[Agent], people: Mapping[str, Person]) -> dict[str, Agent]:
    found: dict[str, Agent] = {}
    for agent in agents:
        if not agent.name or agent.name in found or ":" in agent.name or agent.name == ANYONE:
            raise ValueError(f"{agent.name!r} cannot name an agent (empty, taken, or holds ':' or '*')")
        if agent.name in people:
            raise ValueError(f"agent {agent.name}: {agent.name} is a person's name too; name the agent otherwise")
        if agent.owner is not None and agent.owner not in people:
            raise ValueError(f"agent {agent.name}: its owner {agent.owner} is not a person")
        found[agent.name] = agent
    return found


def _plain_name(name: str) -> bool:
    return bool(name) and name != ANYONE and ":" not in name and name != BOT_USER


# --- an environment's rules ---------------------------------------------------------------------


@dataclass(frozen=True)
class Rules:
    """One environment's rules, in principals (see the module's doc). `may_lock` None means
    the approvers. The `*_as_written` references (`group:sre`, `carol`) only word messages;
    without them messages list the principals."""

    protected: bool
    approvers: frozenset[str]
    approver_must_differ: bool = False
    may_lock: frozenset[str] | None = None
    environment: str = ""
    approvers_as_written: tuple[str, ...] = ()
    may_lock_as_written: tuple[str, ...] = ()

    @property
    def lockers(self) -> frozenset[str]:
        return self.approvers if self.may_lock is None else self.may_lock

    @property
    def lockers_as_written(self) -> tuple[str, ...]:
        return self.approvers_as_written if self.may_lock is None else self.may_lock_as_written


def describe(refs: Iterable[str]) -> str:
    """`["carol", "group:sre"]` -> "carol or the sre group"; nothing -> "nobody"."""
    labels = list(dict.fromkeys(_describe_one(r) for r in refs))
    if not labels:
        return "nobody"
    return labels[0] if len(labels) == 1 else f"{', '.join(labels[:-1])} or {labels[-1]}"


@dataclass(frozen=True)
class Shown:
    """How people see a principal: one name for one person, whatever the channel, and the
    channel as a tag where the name is only the channel's (someone the directory does not know)."""

    name: str
    channel: str = ""  # "": a person's own name (or the bot, or anyone)


# The core's own `via`s; any other plain word a principal `<via>:<id>` starts with
# (Identity.principal) is a channel's kind (`slack:U9`).
_OWN_VIAS = (TOKEN, SESSION, NAME, API, CLI, AGENT)
_VIA = re.compile(r"^[a-z][a-z0-9_]*$")


def _via_of(principal: str) -> tuple[str, str] | None:
    """`slack:U9` -> ("slack", "U9"): the `via` and raw id of an identity's principal; None for
    a person's name, `*` or a group reference."""
    via, colon, raw = principal.partition(":")
    if colon and raw and _VIA.match(via) and f"{via}:" != GROUP:
        return via, raw
    return None


def shown(principal: str) -> Shown:
    """`alice` -> alice; `api:alice` (the shared token said "alice", which proves nothing) ->
    alice, tagged api; `slack:U9` -> U9, tagged slack; `agent:claude-code` -> claude-code, tagged agent."""
    seen = _via_of(principal)
    return Shown(seen[1], seen[0]) if seen else Shown(principal)


def one_name(principal: str) -> str:
    """A principal in running text (a transcript): `alice`, `carol (api)`."""
    seen = shown(principal)
    return f"{seen.name} ({seen.channel})" if seen.channel else seen.name


def identity_for(principal: str) -> Identity:
    """The identity a principal stands for: a person's name is that person; `<via>:<id>`
    someone the directory does not know, seen so (the reverse of Identity.principal)."""
    seen = _via_of(principal)
    return Identity(None, *seen) if seen else Identity(principal, NAME, principal)


def _describe_one(ref: str) -> str:
    if ref == ANYONE:
        return "anyone"
    if ref.startswith(GROUP):
        return f"the {ref.removeprefix(GROUP)} group"
    seen = _via_of(ref)  # a channel's raw id shows as that id; the core's own stay tagged
    return seen[1] if seen and seen[0] not in _OWN_VIAS else ref


# --- effective rules: the file and the variables together, failing closed ---------------------


@dataclass(frozen=True)
class Written:
    """One environment's rules as deploybot.toml wrote them; None: not written there."""

    protected: bool | None = None
    approvers: tuple[str, ...] | None = None
    approver_must_differ: bool | None = None
    may_lock: tuple[str, ...] | None = None


@dataclass(frozen=True)
class Resolution:
    rules: Mapping[str, Rules]  # per environment
    problems: tuple[str, ...]  # startup errors: refuse to start when there is any
    open_mode: bool  # nothing configured: anyone may approve (say OPEN_MODE_NOTICE at start)

    @property
    def approvers(self) -> dict[str, frozenset[str]]:
        return {env: rules.approvers for env, rules in self.rules.items()}


def resolve(
    environments: Iterable[str],
    protected: Iterable[str] = (),
    *,
    directory: Directory | None = None,
    written: Mapping[str, Written] | None = None,
    raw_approvers: Mapping[str, Mapping[str, Iterable[str]]] | None = None,
    normalisers: Mapping[str, Normalise] | None = None,
    approver_must_differ: bool = False,
) -> Resolution:
    """Each environment's effective rules.

    `directory` is None when there is no people file; `written` is the file's
    [environments.*]; `raw_approvers` holds, by kind, the approvers a variable lists as that
    channel's raw ids (APPROVERS for one kind, APPROVER_EMAILS for another, parsed by
    `policy.parse_approvers`), a kind there only when its variable is set; `normalisers`
    are the kinds' (for a directory of nobody, without a people file); `protected` and
    `approver_must_differ` are the variables' values, which a file's per-environment setting
    overrides.

    An environment whose approvers are listed anywhere (the file, any variable, its own
    entry or a variable's `*` entry) has exactly those approvers, all of them together; `*`
    only where written. With nothing configured (no directory, no written rules, no
    variable) anyone may approve, as before: `open_mode`. Otherwise a protected environment
    left without approvers, or whose list names nobody, is a problem.
    """
    written = written or {}
    people = directory or Directory(normalisers=normalisers)
    given = {kind: dict(table) for kind, table in (raw_approvers or {}).items() if table}
    tables = [(table, functools.partial(people.by, kind)) for kind, table in given.items()]
    open_mode = directory is None and not written and not given
    protected_by_default = frozenset(protected)
    rules: dict[str, Rules] = {}
    problems: list[str] = []
    for env in dict.fromkeys([*environments, *written]):
        rule = written.get(env, Written())
        is_protected = env in protected_by_default if rule.protected is None else rule.protected
        approvers, refs, listed = _approvers(env, rule, people, tables, problems)
        if open_mode:
            approvers, refs = {ANYONE}, [ANYONE]
        else:
            problems += _unguarded(env, is_protected, listed, approvers, refs)
        must_differ = approver_must_differ if rule.approver_must_differ is None else rule.approver_must_differ
        rules[env] = Rules(
            protected=is_protected,
            approvers=frozenset(approvers),
            approver_must_differ=must_differ,
            may_lock=_lockers(env, rule, people, problems),
            environment=env,
            approvers_as_written=tuple(dict.fromkeys(refs)),
            may_lock_as_written=tuple(dict.fromkeys(rule.may_lock or ())),
        )
    return Resolution(MappingProxyType(rules), tuple(problems), open_mode)


# A variable's table (environment or `*` -> raw ids) and how its ids become identities.
_Table = tuple[dict[str, Iterable[str]], Callable[[str], Identity]]


def _approvers(
    env: str, rule: Written, people: Directory, tables: Iterable[_Table], problems: list[str],
) -> tuple[set[str], list[str], bool]:
    """`env`'s approvers from the file and the variables together (principals), the
    references as written, and whether any of them lists approvers for it at all."""
    listed = rule.approvers is not None
    refs: list[str] = list(rule.approvers or ())
    approvers: set[str] = set()
    try:
        approvers |= people.expand(refs)
    except ValueError as e:
        problems.append(f"{env}'s approvers: {e}")
    for table, identify in tables:
        entry = table.get(env, table.get(ANYONE))
        if entry is None:
            continue
        listed = True
        for raw in entry:
            principal = ANYONE if raw == ANYONE else identify(raw).principal
            approvers.add(principal)
            refs.append(principal)
    return approvers, refs, listed


def _unguarded(env: str, is_protected: bool, listed: bool, approvers: set[str], refs: list[str]) -> list[str]:
    """The problem with a protected environment that nobody may approve, if it is one."""
    if is_protected and not listed:
        return [wording.protected_without_approvers(env)]
    if is_protected and not approvers:
        return [
            f"{env} is protected but its approvers ({describe(refs)}) name nobody" if refs
            else f"{env} is protected but its list of approvers is empty"
        ]
    return []


def _lockers(env: str, rule: Written, people: Directory, problems: list[str]) -> frozenset[str] | None:
    """Who may lock `env` as the file wrote it (people); None: the approvers."""
    if rule.may_lock is None:
        return None
    try:
        return people.expand(rule.may_lock)
    except ValueError as e:
        problems.append(f"{env}'s may_lock: {e}")
        return frozenset()
