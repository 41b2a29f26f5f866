"""The outbox in Redis: the messages that must go out (a hash, key -> the message as JSON)
and when each is next tried (a sorted set, ms by the store's own clock, so no process's clock
moves it). One hash tag, so each script touches one cluster slot. Taking what is due pushes
each one's time a hold ahead, as the timers do: two processes never try one message at once,
and one whose process died is due again when its hold lapses."""

from __future__ import annotations

import base64
import json

from redis.asyncio import Redis

from bot.adapters.redis import scripts
from bot.adapters.redis.keys import Keys
from bot.runtime.ports import Outgoing

_NOW = "local t = redis.call('TIME') local now = t[1] * 1000 + math.floor(t[2] / 1000)\n"

# KEYS: messages, due. ARGV: key, JSON, ms from now.
_PUT = _NOW + """
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
redis.call('ZADD', KEYS[2], now + tonumber(ARGV[3]), ARGV[1])
"""

# KEYS: due. ARGV: key, ms from now.
_HOLD = _NOW + "redis.call('ZADD', KEYS[1], 'XX', now + tonumber(ARGV[2]), ARGV[1])"

# KEYS: messages, due. ARGV: hold (ms), count.
_DUE = _NOW + """
local due = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', now, 'LIMIT', 0, tonumber(ARGV[2]))
local found = {}
for _, key in ipairs(due) do
  local message = redis.call('HGET', KEYS[1], key)
  if message then
    redis.call('ZADD', KEYS[2], 'XX', now + tonumber(ARGV[1]), key)
    table.insert(found, message)
  else
    redis.call('ZREM', KEYS[2], key)
  end
end
return found
"""


def _ms(seconds: float) -> int:
    return int(seconds * 1000)


def _dumps(message: Outgoing) -> str:
    return json.dumps({
        "key": message.key, "thread_id": message.thread_id, "to": message.to,
        "raw": base64.b64encode(message.raw).decode(), "attempts": message.attempts, "reason": message.reason,
    })


def _loads(stored: bytes | str) -> Outgoing:
    data = json.loads(stored)
    return Outgoing(data["key"], data["thread_id"], data["to"], base64.b64decode(data["raw"]),
                    int(data["attempts"]), data["reason"])


class RedisOutbox:
    def __init__(self, redis: Redis, keys: Keys | None = None) -> None:
        self.redis = redis
        self.keys = keys or Keys()

    async def put(self, message: Outgoing, hold: float) -> None:
        keys = [self.keys.outbox(), self.keys.outbox_due()]
        await scripts.run(self.redis, _PUT, keys, message.key, _dumps(message), _ms(hold))

    async def hold(self, key: str, seconds: float) -> None:
        await scripts.run(self.redis, _HOLD, [self.keys.outbox_due()], key, _ms(seconds))

    async def due(self, hold: float, count: int) -> list[Outgoing]:
        keys = [self.keys.outbox(), self.keys.outbox_due()]
        return [_loads(m) for m in await scripts.run(self.redis, _DUE, keys, _ms(hold), count)]

    async def again(self, message: Outgoing, after: float) -> None:
        await self.put(message, after)

    async def sent(self, key: str) -> None:
        async with self.redis.pipeline(transaction=True) as pipe:
            pipe.hdel(self.keys.outbox(), key)
            pipe.zrem(self.keys.outbox_due(), key)
            await pipe.execute()
