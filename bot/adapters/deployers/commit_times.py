"""When commits were made, for delivery metrics' lead times: from a local repository (one
`git cat-file --batch` for any number of commits) or GitHub (a call per commit, a bounded
number per ask). Callers cache what they get: a commit's time never changes."""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import UTC, datetime

SHA = re.compile(r"[0-9a-f]{7,64}")
GITHUB_LOOKUPS = 50  # commits asked of GitHub per call at most: the rest come on later asks


def wanted(commits: Sequence[str]) -> list[str]:
    """The distinct commits worth asking for: hex object names only (never an option or a path)."""
    return [c for c in dict.fromkeys(commits) if SHA.fullmatch(c)]


def parse_batch(out: bytes) -> dict[str, datetime]:
    """`git cat-file --batch` output: per object a header `<sha> <type> <size>` and its body
    (or `<name> missing`); a commit's body has `committer NAME <EMAIL> SECONDS ZONE`."""
    found: dict[str, datetime] = {}
    at = 0
    while at < len(out):
        end = out.index(b"\n", at)
        header = out[at:end].split()
        at = end + 1
        if len(header) != 3:
            continue  # missing or ambiguous: no body follows
        name, kind, size = header[0].decode(), header[1], int(header[2])
        body = out[at:at + size]
        at += size + 1
        if kind == b"commit":
            when = _committer_time(body)
            if when is not None:
                found[name] = when
    return found


def _committer_time(body: bytes) -> datetime | None:
    for line in body.split(b"\n\n", 1)[0].split(b"\n"):
        if line.startswith(b"committer "):
            seconds = line.rsplit(b" ", 2)[-2]
            return datetime.fromtimestamp(int(seconds), UTC) if seconds.isdigit() else None
    return None


def github_time(commit_json: dict[str, object]) -> datetime | None:
    """The committer date of GitHub's GET /repos/{repo}/commits/{sha} answer."""
    commit = commit_json.get("commit")
    committer = commit.get("committer") if isinstance(commit, dict) else None
    date = committer.get("date") if isinstance(committer, dict) else None
    if not isinstance(date, str):
        return None
    try:
        return datetime.fromisoformat(date.replace("Z", "+00:00"))
    except ValueError:
        return None
