"""Request bodies as JSON has them (RFC 8259): no NaN or Infinity, no lone surrogate.

Python's json module (FastAPI parses bodies with it) and pydantic read `NaN`, `Infinity` and
`-Infinity`, and turn "\\ud800" into a string no encoder can write back out: such a body was
a 500 (while rendering the 422 that quotes it, or while storing it). Every route that reads
JSON refuses it first (`checked`, a dependency of its router) with a 422 that says why, before
anything is looked up or stored; the fast path (fast_launch.py) hands such a body to the
route, so the answer is the route's, word for word.
"""

from __future__ import annotations

import json
import re
from typing import Any

from fastapi import HTTPException, Request

from bot.core import wording

# Only a body holding one of these can hold either (or one in UTF-16 or UTF-32, which json
# also reads): any other is not parsed a second time.
_SUSPECT = re.compile(rb"NaN|Infinity|\\u[dD][89a-fA-F]")
_SURROGATE = re.compile("[\ud800-\udfff]")  # once parsed, a pair is one character: any left is alone
_WITH_BODIES = ("POST", "PUT", "PATCH")


class _NotJson(ValueError):
    pass


def problem(body: bytes) -> str | None:
    """Why `body` is not JSON text, in words; None when it is, or when it does not parse at
    all (the route's parser says so, in its own words)."""
    if not _SUSPECT.search(body) and b"\x00" not in body[:4]:
        return None
    try:
        value = json.loads(body, parse_constant=_constant)
    except _NotJson as e:
        return str(e)
    except (ValueError, RecursionError):
        return None
    return wording.lone_surrogate() if _has_lone_surrogate(value) else None


def _constant(name: str) -> Any:
    raise _NotJson(wording.not_a_json_number(name))


def _has_lone_surrogate(value: Any) -> bool:
    pending = [value]
    while pending:  # a loop, not recursion: however deep the body nests, no stack runs out here
        item = pending.pop()
        if isinstance(item, str):
            if _SURROGATE.search(item):
                return True
        elif isinstance(item, dict):
            pending += [*item, *item.values()]
        elif isinstance(item, list):
            pending += item
    return False


def _read_as_json(content_type: str | None) -> bool:
    """Whether a body of this type may be read as JSON: application/json, application/*+json
    (FastAPI's rule) and, to be safe, no type at all."""
    kind = (content_type or "application/json").partition(";")[0].strip().lower()
    return kind == "application/json" or (kind.startswith("application/") and kind.endswith("+json"))


async def checked(request: Request) -> None:
    """A route's dependency: a JSON body that is not JSON text is refused with a 422."""
    if request.method not in _WITH_BODIES or not _read_as_json(request.headers.get("content-type")):
        return
    why = problem(await request.body())
    if why is not None:
        raise HTTPException(422, wording.not_json(why))
