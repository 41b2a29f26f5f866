"""Comparing what a doc shows with what the bot printed, line by line, where ids, commits
and times are the doc's placeholders: each id or commit the doc writes stands for the one
the bot printed in its place, the same one wherever the doc repeats it (in a later command
too); times match any time."""

from __future__ import annotations

import re

TOKEN = re.compile(
    r"(?P<id>\b[0-9a-f]{16}\b)"
    r"|(?P<commit>\b(?=[0-9a-f]{0,6}\d)(?=[0-9a-f]{0,6}[a-f])[0-9a-f]{7}\b)"
    r"|(?P<time>\b\d{4}-\d\d-\d\d \d\d:\d\d UTC\b)"
)
SHAPE = {"id": "[0-9a-f]{16}", "commit": "[0-9a-f]{7}", "time": r"\d{4}-\d\d-\d\d \d\d:\d\d UTC"}


class Placeholders:
    def __init__(self) -> None:
        self.bound: dict[str, str] = {}  # the doc's placeholder -> what the bot printed

    def fill(self, text: str) -> str:
        """`text` (a command the doc shows) with the placeholders bound so far."""
        return TOKEN.sub(lambda m: self.bound.get(m[0], m[0]), text)

    def match(self, shown: str, printed: str) -> bool:
        """Whether `printed` is the line `shown`, binding the placeholders it names first."""
        pattern, groups, last = [], {}, 0
        for m in TOKEN.finditer(shown):
            pattern.append(re.escape(shown[last:m.start()]))
            last = m.end()
            kind, token = m.lastgroup or "", m[0]
            if kind == "time":
                pattern.append(SHAPE[kind])
            elif token in self.bound:
                pattern.append(re.escape(self.bound[token]))
            elif token in groups:
                pattern.append(f"(?P={groups[token]})")
            else:
                groups[token] = f"g{len(groups)}"
                pattern.append(f"(?P<{groups[token]}>{SHAPE[kind]})")
        pattern.append(re.escape(shown[last:]))
        found = re.fullmatch("".join(pattern), printed)
        if found is None:
            return False
        new = {token: found[name] for token, name in groups.items()}
        if set(new.values()) & set(self.bound.values()):  # two placeholders for one value
            return False
        self.bound.update(new)
        return True
