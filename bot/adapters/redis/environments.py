"""Per-environment state in Redis: deploy locks (SET NX PX, owner-checked renew and release)
and the history of deploys (a list per environment, newest first: LPUSH at the head; records
older than DEPLOY_HISTORY_RETENTION are taken off the tail by bot/runtime/gc.py).

Pages of the history are found by a cursor naming the last record shown: its deploy id and
its place counted from the tail (which never changes when records are pushed at the head;
taking records off the tail only lowers it, so the record is looked for from there down)."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Mapping
from dataclasses import asdict, fields
from datetime import datetime
from typing import Any

from redis.asyncio import Redis

from bot.adapters.redis import cursors, deploy_counters, scripts
from bot.adapters.redis.keys import Keys
from bot.adapters.redis.replies import text
from bot.runtime.ports import DeployRecord, Lock, Tally
from bot.runtime.retry import retrying

HISTORY_SCAN = 5000  # records a search by service looks through, newest first
CHUNK = 200  # records read at a time
SINCE_CHUNK = 1000  # records read at a time for a window of time (delivery metrics read thousands)
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
# KEYS: lock. ARGV: the owner it must be held by, the new lock's JSON. No TTL: set by hand.
_HAND_OVER = """
local held = redis.call('GET', KEYS[1])
if held and cjson.decode(held)['owner'] == ARGV[1] then
  redis.call('SET', KEYS[1], ARGV[2])
  return 1
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


# KEYS: history. ARGV: the oldest record as read. Take it off the tail if it is still there.
_DROP_OLDEST = """
if redis.call('LINDEX', KEYS[1], -1) == ARGV[1] then redis.call('RPOP', KEYS[1]) return 1 end
return 0
"""

_TIMES = {f.name for f in fields(DeployRecord) if "datetime" in str(f.type)}
# The verification's fields: marked after the record is written (mark_verified, mark_skipped).
_VERDICT = ("verified_at", "verified_by", "verification_skipped_at", "verification_skipped_by",
            "verification_skip_reason")


def dump_record(entry: DeployRecord) -> str:
    data = {k: v.isoformat() if isinstance(v, datetime) else v for k, v in asdict(entry).items()}
    data.pop("faulty")  # kept apart: a record is never rewritten
    for name in _VERDICT:  # likewise
        data.pop(name)
    return json.dumps(data)


def load_record(
    raw: bytes | str, faulty: set[str] | frozenset[str] = frozenset(), verified: Mapping[str, datetime] | None = None,
    verdicts: Mapping[str, dict[str, Any]] | None = None,
) -> DeployRecord:
    data: dict[str, Any] = json.loads(raw)
    for name in _VERDICT:
        data.pop(name, None)
    for name in _TIMES & data.keys():
        if data[name] is not None:
            data[name] = datetime.fromisoformat(data[name])
    deploy_id = data["deploy_id"]
    return DeployRecord(**{**data, "faulty": deploy_id in faulty, "verified_at": (verified or {}).get(deploy_id),
                           **(verdicts or {}).get(deploy_id, {})})


def _verified(raw: Mapping[Any, Any]) -> dict[str, datetime]:
    return {text(k): datetime.fromisoformat(text(v)) for k, v in raw.items()}


def _verdicts(raw: Mapping[Any, Any]) -> dict[str, dict[str, Any]]:
    """deploy id -> the verification fields its verdict sets (only the fields it knows: a
    newer process may have written more)."""
    found: dict[str, dict[str, Any]] = {}
    for key, value in raw.items():
        verdict = json.loads(value)
        if verdict.get("outcome") == "skipped":
            found[text(key)] = {"verification_skipped_at": datetime.fromisoformat(verdict["at"]),
                                "verification_skipped_by": verdict.get("by", ""),
                                "verification_skip_reason": verdict.get("reason", "")}
        elif verdict.get("outcome") == "verified":
            found[text(key)] = {"verified_by": verdict.get("by", "")}
    return found


def history_cursor(from_tail: int, deploy_id: str) -> str:
    return cursors.pack(from_tail, deploy_id)


def history_position(cursor: str) -> tuple[int, str]:
    from_tail, deploy_id = cursors.unpack(cursor)
    if not isinstance(from_tail, int) or not isinstance(deploy_id, str):
        raise ValueError(cursors.NOT_A_CURSOR)
    return from_tail, deploy_id


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
        return bool(await scripts.run(self.redis, _RENEW, [self._key(environment, service)], owner, ttl_ms))

    async def release(self, environment: str, owner: str | None, service: str = "") -> bool:
        return bool(await scripts.run(self.redis, _RELEASE, [self._key(environment, service)], owner or ""))

    async def hand_over(self, lock: Lock, from_owner: str) -> bool:
        key = self._key(lock.environment, lock.service)
        return bool(await scripts.run(self.redis, _HAND_OVER, [key], from_owner, _dump_lock(lock)))

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
        # Not a transaction (the two keys need not share a cluster slot): a counter lost to a
        # crash in between is a scrape off by one, never a deploy missing from the history.
        async with self.redis.pipeline(transaction=False) as pipe:
            pipe.lpush(self.keys.history(entry.environment), dump_record(entry))
            deploy_counters.count(pipe, self.keys.deploy_counters(), entry)
            await pipe.execute()

    async def tallies(self) -> list[Tally]:
        return await deploy_counters.tallies(self.redis, self.keys.deploy_counters())

    async def recent(self, environment: str, limit: int, service: str | None = None) -> list[DeployRecord]:
        if service is None:
            async with self.redis.pipeline(transaction=False) as pipe:
                pipe.lrange(self.keys.history(environment), 0, limit - 1)
                pipe.smembers(self.keys.faulty(environment))
                pipe.hgetall(self.keys.verified(environment))
                pipe.hgetall(self.keys.verdicts(environment))
                raw, faulty, verified, verdicts = await pipe.execute()
            marked, said = {text(f) for f in faulty}, _verdicts(verdicts)
            return [load_record(item, marked, _verified(verified), said) for item in raw]
        return (await self.page(environment, limit, None, service, scan=HISTORY_SCAN))[0]

    async def page(
        self, environment: str, limit: int, cursor: str | None = None, service: str | None = None,
        scan: int | None = None,
    ) -> tuple[list[DeployRecord], str | None]:
        """Up to `limit` records after `cursor` (of `service`), newest first, and the next
        cursor (None: no more). `scan`: look through at most this many records (by service,
        HISTORY_SCAN unless said: one page of a rare service must not read a long history)."""
        if scan is None and service is not None:
            scan = HISTORY_SCAN
        key = self.keys.history(environment)
        length = int(await self.redis.llen(key))
        start = 0  # index from the head of the first record after the cursor
        if cursor is not None:
            from_tail, deploy_id = history_position(cursor)
            found = await self._find(key, min(from_tail, length - 1), deploy_id)
            if found is None:  # taken off the tail since: everything after it went too
                return [], None
            start = length - found
        faulty = {text(f) for f in await self.redis.smembers(self.keys.faulty(environment))}
        verified = _verified(await self.redis.hgetall(self.keys.verified(environment)))
        verdicts = _verdicts(await self.redis.hgetall(self.keys.verdicts(environment)))
        records: list[tuple[int, DeployRecord]] = []
        read = 0
        while start < length and len(records) <= limit and (scan is None or read < scan):
            raw = await self.redis.lrange(key, start, start + CHUNK - 1)
            if not raw:
                break
            for offset, item in enumerate(raw):
                record = load_record(item, faulty, verified, verdicts)
                if service is None or record.service == service:
                    records.append((length - 1 - (start + offset), record))
            start += len(raw)
            read += len(raw)
        shown = records[:limit]
        more = len(records) > limit or (start < length and (scan is None or read < scan) and bool(shown))
        next_cursor = history_cursor(shown[-1][0], shown[-1][1].deploy_id) if more and shown else None
        return [r for _, r in shown], next_cursor

    async def _find(self, key: str, from_tail: int, deploy_id: str) -> int | None:
        """The place from the tail of the record `deploy_id`, at `from_tail` or below, looked
        for among HISTORY_SCAN records at most (a forged cursor must not walk a long history)."""
        stop = from_tail - HISTORY_SCAN
        while from_tail >= 0 and from_tail > stop:
            low = max(0, from_tail - CHUNK + 1)
            raw = await self.redis.lrange(key, -(from_tail + 1), -(low + 1))  # head order: newest first
            for i, item in enumerate(raw):
                if json.loads(item)["deploy_id"] == deploy_id:
                    return from_tail - i
            from_tail = low - 1
        return None

    async def expire(self, environment: str, before: datetime, limit: int, dry_run: bool = False) -> int:
        """Take up to `limit` records older than `before` off the tail (the oldest); how
        many went (or, with `dry_run`, would go)."""
        key = self.keys.history(environment)
        if dry_run:
            raw = await self.redis.lrange(key, -limit, -1)
            return sum(1 for item in raw if load_record(item).at < before)
        dropped = 0
        while dropped < limit:
            oldest = await self.redis.lindex(key, -1)
            if oldest is None or load_record(oldest).at >= before:
                break
            dropped += int(await scripts.run(self.redis, _DROP_OLDEST, [key], oldest))
        return dropped

    async def mark_faulty(self, environment: str, deploy_id: str) -> None:
        await self.redis.sadd(self.keys.faulty(environment), deploy_id)

    async def since(self, environment: str, after: datetime, limit: int) -> list[DeployRecord]:
        """Records are pushed at the head as deploys finish, so newest first by `at` (give or
        take the clocks of the workers): read a chunk at a time from the head, and stop at the
        end of the chunk where an older record shows up."""
        key = self.keys.history(environment)
        faulty = {text(f) for f in await self.redis.smembers(self.keys.faulty(environment))}
        verified = _verified(await self.redis.hgetall(self.keys.verified(environment)))
        verdicts = _verdicts(await self.redis.hgetall(self.keys.verdicts(environment)))
        found: list[DeployRecord] = []
        start = 0
        while len(found) < limit:
            raw = await self.redis.lrange(key, start, start + SINCE_CHUNK - 1)
            records = [load_record(item, faulty, verified, verdicts) for item in raw]
            found += [r for r in records if r.at >= after]
            if len(raw) < SINCE_CHUNK or any(r.at < after for r in records):
                break
            start += len(raw)
        return found[:limit]
    async def mark_verified(self, environment: str, deploy_id: str, at: datetime, by: str = "") -> None:
        async with self.redis.pipeline(transaction=False) as pipe:
            pipe.hset(self.keys.verified(environment), deploy_id, at.isoformat())
            if by:
                pipe.hset(self.keys.verdicts(environment), deploy_id,
                          json.dumps({"outcome": "verified", "at": at.isoformat(), "by": by}))
            await pipe.execute()

    async def mark_skipped(self, environment: str, deploy_id: str, at: datetime, by: str, reason: str) -> None:
        verdict = {"outcome": "skipped", "at": at.isoformat(), "by": by, "reason": reason}
        await self.redis.hset(self.keys.verdicts(environment), deploy_id, json.dumps(verdict))
