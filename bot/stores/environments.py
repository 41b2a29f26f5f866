"""Per-environment state in Redis: deploy locks (SET NX PX, owner-checked renew and release)
and the history of deploys (a capped list per environment, newest first)."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable
from dataclasses import asdict
from datetime import datetime

from redis.asyncio import Redis

from bot.ports import DeployRecord, Lock
from bot.retry import retrying
from bot.stores.keys import Keys
from bot.stores.replies import text

HISTORY_LENGTH = 1000  # per environment, every service's
# Taking a lock is SET NX, then GET to see who holds it; the holder may let go in between.
# Three tries in all, straight away: letting go twice in a row while we look is rare.
ACQUIRE_WAITS = (0, 0)
log = logging.getLogger(__name__)


class _LetGo(Exception):
    """The lock was held at our SET and free at our GET: try again."""

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


def _load_lock(raw: bytes | str) -> Lock:
    data = json.loads(raw)
    return Lock(**{**data, "since": datetime.fromisoformat(data["since"])})


class RedisEnvironments:
    def __init__(self, redis: Redis, keys: Keys | None = None) -> None:
        self.redis = redis
        self.keys = keys or Keys()

    def _key(self, environment: str, service: str = "") -> str:
        return self.keys.lock(environment, service)

    async def acquire(self, lock: Lock, ttl_ms: int | None) -> Lock | None:
        what = f"taking the lock on {lock.target}"
        try:
            async for attempt in retrying(ACQUIRE_WAITS, (_LetGo,), what, log, logging.DEBUG):
                with attempt:
                    return await self._acquire(lock, ttl_ms)
        except _LetGo as e:
            raise RuntimeError(f"could not read or take the lock on {lock.target}") from e
        raise AssertionError("unreachable: retrying returns or raises")

    async def _acquire(self, lock: Lock, ttl_ms: int | None) -> Lock | None:
        """A service's lock is taken only while its environment is not locked by anyone
        else: looked at before and after taking it (the two keys need not share a cluster
        slot, so no script spans them). A lock on the environment set between the two looks
        makes us let go; one set after the second look meets a deploy already under way,
        which is what locking during a deploy always meant: no further deploys."""
        if lock.service:
            env = await self.holder(lock.environment)
            if env is not None and env.owner != lock.owner:
                return env
        held = await self._acquire_once(lock, ttl_ms)
        if held is not None or not lock.service:
            return held
        env = await self.holder(lock.environment)
        if env is not None and env.owner != lock.owner:
            await self.release(lock.environment, lock.owner, lock.service)
            return env
        return None

    async def _acquire_once(self, lock: Lock, ttl_ms: int | None) -> Lock | None:
        key = self._key(lock.environment, lock.service)
        if await self.redis.set(key, _dump_lock(lock), nx=True, px=ttl_ms):
            return None
        raw = await self.redis.get(key)
        if raw is None:
            raise _LetGo()
        holder = _load_lock(raw)
        if holder.owner == lock.owner:
            if ttl_ms:
                await self.renew(lock.environment, lock.owner, ttl_ms, lock.service)
            return None
        return holder

    async def renew(self, environment: str, owner: str, ttl_ms: int, service: str = "") -> bool:
        return bool(await self.redis.eval(_RENEW, 1, self._key(environment, service), owner, ttl_ms))

    async def release(self, environment: str, owner: str | None, service: str = "") -> bool:
        return bool(await self.redis.eval(_RELEASE, 1, self._key(environment, service), owner or ""))

    async def holder(self, environment: str, service: str = "") -> Lock | None:
        raw = await self.redis.get(self._key(environment))
        if raw is None and service:
            raw = await self.redis.get(self._key(environment, service))
        return _load_lock(raw) if raw is not None else None

    async def held(self, environment: str, services: Iterable[str]) -> list[Lock]:
        async with self.redis.pipeline(transaction=False) as pipe:
            for service in ("", *services):
                pipe.get(self._key(environment, service))
            raws = await pipe.execute()
        return [_load_lock(r) for r in raws if r is not None]

    async def record(self, entry: DeployRecord) -> None:
        key = self.keys.history(entry.environment)
        data = {**asdict(entry), "at": entry.at.isoformat()}
        data.pop("faulty")  # kept apart: a record is never rewritten
        async with self.redis.pipeline(transaction=True) as pipe:
            pipe.lpush(key, json.dumps(data))
            pipe.ltrim(key, 0, HISTORY_LENGTH - 1)
            await pipe.execute()

    async def recent(self, environment: str, limit: int, service: str | None = None) -> list[DeployRecord]:
        async with self.redis.pipeline(transaction=False) as pipe:
            pipe.lrange(self.keys.history(environment), 0, (limit if service is None else HISTORY_LENGTH) - 1)
            pipe.smembers(self.keys.faulty(environment))
            raw, faulty = await pipe.execute()
        faulty = {text(f) for f in faulty}
        records = []
        for item in raw:
            data = json.loads(item)
            if service is not None and data["service"] != service:
                continue
            at = datetime.fromisoformat(data["at"])
            records.append(DeployRecord(**{**data, "at": at, "faulty": data["deploy_id"] in faulty}))
            if len(records) == limit:
                break
        return records

    async def mark_faulty(self, environment: str, deploy_id: str) -> None:
        await self.redis.sadd(self.keys.faulty(environment), deploy_id)
