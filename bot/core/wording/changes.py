"""A change preview: how far a deploy moves, and the commits it adds or removes."""

from __future__ import annotations

from bot.core.events import Change

__all__ = [
    "change_headline", "change_in_one_line", "change_lines", "change_unknown", "goes", "more_commits",
]


def goes(change_ahead: int, change_behind: int) -> str:
    """How far a deploy moves, in plain words."""
    if change_ahead and change_behind:
        return f"{_commits(change_ahead)} ahead and {_commits(change_behind)} behind what is deployed (diverged)"
    if change_behind:
        return f"goes back {_commits(change_behind)}"
    if change_ahead:
        return f"{_commits(change_ahead)} ahead"
    return "the same commit as deployed now"


def _commits(n: int) -> str:
    return f"{n} commit" if n == 1 else f"{n} commits"


def change_headline(from_tag: str, from_commit: str, to_commit: str, ahead: int, behind: int) -> str:
    if not from_commit:
        return f"nothing deployed there yet; {to_commit[:7]} would be the first"
    return f"from {from_tag or '?'} ({from_commit[:7]}) to {to_commit[:7]}: {goes(ahead, behind)}"


def change_unknown(why: str) -> str:
    return f"what it changes is unknown: {why}"


def more_commits(n: int) -> str:
    return f"… and {_commits(n)} more"


def change_lines(change: Change) -> list[str]:
    """A change preview for people: a headline, then a line per commit ("abc1234 subject
    (author)"), newest first. Every channel renders these lines, escaping them its way."""
    if change.unknown:
        return [change_unknown(change.unknown)]
    lines = [change_headline(change.from_tag, change.from_commit, change.to_commit, change.ahead, change.behind)]
    if change.commits:
        lines.append("commits removed:" if change.behind and not change.ahead else "commits added:")
        lines += [f"{c.sha[:7]} {c.subject}" + (f" ({c.author})" if c.author else "") for c in change.commits]
        hidden = (change.behind if change.behind and not change.ahead else change.ahead) - len(change.commits)
        if hidden > 0:
            lines.append(more_commits(hidden))
    return lines


def change_in_one_line(change: Change) -> str:
    """The change preview on one line (a transcript's, a log's): "; " between its lines, but
    a heading ("commits removed:") runs on into the first commit it heads."""
    joined = ""
    for line in change_lines(change):
        joined += line if not joined else (f" {line}" if joined.endswith(":") else f"; {line}")
    return joined
