"""Exact commands, parsed without any LLM into the same step types the model produces."""

from __future__ import annotations

import re

from bot.events import DeployBackend, DeployFrontend, ListGitTags, Step

_MENTION = r"^\s*(?:<@[A-Z0-9]+>|@?deploybot\b)?[\s,:]*"
_END = r"\s*(?:please)?\s*[.!]?\s*$"
_DEPLOY = re.compile(
    _MENTION
    + r"deploy\s+(?:the\s+)?(?P<service>backend|frontend)\s+(?P<tag>\S+?)\s+(?:to|on|in|into)\s+"
    + r"(?P<env>[a-z][a-z0-9_-]*)"
    + _END,
    re.I,
)
_TAGS = re.compile(_MENTION + r"(?:list|show)?\s*(?:the\s+)?(?:git\s+)?tags" + _END, re.I)

EXAMPLES = (
    "deploy backend v1.2.3 to production",
    "deploy frontend v1.2.3 to staging",
    "list tags",
)


def parse(text: str) -> Step | None:
    if m := _DEPLOY.match(text):
        cls = DeployBackend if m["service"].lower() == "backend" else DeployFrontend
        return cls(tag=m["tag"], environment=m["env"].lower(), source="command")
    if _TAGS.match(text):
        return ListGitTags(source="command")
    return None
