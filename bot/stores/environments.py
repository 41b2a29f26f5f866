"""Per-environment state in Redis: deploy locks (SET NX PX, owner-checked renew and release)
and the history of deploys (a capped list per environment, newest first)."""

from __future__ import annotations

import json
from dataclasses import asdict
from datetime import datetime

from redis.asyncio import Redis

from bot.ports import DeployRecord, Lock
from bot.stores.keys import Keys

HISTORY_LENGTH = 200

# KEYS: lock. ARGV: owner, ttl in ms (renew) -- only the owner may touch its lock.
_RENEW = """
local held = redis.call('GET', KEYS[1])
if held and cjson.decode(held)['owner'] == ARGV[1] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0
"""
_RELEASE = """
local held = redis.call('GET', KEYS[1])
if held and (ARGV[1] == '' or cjson.decode(held)['owner'] == ARGV[1]) then
  return redis.call('DEL', KEYS[1])
end
return 0
"""


def _dump_lock(lock: Lock) -> str:
    return json.dumps({**asdict(lock), "since": lock.since.isoformat()})


def _load_lock(raw: bytes) -> Lock:
    data = json.loads(raw)
    return Lock(**{**data, "since": datetime.fromisoformat(data["since"])})


class RedisEnvironments:
    def __init__(self, redis: Redis, keys: Keys | None = None) -> None:
        self.redis = redis
        self.keys = keys or Keys()

    async def acquire(self, lock: Lock, ttl_ms: int | None) -> Lock | None:
        key = self.keys.lock(lock.environment)
        for _ in range(3):  # the holder may let go between our SET and GET
            if await self.redis.set(key, _dump_lock(lock), nx=True, px=ttl_ms):
                return None
            raw = await self.redis.get(key)
            if raw is not None:
                holder = _load_lock(raw)
                if holder.owner == lock.owner:
                    if ttl_ms:
                        await self.renew(lock.environment, lock.owner, ttl_ms)
                    return None
                return holder
        raise RuntimeError(f"could not read or take the lock on {lock.environment}")

    async def renew(self, environment: str, owner: str, ttl_ms: int) -> bool:
        return bool(await self.redis.eval(_RENEW, 1, self.keys.lock(environment), owner, ttl_ms))

    async def release(self, environment: str, owner: str | None) -> bool:
        return bool(await self.redis.eval(_RELEASE, 1, self.keys.lock(environment), owner or ""))

    async def holder(self, environment: str) -> Lock | None:
        raw = await self.redis.get(self.keys.lock(environment))
        return _load_lock(raw) if raw is not None else None

    async def record(self, entry: DeployRecord) -> None:
        key = self.keys.history(entry.environment)
        async with self.redis.pipeline(transaction=True) as pipe:
            pipe.lpush(key, json.dumps({**asdict(entry), "at": entry.at.isoformat()}))
            pipe.ltrim(key, 0, HISTORY_LENGTH - 1)
            await pipe.execute()

    async def recent(self, environment: str, limit: int) -> list[DeployRecord]:
        raw = await self.redis.lrange(self.keys.history(environment), 0, limit - 1)
        records = []
        for item in raw:
            data = json.loads(item)
            records.append(DeployRecord(**{**data, "at": datetime.fromisoformat(data["at"])}))
        return records
