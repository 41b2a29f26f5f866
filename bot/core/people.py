"""People: one identity across Slack, email, the API and sign-in, and each environment's rules
in principals. Pure: no I/O, no clock, no environment. What an identity may do under those
rules is bot/core/authority.py's to answer.

A person is a name with the Slack user ids and email addresses that are theirs (from
deploybot.toml). Whatever reaches the bot (a Slack user id, an email sender, an API token, a
signed-in session) is turned into an `Identity`: the person, or None for someone the
directory does not know, plus how they were seen (`via`) and the channel's detail
(`evidence`: the Slack user id, the address, the token id).

Rules name *principals*:
- a person's name: whichever channel they come by, they are that person, so alice's Slack
  id and alice's address are one approver, and approver_must_differ compares people;
- `*`: anyone, known or not; it is there only where someone wrote it (or in open mode, when
  nothing at all is configured: today's default);
- `slack:<id>` / `email:<address>`: a Slack id or address listed in APPROVERS /
  APPROVER_EMAILS that belongs to nobody in the directory (so those variables keep working
  without a people file).
An unknown identity's principal is `<via>:<evidence>`, so it matches only where its raw id
was listed: it never approves or locks where approvers are named.

Groups are flat: they hold people, not other groups. There are no cycles to guard against,
and who is in a group can be read off one line of the file.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from email.utils import parseaddr
from types import MappingProxyType

from bot.core import wording

# An identity and the ways one is seen live in bot/core/identity.py, which the events import
# without importing people (and the wording people needs); its callers may import them here too.
from bot.core.identity import (
    AGENT,
    API,
    BOT_USER,
    CLI,
    EMAIL,
    GITHUB,
    NAME,
    SESSION,
    SLACK,
    TOKEN,
    Identity,
)
from bot.core.identity import ANONYMOUS as ANONYMOUS
from bot.core.identity import SERVICE as SERVICE

ANYONE = "*"
GROUP = "group:"

OPEN_MODE_NOTICE = (
    "no approvers are configured (no deploybot.toml, no APPROVERS or APPROVER_EMAILS): "
    "anyone may approve deploys, to protected environments too"
)


def normalize_email(address: str) -> str:
    """`Alice <Alice@Example.com>` -> `alice@example.com`; addresses compare lower-cased."""
    _, addr = parseaddr(address)
    return (addr or address).strip().lower()


@dataclass(frozen=True)
class Person:
    name: str
    slack: tuple[str, ...] = ()
    emails: tuple[str, ...] = ()
    github: tuple[str, ...] = ()  # GitHub logins (a gated deployment's creator, bot/core/gate.py)


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
    """The people and groups of deploybot.toml, looked up by any channel's id. Refuses a
    Slack id or an address that two people share, and groups naming anyone but people.

    `trust_names`: open mode (nothing configured, so no people either): a name given by
    something trusted (`by_name`: the API's `user` field, the CLI's `--user`) is that
    person, as before people were known; Slack ids and addresses stay unknown."""

    def __init__(
        self,
        people: Iterable[Person] = (),
        groups: Mapping[str, Iterable[str]] | None = None,
        *,
        trust_names: bool = False,
        agents: Iterable[Agent] = (),
    ) -> None:
        by_name: dict[str, Person] = {}
        slack: dict[str, str] = {}
        email: dict[str, str] = {}
        github: dict[str, str] = {}
        for given in people:
            person = Person(given.name, tuple(given.slack), tuple(normalize_email(a) for a in given.emails),
                            tuple(login.lower() for login in given.github))
            if not person.name or person.name in by_name or person.name == ANYONE or ":" in person.name:
                raise ValueError(f"{person.name!r} cannot name a person (empty, taken, or holds ':' or '*')")
            by_name[person.name] = person
            for table, ids, what in ((slack, person.slack, "Slack id"), (email, person.emails, "address"),
                                     (github, person.github, "GitHub login")):
                for id_ in ids:
                    owner = table.setdefault(id_, person.name)
                    if owner != person.name:
                        raise ValueError(f"the {what} {id_} is both {owner}'s and {person.name}'s")
        members: dict[str, frozenset[str]] = {}
        for group, names in (groups or {}).items():
            members[group] = frozenset(names)
            strangers = sorted(members[group] - by_name.keys())
            if strangers:
                raise ValueError(f"group {group}: {strangers[0]} is not a person (groups hold people, not groups)")
        self.people: Mapping[str, Person] = MappingProxyType(by_name)
        self.agents: Mapping[str, Agent] = MappingProxyType(_agents(agents, by_name))
        self.groups: Mapping[str, frozenset[str]] = MappingProxyType(members)
        self._slack = slack
        self._email = email
        self._github = github
        self.trust_names = trust_names and not by_name

    def by_slack(self, user_id: str) -> Identity:
        user_id = user_id.strip()
        return Identity(self._slack.get(user_id), SLACK, user_id)

    def by_email(self, address: str) -> Identity:
        address = normalize_email(address)
        return Identity(self._email.get(address), EMAIL, address)

    def by_github(self, login: str) -> Identity:
        """A GitHub user, as a signed delivery names them (GitHub logins ignore case); a login
        nobody lists is unknown (`github:login`, no powers but `*`)."""
        login = login.strip().lower()
        return Identity(self._github.get(login), GITHUB, login)

    def by_name(self, name: str, *, via: str = NAME, evidence: str | None = None) -> Identity:
        """A person named by something already trusted: a verified token (via=TOKEN,
        evidence=the token id), a session, the CLI. A name not in the directory is unknown
        (in open mode, `trust_names`, any plain name is that person)."""
        name = name.strip()
        known = name in self.people or (self.trust_names and _plain_name(name))
        return Identity(name if known else None, via, name if evidence is None else evidence)

    def person_named(self, text: str) -> str | None:
        """The person `text` names by any of their ids (name, Slack id, address), or None."""
        for identity in (self.by_name(text), self.by_slack(text), self.by_email(text)):
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


# The `via`s a principal `<via>:<id>` can start with (Identity.principal): what shows as its tag.
_CHANNELS = (SLACK, EMAIL, TOKEN, SESSION, NAME, API, CLI, AGENT)


def shown(principal: str) -> Shown:
    """`alice` -> alice; `api:alice` (the shared token said "alice", which proves nothing) ->
    alice, tagged api; `slack:U9` -> U9, tagged slack; `agent:claude-code` -> claude-code, tagged agent."""
    via, colon, raw = principal.partition(":")
    if colon and raw and via in _CHANNELS:
        return Shown(raw, via)
    return Shown(principal)


def one_name(principal: str) -> str:
    """A principal in running text (a transcript): `alice`, `carol (api)`."""
    seen = shown(principal)
    return f"{seen.name} ({seen.channel})" if seen.channel else seen.name


def identity_for(principal: str) -> Identity:
    """The identity a principal stands for: a person's name is that person; `<via>:<id>`
    someone the directory does not know, seen so (the reverse of Identity.principal)."""
    via, colon, raw = principal.partition(":")
    if colon and raw and via in _CHANNELS:
        return Identity(None, via, raw)
    return Identity(principal, NAME, principal)


def _describe_one(ref: str) -> str:
    if ref == ANYONE:
        return "anyone"
    if ref.startswith(GROUP):
        return f"the {ref.removeprefix(GROUP)} group"
    via, _, raw = ref.partition(":")
    return raw if via in (SLACK, EMAIL) and raw else ref


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
    slack_approvers: Mapping[str, Iterable[str]] | None = None,
    email_approvers: Mapping[str, Iterable[str]] | None = None,
    approver_must_differ: bool = False,
) -> Resolution:
    """Each environment's effective rules.

    `directory` is None when there is no people file; `written` is the file's
    [environments.*]; `slack_approvers` / `email_approvers` are APPROVERS / APPROVER_EMAILS
    parsed (`policy.parse_approvers`), passed only when the variable is set (empty or None:
    not set); `protected` and `approver_must_differ` are the variables' values, which a
    file's per-environment setting overrides.

    An environment whose approvers are listed anywhere (the file, either variable, its own
    entry or a variable's `*` entry) has exactly those approvers, all of them together; `*`
    only where written. With nothing configured (no directory, no written rules, neither
    variable) anyone may approve, as before: `open_mode`. Otherwise a protected environment
    left without approvers, or whose list names nobody, is a problem.
    """
    written = written or {}
    people = directory or Directory()
    tables = (
        (dict(slack_approvers or {}), people.by_slack),
        (dict(email_approvers or {}), people.by_email),
    )
    open_mode = directory is None and not written and not slack_approvers and not email_approvers
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
        return [
            f"{env} is protected but has no approvers: list them under [environments.{env}] "
            "approvers in deploybot.toml, or in APPROVERS / APPROVER_EMAILS"
        ]
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
