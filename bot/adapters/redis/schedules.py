"""Schedule marks in Redis: per schedule, the last occurrence that started a thread.

One key per schedule (keys.schedule), holding Unix seconds. Created with SET NX the first
time any process sees the schedule (so it counts from then), and only ever moved forward,
by a script, so two workers advancing it at once leave the later occurrence.
"""

from __future__ import annotations

from redis.asyncio import Redis

from bot.adapters.redis import scripts
from bot.adapters.redis.keys import Keys

# KEYS: the mark. ARGV: now. Returns the mark, set to now if there was none.
_FIRST_SEEN = """
redis.call('SET', KEYS[1], ARGV[1], 'NX')
return redis.call('GET', KEYS[1])
"""

# KEYS: the mark. ARGV: the occurrence. Moves the mark forward only.
_ADVANCE = """
local current = tonumber(redis.call('GET', KEYS[1]) or '0')
if current < tonumber(ARGV[1]) then
  redis.call('SET', KEYS[1], ARGV[1])
  return 1
end
return 0
"""


class RedisScheduleMarks:
    def __init__(self, redis: Redis, keys: Keys | None = None) -> None:
        self.redis = redis
        self.keys = keys or Keys()

    async def first_seen(self, schedule_id: str, now: int) -> int:
        return int(await scripts.run(self.redis, _FIRST_SEEN, [self.keys.schedule(schedule_id)], now))

    async def advance(self, schedule_id: str, to: int) -> None:
        await scripts.run(self.redis, _ADVANCE, [self.keys.schedule(schedule_id)], to)
