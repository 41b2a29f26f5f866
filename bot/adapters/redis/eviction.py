"""deploybot's Redis must never evict: a thread, a lease or a lock evicted is a deploy lost, or
two deploys at once. `maxmemory-policy` other than `noeviction` is a startup error naming the
setting and what it would delete; a managed Redis that refuses CONFIG gets a warning (its
provider's console says the policy)."""

from __future__ import annotations

from typing import Any

from redis.asyncio import Redis
from redis.exceptions import ResponseError

# What each family of policies deletes once memory is full (redis.io's "key eviction").
DELETES = {
    "allkeys-": "any key: threads, locks and leases included",
    "volatile-": "keys with a TTL: locks, leases and sign-in sessions, so two deploys could run at once",
}


async def policies(redis: Redis) -> list[str]:
    """Every `maxmemory-policy` the client answers for (a cluster's client: each primary's)."""
    found: dict[Any, Any] = dict(await redis.config_get("maxmemory-policy"))
    if "maxmemory-policy" in found:
        return [_text(found["maxmemory-policy"])]
    return [_text(v.get("maxmemory-policy", "")) for v in found.values() if isinstance(v, dict)]


def _text(value: object) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


async def problem(redis: Redis) -> tuple[str | None, str | None]:
    """(a startup error, a warning): the error when the store may evict, the warning when it
    will not say."""
    try:
        found = await policies(redis)
    except ResponseError as e:  # CONFIG renamed or refused (managed Redis)
        return None, (f"could not read Redis's maxmemory-policy ({str(e)[:80]}): make sure it is noeviction "
                      "(docs/operations.md#redis-memory), or a full Redis deletes threads and locks")
    evicting = sorted({p for p in found if p != "noeviction"})
    if not evicting:
        return None, None
    policy = evicting[0]
    what = next((deletes for family, deletes in DELETES.items() if policy.startswith(family)), "keys deploybot needs")
    return (f"Redis's maxmemory-policy is {policy}: once memory is full it deletes {what}. "
            "Set maxmemory-policy noeviction (CONFIG SET maxmemory-policy noeviction, and in redis.conf)"), None
