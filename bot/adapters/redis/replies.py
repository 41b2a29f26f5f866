"""Reading redis-py replies: a client made without decode_responses answers bytes, one
made with it answers str; the stores accept either."""

from __future__ import annotations


def text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value
