"""The email channel's kind: its name in a thread's origin, in notify targets (`email:ADDRESS`)
and among the ways people are seen."""

from email.utils import parseaddr

KIND = "email"


def normalise_address(address: str) -> str:
    """`Alice <Alice@Example.com>` -> `alice@example.com`: addresses compare lower-cased (the
    directory is told)."""
    _, addr = parseaddr(address)
    return (addr or address).strip().lower()
