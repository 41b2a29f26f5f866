"""The Inbox in Redis: inbound delivery dedupe, conversation bindings and channel pointers.

Kept apart from the thread store: channels need only this, never the threads themselves.

What belongs to a thread (a conversation bound to it by `receive`, a pointer linked with its
`thread_id`) is recorded in the thread's `names` hash (its own slot, beside the thread's
keys): Inbox key -> the value bound. `drop` deletes each such key while it still holds that
value, then the hash. The record is written before the binding for `link` (a crash between
leaves a record of nothing, which `drop` skips) and right after it for `receive` (whose
thread id is only known then: a crash between the two leaves one conversation key that
never expires, the only thing this can leak).
"""

from __future__ import annotations

from redis.asyncio import Redis

from bot.adapters.redis import scripts
from bot.adapters.redis.keys import Keys
from bot.adapters.redis.replies import text
from bot.core.events import new_id

# KEYS: delivery marker, conversation. ARGV: marker TTL, the id for a new thread ('' when
# this message may not start one), a token for this call. Returns {fresh, thread id or '',
# started}; a repeated delivery gets the conversation's thread too, so it can be handed to a
# worker again. The marker holds the token: a call resent after a broken connection (its
# first send may have run) finds its own token and is still fresh, not a repeat.
_RECEIVE = """
local bound = redis.call('GET', KEYS[2])
if not redis.call('SET', KEYS[1], ARGV[3], 'NX', 'EX', ARGV[1]) then
  local ours = redis.call('GET', KEYS[1]) == ARGV[3]
  if ours then return {1, bound or '', (bound and bound == ARGV[2]) and 1 or 0} end
  return {0, bound or '', 0}
end
if bound then return {1, bound, 0} end
if ARGV[2] == '' then return {1, '', 0} end
redis.call('SET', KEYS[2], ARGV[2])
return {1, ARGV[2], 1}
"""


# KEYS: the key bound. ARGV: the value recorded. Delete it only while it holds that value.
_DROP = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""


class RedisInbox:
    def __init__(self, redis: Redis, keys: Keys | None = None) -> None:
        self.redis = redis
        self.keys = keys or Keys()

    async def receive(
        self, scope: str, message_id: str, ttl_seconds: int, new_thread_id: str | None
    ) -> tuple[bool, str | None, bool]:
        keys = [self.keys.delivery(scope, message_id), self.keys.conversation(scope)]
        fresh, thread_id, started = await scripts.run(
            self.redis, _RECEIVE, keys, ttl_seconds, new_thread_id or "", new_id()
        )
        if started:  # bound to this thread now: it goes with the thread
            await self.redis.hset(self.keys.names(text(thread_id)), self.keys.conversation(scope), text(thread_id))
        return bool(fresh), (text(thread_id) or None), bool(started)

    async def forget(self, scope: str, message_id: str) -> None:
        await self.redis.delete(self.keys.delivery(scope, message_id))

    async def link(self, name: str, value: str, thread_id: str | None = None) -> str:
        """Bind `name` to `value` unless it is bound already; return what it is bound to."""
        if thread_id is not None:  # first: a binding is never left unrecorded
            await self.redis.hset(self.keys.names(thread_id), self.keys.ref(name), value)
        async with self.redis.pipeline(transaction=True) as pipe:
            pipe.set(self.keys.ref(name), value, nx=True)
            pipe.get(self.keys.ref(name))
            _, bound = await pipe.execute()
        return text(bound)

    async def lookup(self, name: str) -> str | None:
        value = await self.redis.get(self.keys.ref(name))
        return text(value) if value is not None else None

    async def keep(self, name: str, value: str, ttl_seconds: int) -> None:
        await self.redis.set(self.keys.ref(name), value, ex=ttl_seconds)

    async def drop(self, thread_id: str) -> int:
        recorded = await self.redis.hgetall(self.keys.names(thread_id))
        dropped = 0
        for key, value in recorded.items():  # each key its own slot: one script each
            dropped += int(await scripts.run(self.redis, _DROP, [text(key)], value))
        await self.redis.delete(self.keys.names(thread_id))
        return dropped

    async def ping(self) -> None:
        await self.redis.ping()
