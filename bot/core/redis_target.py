"""Where the data lives: what bot/config/settings.py reads from REDIS_URL, REDIS_SENTINELS,
REDIS_CLUSTER... and bot/adapters/redis/connect.py makes a client for. Here, so config imports
no adapter. Pure: only the value."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

Mode = Literal["single", "sentinel", "cluster"]


@dataclass(frozen=True)
class RedisTarget:
    """Where the data lives. `single`: `url` (None: the embedded server, resolved by the
    caller before connecting). `sentinel`: the Sentinels' addresses and the master's name.
    `cluster`: `url` names any node; the client finds the rest."""

    mode: Mode = "single"
    url: str | None = field(default=None, repr=False)  # may hold a password
    sentinels: tuple[tuple[str, int], ...] = ()
    master: str | None = None
    password: str | None = field(default=None, repr=False)  # the data servers' (REDIS_PASSWORD)
    sentinel_password: str | None = field(default=None, repr=False)  # the Sentinels' own
    wait_ms: int = 500  # WAIT for a replica after a write that must survive a failover; 0: never

    @property
    def waits(self) -> bool:
        """Whether writes that must survive a failover WAIT for a replica. Not on a cluster:
        WAIT must follow the write on the same connection, which a cluster client does not
        promise (docs/operations.md: Redis)."""
        return self.mode != "cluster" and self.wait_ms > 0
