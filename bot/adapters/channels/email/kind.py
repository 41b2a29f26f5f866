"""The email channel's kind: its name in a thread's origin, in notify targets (`email:ADDRESS`)
and among the ways people are seen."""

import re
from email.utils import parseaddr

from bot.core import wording
from bot.core.triggers import NotifyTarget

KIND = "email"


def normalise_address(address: str) -> str:
    """`Alice <Alice@Example.com>` -> `alice@example.com`: addresses compare lower-cased (the
    directory is told)."""
    _, addr = parseaddr(address)
    return (addr or address).strip().lower()


_ADDRESS = re.compile(r"^[^@\s<>,;:\"]+@[^@\s<>,;:\"]+\.[^@\s<>,;:\"]+$")
# `email:ADDRESS` in a notify list: where a thread's updates are mailed.
TARGET = NotifyTarget("ADDRESS", lambda value: None if _ADDRESS.match(value) else wording.not_an_address(value))
