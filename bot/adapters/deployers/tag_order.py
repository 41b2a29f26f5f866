"""The one order of a service's tags, newest first, for every deployer: by the date a tag
was made, and tags made in the same second (a release script tagging several) by version
order, so "the latest" is v1.10.0, never v1.9.0 made alongside it."""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import UTC, datetime

from bot.core.events import GitTag

_OLDEST = datetime.min.replace(tzinfo=UTC)


def version_key(name: str) -> list[tuple[int, int | str]]:
    """v1.10.0 sorts above v1.9.2: numbers compare as numbers."""
    return [(0, int(p)) if p.isdigit() else (1, p) for p in re.split(r"(\d+)", name) if p]


def _made(tag: GitTag) -> datetime:
    try:
        made = datetime.fromisoformat(tag.date)
    except ValueError:
        return _OLDEST  # no date (GitHub's tag list has none): version order alone
    return made if made.tzinfo else made.replace(tzinfo=UTC)


def newest_first(tags: Iterable[GitTag]) -> list[GitTag]:
    return sorted(tags, key=lambda t: (_made(t), version_key(t.name)), reverse=True)
