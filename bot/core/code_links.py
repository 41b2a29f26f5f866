"""Links to a service's code host for its tags, commits and compares: GitHub's own for a
service with `github = "owner/name"`, or URL templates for any other host (deploybot.toml's
`[services.NAME.links]`). Each value is escaped for a URL's path before it goes in."""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import quote

PLACES = {"tag": ("{tag}",), "commit": ("{commit}",), "compare": ("{from}", "{to}")}


@dataclass(frozen=True)
class CodeLinks:
    tag: str = ""  # "https://git.example.com/api/-/tags/{tag}"; "": no link
    commit: str = ""  # "... /commit/{commit}"
    compare: str = ""  # "... /compare/{from}...{to}"

    @classmethod
    def github(cls, repository: str, web: str = "https://github.com") -> CodeLinks:
        base = f"{web.rstrip('/')}/{repository}"
        return cls(f"{base}/tree/{{tag}}", f"{base}/commit/{{commit}}", f"{base}/compare/{{from}}...{{to}}")

    def for_tag(self, tag: str) -> str:
        return self.tag.replace("{tag}", _part(tag)) if self.tag and tag else ""

    def for_commit(self, commit: str) -> str:
        return self.commit.replace("{commit}", _part(commit)) if self.commit and commit else ""

    def for_compare(self, base: str, head: str) -> str:
        if not (self.compare and base and head) or base == head:
            return ""
        return self.compare.replace("{from}", _part(base)).replace("{to}", _part(head))


def _part(value: str) -> str:
    """`value` as one piece of a URL's path (a tag `web/v1.2.3` keeps its slash)."""
    return quote(value, safe="/")


def template_problem(kind: str, template: str) -> str | None:
    """Why `template` cannot be the `kind` link, None when it can: an http(s) address that
    holds each of the kind's places."""
    if not template.startswith(("https://", "http://")):
        return f"links.{kind} must be an http:// or https:// address"
    missing = [p for p in PLACES[kind] if p not in template]
    if missing:
        return f"links.{kind} must hold {' and '.join(missing)}"
    return None
