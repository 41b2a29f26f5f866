"""Exact commands, parsed without any LLM into the same step types the model produces."""

from __future__ import annotations

import re
import unicodedata

from bot.events import (
    DeployBackend,
    DeployFrontend,
    ListGitTags,
    LockEnvironment,
    ShowDeploys,
    Step,
    UnlockEnvironment,
)

_MENTION = r"^\s*(?:<@[A-Z0-9]+>|@?deploybot\b)?[\s,:]*"
_END = r"\s*(?:please)?\s*[.!]?\s*$"
# What started a thread, after a deploy a trigger asks for: "deploy backend v1.4.0 to staging
# (release v1.4.0 published by octocat)" (bot/triggers.py). It changes nothing about the
# deploy: it becomes the step's reason, shown with the approval request.
_NOTE = r"(?:\s+\((?P<note>[^()\n]{1,300})\))?"
_DEPLOY = re.compile(
    _MENTION
    + r"deploy\s+(?:the\s+)?(?P<service>backend|frontend)\s+(?P<tag>\S+?)\s+(?:to|on|in|into)\s+"
    + r"(?P<env>[a-z][a-z0-9_-]*)"
    + _NOTE
    + _END,
    re.I,
)
_TAGS = re.compile(_MENTION + r"(?:list|show)?\s*(?:the\s+)?(?:git\s+)?tags" + _END, re.I)
_ENV = r"(?P<env>[a-z][a-z0-9_-]*)"
_LOCK = re.compile(_MENTION + r"lock\s+" + _ENV + r"(?:\s*[:,-]\s*|\s+(?:because|for)\s+)(?P<reason>.+?)\s*$", re.I)
_UNLOCK = re.compile(_MENTION + r"unlock\s+" + _ENV + _END, re.I)
_WHATS_ON = re.compile(
    _MENTION + r"(?:what(?:'s|\s+is)\s+(?:deployed\s+)?(?:on|in)|(?:show\s+)?deploys\s+(?:to|on|in))\s+"
    + _ENV + r"\s*\??\s*$",
    re.I,
)

EXAMPLES = (
    "deploy backend v1.2.3 to production",
    "deploy frontend v1.2.3 to staging",
    "list tags",
    "lock production: release freeze",
    "unlock production",
    "what's on production?",
)


# The only words that approve, in every channel (the CLI prompt, a signed email reply) and the
# only ones a plain reply is refused for (it must not look like it approved anything).
APPROVE_WORDS = frozenset({"y", "yes", "approve", "approved", "lgtm", "ship it"})
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


def parse(text: str) -> Step | None:
    if m := _DEPLOY.match(text):
        cls = DeployBackend if m["service"].lower() == "backend" else DeployFrontend
        return cls(tag=m["tag"], environment=m["env"].lower(), reason=m["note"], source="command")
    if _TAGS.match(text):
        return ListGitTags(source="command")
    if m := _LOCK.match(text):
        return LockEnvironment(environment=m["env"].lower(), reason=m["reason"])
    if m := _UNLOCK.match(text):
        return UnlockEnvironment(environment=m["env"].lower())
    if m := _WHATS_ON.match(text):
        return ShowDeploys(environment=m["env"].lower())
    return None
