"""What reading a window of the deploy history costs follows the window, not the history:
100,000 deploys stored in real Redis, one every 10 minutes (almost two years), and a window of
30 days reads only the chunks that reach back to its edge (counted by Redis's own
command statistics, not timed)."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

import pytest

from bot.adapters.redis.environments import SINCE_CHUNK, RedisEnvironments
from bot.runtime.delivery import Delivery
from bot.testing.seed_history import seed_history

pytestmark = pytest.mark.redis

STORED = 100_000
EVERY = timedelta(minutes=10)
NEWEST = datetime(2026, 11, 27, 12, tzinfo=UTC)


async def lranges(redis) -> int:
    stats = await redis.info("commandstats")
    return int(stats.get("cmdstat_lrange", {}).get("calls", 0))


async def test_a_window_of_100000_stored_deploys_reads_back_only_to_its_edge(redis):
    await seed_history(redis, "production", STORED, NEWEST, EVERY)
    assert await redis.llen("deploybot:deploys:production") == STORED
    history = RedisEnvironments(redis)
    before = await lranges(redis)
    found = await history.since("production", NEWEST - timedelta(days=30), 1_000_000)
    # a deploy every 10 minutes: 144 a day, the one at the edge included: 4321
    assert len(found) == 30 * 144 + 1 and found[0].at == NEWEST and found[-1].at == NEWEST - timedelta(days=30)
    assert found[-1].decided_by == "alice" and not found[-1].ok  # k = 4320: approved (k % 3), failed (k % 10)
    # read in chunks of 1000: the 5th reaches past the edge, and nothing further is read
    assert await lranges(redis) - before == math.ceil((30 * 144 + 1) / SINCE_CHUNK) == 5
    # the metrics of the 30 days before a minute after the newest: 4320 deploys (k = 0..4319),
    # every 10th failed (k = 0, 10, ..., 4310: 432); frequency (4320 - 432) / 30 = 129.6 a day
    delivery = Delivery(history, {}, ["production", "staging"], lambda: NEWEST + timedelta(minutes=1))
    m = await delivery.metrics(30)
    assert (m.deploys, m.failed, m.deploy_frequency) == (4320, 432, 129.6)
    # approvals on every 3rd (k = 0, 3, ..., 4317: 1440), half each: k even is alice
    assert m.approvers == {"alice": 720, "bob": 720} and m.lead_time.median is None  # no commit times here
