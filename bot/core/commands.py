"""Exact commands, parsed without any LLM into the same step types the model produces."""

from __future__ import annotations

import re
import unicodedata
from datetime import UTC, datetime
from typing import Literal

from bot.core.catalog import Catalog, Service
from bot.core.events import (
    DeployService,
    ListGitTags,
    LockEnvironment,
    Promote,
    ResumeDeploys,
    RollBack,
    ShowDeploys,
    Step,
    StopDeploys,
    UnlockEnvironment,
)
from bot.core.freeze_windows import ALL

_MENTION = r"^\s*(?:<@[A-Z0-9]+>|@?deploybot\b)?[\s,:]*"
_END = r"\s*(?:please)?\s*[.!]?\s*$"
_ENV = r"(?P<env>[a-z][a-z0-9_-]*)"
_SERVICE = r"(?P<service>[A-Za-z0-9][A-Za-z0-9._-]*)"
# What started a thread, after a deploy a trigger asks for: "deploy api v1.4.0 to staging
# (release v1.4.0 published by octocat)" (bot/core/triggers.py). It changes nothing about the
# deploy: it becomes the step's reason, shown with the approval request.
_NOTE = r"(?:\s+\((?P<note>[^()\n]{1,300})\))?"
_DEPLOY = re.compile(
    _MENTION + r"deploy\s+(?:the\s+)?" + _SERVICE + r"\s+(?P<tag>\S+?)\s+(?:to|on|in|into)\s+" + _ENV + _NOTE + _END,
    re.I,
)
_TAGS = re.compile(
    _MENTION + r"(?:list|show)?\s*(?:the\s+)?(?:git\s+)?tags(?:\s+(?:for|of)\s+" + _SERVICE + r")?" + _END, re.I
)
_WHERE = r"(?:" + _SERVICE + r"\s+(?:in|on)\s+)?" + _ENV  # `production`, or `api in production`
_LOCK = re.compile(_MENTION + r"lock\s+" + _WHERE + r"(?:\s*[:,-]\s*|\s+(?:because|for)\s+)(?P<reason>.+?)\s*$", re.I)
_UNLOCK = re.compile(
    _MENTION + r"unlock\s+" + _WHERE + r"(?:\s+--?force\s*[:,-]\s*(?P<force>\S.*?)\s*$|" + _END + ")", re.I | re.S
)
_WHATS_ON = re.compile(
    _MENTION + r"(?:what(?:'s|\s+is)\s+(?:deployed\s+)?(?:on|in)|(?:show\s+)?deploys\s+(?:to|on|in))\s+"
    + _ENV + r"\s*\??\s*$",
    re.I,
)
_ROLL_BACK = re.compile(
    _MENTION + r"roll\s*back\s+(?:the\s+)?" + _SERVICE + r"\s+(?:in|on|from)\s+" + _ENV + _END, re.I
)
_PROMOTE = re.compile(_MENTION + r"promote\s+(?:the\s+)?" + _SERVICE + r"\s+(?:to|into)\s+" + _ENV + _END, re.I)
_SCOPE = r"(?:all\s+deploys|deploys\s+(?:to|on|in)\s+" + _ENV + r")"
_STOP = re.compile(
    _MENTION + r"stop\s+" + _SCOPE + r"(?:\s+until\s+(?P<until>\d{4}-\d{2}-\d{2}(?:[T ]\d{1,2}:\d{2})?Z?))?"
    + r"\s*[:,-]\s*(?P<reason>\S.*?)\s*$", re.I | re.S,
)
_RESUME = re.compile(_MENTION + r"resume\s+(?:all\s+)?deploys(?:\s+(?:to|on|in)\s+" + _ENV + r")?" + _END, re.I)
_ANYWAY = re.compile(_MENTION + r"deploy\s+anyway\s*[:,-]\s*(?P<reason>\S.*?)\s*$", re.I | re.S)

EXAMPLES = (
    "deploy backend v1.2.3 to production",
    "list tags for backend",
    "roll back backend in production",
    "promote backend to production",
    "lock production: release freeze",
    "unlock production",
    "what's on production?",
    "stop all deploys: incident 4711",
    "resume deploys",
)


def examples(catalog: Catalog) -> tuple[str, ...]:
    """EXAMPLES with a service of the catalog's."""
    first = catalog.names[0] if catalog.names else "backend"
    return tuple(e.replace("backend", first) for e in EXAMPLES)


# The only words that approve, in every channel (the CLI prompt, a signed email reply) and the
# only ones a plain reply is refused for (it must not look like it approved anything).
# They also confirm that a request by email was really sent by whoever it names.
APPROVE_WORDS = frozenset({"y", "yes", "approve", "approved", "lgtm", "ship it", "confirm", "confirmed"})
# An allow-list: the whole first line is one of the words, with nothing after it but "." or "!".
_APPROVAL = re.compile(
    "(?:" + "|".join(re.escape(w) for w in sorted(APPROVE_WORDS, key=len, reverse=True)) + ")[.!]*", re.I
)


def is_approval(text: str) -> bool:
    """True when the first line is just an approval word ("Approved!", "Ship it.": after NFKC
    normalization, one of APPROVE_WORDS with only "." or "!" after it) and no later line asks
    a question: the only text that may approve, and only where a verified decision is
    possible (a button, a signed email reply, the API). "approve\nbut is the migration done?"
    is feedback, never an approval: its condition would be lost."""
    first, _, rest = text.strip().partition("\n")
    return bool(_APPROVAL.fullmatch(" ".join(unicodedata.normalize("NFKC", first).split()))) and not asks(rest)


def asks(text: str) -> bool:
    """Whether `text` has a question mark in it: "?" or any other Unicode one ("？", "﹖",
    "❓", "؟", "‽", the Greek one that NFKC turns into ";"), before or after NFKC."""
    return "?" in unicodedata.normalize("NFKC", text) or any(_question_mark(c) for c in set(text) if not c.isascii())


def _question_mark(c: str) -> bool:
    name = unicodedata.name(c, "")
    return "QUESTION MARK" in name or "INTERROBANG" in name


def parse(text: str, catalog: Catalog | None = None) -> Step | None:
    """The step an exact command asks for, or None (free text: the model's). A service is
    recognised only by a name in the catalog, so "deploy the latest api to production" is
    left to the model; a short tag of a service with a tag prefix becomes its full tag. A
    question ("stop all deploys, or only production?") is never a command that changes
    anything; only "what's on production?" is asked as one."""
    step = _parse(text, catalog or Catalog())
    if step is not None and not isinstance(step, ShowDeploys) and asks(text):
        return None
    return step


def _parse(text: str, catalog: Catalog) -> Step | None:
    if (m := _DEPLOY.match(text)) and (spec := _service(catalog, m["service"])):
        return DeployService(
            service=spec.name, tag=spec.full_tag(m["tag"]), environment=m["env"].lower(), reason=m["note"],
            source="command",
        )
    if m := _TAGS.match(text):
        if m["service"] is None:
            return ListGitTags(source="command")
        if spec := _service(catalog, m["service"]):
            return ListGitTags(service=spec.name, source="command")
        return None
    if planned := _planned(text, catalog):
        return planned
    if m := _LOCK.match(text):
        return LockEnvironment(environment=m["env"].lower(), reason=m["reason"], service=_named(catalog, m))
    if m := _UNLOCK.match(text):
        force = " ".join(m["force"].split()) if m["force"] else None
        return UnlockEnvironment(environment=m["env"].lower(), service=_named(catalog, m), force=force)
    if m := _WHATS_ON.match(text):
        return ShowDeploys(environment=m["env"].lower())
    if m := _STOP.match(text):
        until = _until(m["until"])
        if m["until"] and until is None:
            return None  # not a time: never an open-ended stop by mistake
        scope = m["env"].lower() if m["env"] else ALL_ENVIRONMENTS
        return StopDeploys(environment=scope, reason=" ".join(m["reason"].split()), until=until)
    if m := _RESUME.match(text):
        return ResumeDeploys(environment=m["env"].lower() if m["env"] else ALL_ENVIRONMENTS)
    return None


def _planned(text: str, catalog: Catalog) -> Step | None:
    """A step the history turns into a deploy: a rollback, a promotion."""
    if (m := _ROLL_BACK.match(text)) and (spec := _service(catalog, m["service"])):
        return RollBack(service=spec.name, environment=m["env"].lower())
    if (m := _PROMOTE.match(text)) and (spec := _service(catalog, m["service"])):
        return Promote(service=spec.name, environment=m["env"].lower())
    return None


ALL_ENVIRONMENTS = ALL  # "*": every environment, as freezes spell it


def _until(text: str | None) -> datetime | None:
    """`2026-11-26`, `2026-11-26 08:00` or `2026-11-26T08:00Z`: UTC (a date alone: its start)."""
    if not text:
        return None
    day, _, clock = text.rstrip("Zz").replace(" ", "T").partition("T")
    if clock:
        hour, _, minute = clock.partition(":")
        clock = f"{int(hour):02d}:{minute}"
    try:
        moment = datetime.fromisoformat(f"{day}T{clock}" if clock else day)
    except ValueError:
        return None
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment


def deploy_text(service: str, tag: str, environment: str, note: str = "") -> str:
    """The exact command a deploy asked for by an agent (bot/adapters/channels/mcp/server.py) is recorded as;
    `note` (why) becomes the step's reason, made to fit the command's parentheses."""
    note = " ".join(note.replace("(", " ").replace(")", " ").split())[:300]
    return f"deploy {service} {tag} to {environment}" + (f" ({note})" if note else "")


def rollback_text(service: str, environment: str) -> str:
    """The exact command a rollback asked for elsewhere (the CLI, the API) is recorded as."""
    return f"roll back {service} in {environment}"


def promote_text(service: str, environment: str) -> str:
    """The exact command a promotion asked for elsewhere (the CLI, the API, the console) is recorded as."""
    return f"promote {service} to {environment}"


def stop_text(scope: str, reason: str, until: str = "") -> str:
    """The exact command stopping deploys to `scope` (an environment, or "*") is recorded as,
    asked for elsewhere (the CLI, the console); `until` as written."""
    target = "all deploys" if scope == ALL_ENVIRONMENTS else f"deploys to {scope}"
    return f"stop {target}{f' until {until}' if until else ''}: {reason}"


def resume_text(scope: str) -> str:
    return "resume deploys" if scope == ALL_ENVIRONMENTS else f"resume deploys to {scope}"


def deploy_anyway(text: str) -> str | None:
    """The reason of "deploy anyway: REASON", or None for any other text (a question too:
    "deploy anyway, or should we wait for CI?")."""
    m = _ANYWAY.match(text)
    return " ".join(m["reason"].split()) if m and not asks(text) else None


def _service(catalog: Catalog, word: str | None) -> Service | None:
    name = catalog.find(word) if word else None
    return catalog.get(name) if name else None


def _named(catalog: Catalog, m: re.Match[str]) -> str:
    """A lock's service as the catalog spells it; an unknown one as written (refused later,
    with the catalog's names)."""
    if m["service"] is None:
        return ""
    spec = _service(catalog, m["service"])
    return spec.name if spec else m["service"]


_VERIFY_NOW = re.compile(_MENTION + r"verify\s+now" + _END, re.I)
_SKIP_VERIFICATION = re.compile(_MENTION + r"skip\s+verification\s*[:,-]\s*(?P<reason>\S.*?)\s*$", re.I | re.S)


def verify_command(text: str) -> tuple[Literal["verify_now", "skip"], str] | None:
    """`verify now` (end a deploy's bake early if every check holds right now) or `skip
    verification: REASON` (approvers only), said while a deploy is verified; None otherwise
    (a question too)."""
    if asks(text):
        return None
    if _VERIFY_NOW.match(text):
        return "verify_now", ""
    if m := _SKIP_VERIFICATION.match(text):
        return "skip", " ".join(m["reason"].split())
    return None
