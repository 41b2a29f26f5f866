"""What the doc tests read in README.md and docs/*.md: fenced blocks, links, headings' anchors."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from tests import ROOT

README = ROOT / "README.md"
DOCS = sorted([README, *(ROOT / "docs").glob("*.md")])

FENCE = re.compile(r"^(?P<indent>[ \t]*)```(?P<lang>[\w-]*)[^\n]*\n(?P<body>.*?)^(?P=indent)```[ \t]*$", re.S | re.M)
LINK = re.compile(r"!?\[[^\]]*\]\((?P<target>[^)\s]+)(?:\s+\"[^\"]*\")?\)")
HEADING = re.compile(r"^#{1,6}[ \t]+(?P<text>.+?)[ \t]*#*[ \t]*$", re.M)
# A fenced block marked so, on the line right above it, is shown only: no test runs it
# (an output holding a secret, a payload a receiver gets). Keep them few.
ILLUSTRATIVE = "<!-- illustrative -->"


@dataclass(frozen=True)
class Block:
    path: Path
    lang: str
    body: str
    line: int
    illustrative: bool

    def __str__(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"


def blocks(path: Path, lang: str | None = None) -> list[Block]:
    text = path.read_text()
    found = []
    for m in FENCE.finditer(text):
        before = text[: m.start()].rstrip("\n").rsplit("\n", 1)[-1]
        body = "\n".join(line.removeprefix(m["indent"]) for line in m["body"].splitlines()) + "\n"
        found.append(Block(path, m["lang"], body, text.count("\n", 0, m.start()) + 1,
                           before.strip() == ILLUSTRATIVE))
    return [b for b in found if lang is None or b.lang == lang]


def prose(text: str) -> str:
    """`text` without its fenced blocks and inline code: what links and headings live in."""
    text = FENCE.sub("", text)
    return re.sub(r"`[^`\n]*`", "``", text)


def anchor(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link shows its text
    text = re.sub(r"[^\w\- ]", "", text.lower())
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    seen: dict[str, int] = {}
    out = set()
    for m in HEADING.finditer(FENCE.sub("", path.read_text())):
        slug = anchor(m["text"])
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        out.add(slug if n == 0 else f"{slug}-{n}")
    return out


def links(path: Path) -> list[str]:
    text = path.read_text()
    return [m["target"] for m in LINK.finditer(FENCE.sub("", re.sub(r"(?<!`)`[^`\n]+`(?!`)", "", text)))]
