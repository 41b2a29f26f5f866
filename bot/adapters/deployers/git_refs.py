"""When a local repository's tags may have changed, without running git.

Listing tags costs a `git` process; a worker listed them on every run. Git writes a tag by
creating or renaming a file under refs/tags (a directory's mtime changes), by rewriting
packed-refs (`git pack-refs`, `git gc`, a fetch of many tags), or, in a reftable repository,
by rewriting reftable/tables.list. So the stat of those is a signature of the tags: while it
is unchanged, the tags listed last are still the tags.

A change within one tick of the file system's clock could leave a signature unchanged (git
calls this "racy"); so a signature taken less than RACY seconds after its newest mtime is not
trusted, and the tags are listed again until the files are older than that.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

RACY = 2.0  # seconds: a signature whose newest mtime is younger than this is not trusted
Signature = tuple[tuple[str, int, int, int], ...]


def signature(common_dir: Path) -> Signature | None:
    """The stat of every file and directory a tag's change touches in `common_dir` (a
    repository's common git directory); None when it cannot be trusted (too recent, or a
    file could not be read): then the caller lists the tags again. Paths are plain strings:
    this runs on every run, and pathlib's objects cost more than the stats."""
    entries: list[tuple[str, int, int, int]] = []
    try:
        for path in _watched(os.fspath(common_dir)):
            try:
                st = os.stat(path)
            except FileNotFoundError:
                entries.append((path, 0, 0, 0))
                continue
            entries.append((path, st.st_mtime_ns, st.st_ino, st.st_size))
    except OSError:
        return None
    newest = max(e[1] for e in entries)
    if time.time_ns() - newest < RACY * 1e9:
        return None
    return tuple(entries)


def _watched(common_dir: str) -> list[str]:
    """packed-refs, reftable/tables.list, and refs/tags with every directory below it (a tag
    named release/v1 lives in refs/tags/release/)."""
    tags = os.path.join(common_dir, "refs", "tags")
    found = [os.path.join(common_dir, "packed-refs"), os.path.join(common_dir, "reftable", "tables.list"), tags]
    pending = [tags]
    while pending:
        try:
            with os.scandir(pending.pop()) as it:
                for entry in it:
                    if entry.is_dir(follow_symlinks=False):
                        found.append(entry.path)
                        pending.append(entry.path)
        except FileNotFoundError:
            continue
    return found
