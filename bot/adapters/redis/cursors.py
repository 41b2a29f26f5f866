"""A listing's cursor: a pair (where the page ended, and the member there) as opaque URL-safe
text, so a client passes it back as it came. Each listing checks the pair's types itself."""

from __future__ import annotations

import base64
import json
from typing import Any

NOT_A_CURSOR = "not a cursor from this listing"


def pack(position: object, member: str) -> str:
    return base64.urlsafe_b64encode(json.dumps([position, member]).encode()).decode().rstrip("=")


def unpack(cursor: str) -> tuple[Any, Any]:
    """The pair `pack` made, its types unchecked; ValueError when `cursor` is no pair at all."""
    try:
        position, member = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
    except Exception as e:
        raise ValueError(NOT_A_CURSOR) from e
    return position, member
