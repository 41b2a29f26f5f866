"""GitHub's kind: its name in a thread's origin and among the ways people are seen (a
login), and how logins compare (the directory is told)."""

from __future__ import annotations

KIND = "github"  # `github = "…"` under [people.NAME]; the `via` (and channel) of GitHub's word about its user


def normalise_login(login: str) -> str:
    """`" Octocat "` -> `octocat`: GitHub logins ignore case."""
    return login.strip().lower()
