"""The Lua scripts of the thread store (threads.py): a thread's own keys (create, append,
lease, claim, release, expand, compact, remove), the status index, and, on one server, the
scripts composed of them that do a create, a run's finish or a release in one EVALSHA.
Every reply is described above its script; threads.py reads them."""

from __future__ import annotations

from bot.core.thread import FINISHED, STATUSES

# KEYS: events, lease, packed. ARGV: expected version, the run appending ('' for people, who need no
# lease), then the events to append. Every thread is created with its first event, so an
# empty list means an unknown thread. Returns the new version; -1 for an unknown thread;
# -2 - actual_version on a lost race; 0 when another run holds the thread's lease (a run
# whose lease lapsed must not decide anything any more); 'packed' for a compacted thread
# (expand it, then append).
APPEND = """
local n = redis.call('LLEN', KEYS[1])
if n == 0 then
  if redis.call('EXISTS', KEYS[3]) == 1 then return 'packed' end
  return -1
end
if n ~= tonumber(ARGV[1]) then return -2 - n end
if ARGV[2] ~= '' then
  local holder = redis.call('GET', KEYS[2])
  if holder and holder ~= ARGV[2] then return 0 end
end
return redis.call('RPUSH', KEYS[1], unpack(ARGV, 3))
"""


# KEYS: meta, events, packed. ARGV: created-at, origin JSON, then the first events.
# Returns 1, or 0 when the id is taken (nothing is written then).
CREATE = """
if redis.call('EXISTS', KEYS[3]) == 1 then return 0 end
if redis.call('HSETNX', KEYS[1], 'created', ARGV[1]) == 0 then return 0 end
redis.call('HSET', KEYS[1], 'origin', ARGV[2])
redis.call('RPUSH', KEYS[2], unpack(ARGV, 3))
return 1
"""


# KEYS: lease. ARGV: owner, ttl in ms. Take a free lease or extend our own.
LEASE = """
local holder = redis.call('GET', KEYS[1])
if holder and holder ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return 1
"""
# KEYS: lease, meta, events, packed. ARGV: owner, ttl in ms. The lease and the thread in one
# round trip: {1, origin, events...}, {2, packed} for a compacted thread, {0} when another
# runner holds it, {-1} for an unknown thread.
CLAIM = """
local holder = redis.call('GET', KEYS[1])
if holder and holder ~= ARGV[1] then return {0} end
local origin = redis.call('HGET', KEYS[2], 'origin')
if not origin then
  local packed = redis.call('GET', KEYS[4])
  if not packed then return {-1} end
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  return {2, packed}
end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
local out = redis.call('LRANGE', KEYS[3], 0, -1)
table.insert(out, 1, origin)
table.insert(out, 1, 1)
return out
"""
# KEYS: lease, events. ARGV: owner, version. Let go, and return what was appended after
# `version` meanwhile (by a writer that could not run the thread while we held it).
RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('DEL', KEYS[1]) end
return redis.call('LRANGE', KEYS[2], tonumber(ARGV[2]), -1)
"""


# KEYS: packed, meta, events. ARGV: the packed value read, created-at, origin, the events.
# A compacted thread back into its list (before an append), unless it changed since read.
EXPAND = """
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('HSET', KEYS[2], 'created', ARGV[2], 'origin', ARGV[3])
redis.call('RPUSH', KEYS[3], unpack(ARGV, 4))
redis.call('DEL', KEYS[1])
return 1
"""

# KEYS: events, meta, lease, packed. ARGV: version, the packed value. Compact a thread still
# at `version` that no run holds.
COMPACT = """
if redis.call('EXISTS', KEYS[3]) == 1 then return 0 end
if redis.call('LLEN', KEYS[1]) ~= tonumber(ARGV[1]) then return 0 end
redis.call('SET', KEYS[4], ARGV[2])
redis.call('DEL', KEYS[1], KEYS[2])
return 1
"""

# KEYS: events, meta, lease, packed. ARGV: the version the index has. Delete a thread that
# is still at that version (or compacted: compaction checked it was finished) and not held.
REMOVE = """
if redis.call('EXISTS', KEYS[3]) == 1 then return 'kept' end
local n = redis.call('LLEN', KEYS[1])
if n == 0 then
  if redis.call('DEL', KEYS[4], KEYS[2]) > 0 then return 'removed' end
  return 'gone'
end
if n ~= tonumber(ARGV[1]) then return 'kept' end
redis.call('DEL', KEYS[1], KEYS[2])
return 'removed'
"""

# The status index, one slot. KEYS: the `indexed` hash, the to-compact set, then one sorted
# set per status. ARGV: thread id, version, status, score (now), whether the status is a
# finished one ('1'/'0'), then the statuses of the sorted sets in KEYS' order, as one
# space-separated argument (one to encode, not one per status).
# Returns 1, or 0 when the index already has a newer version.
INDEX = """
local byname = {}
local i = 3
for name in string.gmatch(ARGV[6], '%S+') do byname[name] = KEYS[i]; i = i + 1 end
local old = redis.call('HGET', KEYS[1], ARGV[1])
local was_finished = false
if old then
  local sep = string.find(old, ' ', 1, true)
  if tonumber(string.sub(old, 1, sep - 1)) > tonumber(ARGV[2]) then return 0 end
  local status = string.sub(old, sep + 1)
  if status ~= ARGV[3] and byname[status] then redis.call('ZREM', byname[status], ARGV[1]) end
  was_finished = status == 'done' or status == 'failed' or status == 'cancelled'
end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2] .. ' ' .. ARGV[3])
redis.call('ZADD', byname[ARGV[3]], 'NX', ARGV[4], ARGV[1])
if ARGV[5] == '1' then
  if not was_finished then redis.call('ZADD', KEYS[2], 'NX', ARGV[4], ARGV[1]) end
else
  redis.call('ZREM', KEYS[2], ARGV[1])
end
return 1
"""
STATUS_NAMES = " ".join(STATUSES)  # INDEX's last argument


def function(name: str, source: str) -> str:
    """A script as a local Lua function of its own KEYS and ARGV (they shadow the script's),
    so scripts compose into one."""
    return f"local function {name}(KEYS, ARGV)\n{source}\nend\n"


# On one server (not a cluster) a thread's keys, the recency index, the status index and the
# work stream are all in reach of one script: creating and releasing are then one EVALSHA
# each instead of a pipeline of three or four commands. On a cluster they are
# other slots, so the pipeline stays.
# KEYS: meta, events, packed, recent, the work stream, then INDEX's keys. ARGV: INDEX's
# six, whether to push the thread on the stream ('1'/'0'), then CREATE's. Returns CREATE's.
CREATE_HERE = function("create", CREATE) + function("index", INDEX) + """
local created = create({KEYS[1], KEYS[2], KEYS[3]}, {unpack(ARGV, 8)})
redis.call('ZADD', KEYS[4], 'NX', ARGV[4], ARGV[1])
index({unpack(KEYS, 6)}, {unpack(ARGV, 1, 6)})
if ARGV[7] == '1' then redis.call('XADD', KEYS[5], '*', 'thread', ARGV[1]) end
return created
"""
# KEYS: events, lease, packed, recent, then INDEX's keys. ARGV: INDEX's six (for the thread
# with the events), then APPEND's (the version expected, the owner, the events). A run's
# last events and its release: appended as APPEND appends them and, only if they were,
# the lease let go and the indexes updated. Returns APPEND's reply.
FINISH_HERE = function("append", APPEND) + function("index", INDEX) + """
local version = append({KEYS[1], KEYS[2], KEYS[3]}, {unpack(ARGV, 7)})
if type(version) ~= 'number' or version <= 0 then return version end
if redis.call('GET', KEYS[2]) == ARGV[8] then redis.call('DEL', KEYS[2]) end
redis.call('ZADD', KEYS[4], 'XX', ARGV[4], ARGV[1])
index({unpack(KEYS, 5)}, {unpack(ARGV, 1, 6)})
return version
"""
# KEYS: lease, events, recent, then INDEX's keys. ARGV: INDEX's six, then the owner.
# Returns RELEASE's.
RELEASE_HERE = function("release", RELEASE) + function("index", INDEX) + """
local appended = release({KEYS[1], KEYS[2]}, {ARGV[7], ARGV[2]})
redis.call('ZADD', KEYS[3], 'XX', ARGV[4], ARGV[1])
index({unpack(KEYS, 4)}, {unpack(ARGV, 1, 6)})
return appended
"""


def index_args(thread_id: str, version: int, status: str, now: float) -> list[str | int | float]:
    """INDEX's ARGV for a thread at `version` in `status` (also bench/growth.py's, which seeds
    the index directly)."""
    return [thread_id, version, status, now, "1" if status in FINISHED else "0", STATUS_NAMES]


# KEYS and ARGV[1] as INDEX: forget the thread.
UNINDEX = """
for i = 2, #KEYS do redis.call('ZREM', KEYS[i], ARGV[1]) end
return redis.call('HDEL', KEYS[1], ARGV[1])
"""
