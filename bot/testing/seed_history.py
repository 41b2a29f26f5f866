"""A long deploy history, stored fast: records written straight into the history's list with
pipelined LPUSHes (oldest first, as deploys finishing one after another would push them), for
the tests and the benchmark of reading a window of it (History.since, delivery metrics)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime, timedelta

from redis.asyncio import Redis

from bot.adapters.redis.environments import dump_record
from bot.adapters.redis.keys import Keys
from bot.runtime.ports import DeployRecord

BATCH = 5_000


async def seed_history(
    redis: Redis, environment: str, count: int, newest: datetime, every: timedelta,
    commits: Sequence[str] = ("0" * 40,), services: Sequence[str] = ("backend",),
) -> None:
    """`count` deploys to `environment`, one each `every`, the newest at `newest`; every 10th
    failed, every 3rd asked for an approval that alice or bob gave 5 to 40 minutes later."""
    template = json.loads(dump_record(DeployRecord(environment, services[0], "v0", commits[0], True, newest, None,
                                                   "thread", "deploy")))
    key = Keys().history(environment)
    for first in range(count - 1, -1, -BATCH):
        values = []
        for k in range(first, max(first - BATCH, -1), -1):  # oldest first: the newest ends at the head
            at = newest - k * every
            asked = {"approval_asked_at": (at - timedelta(hours=1)).isoformat(),
                     "decided_at": (at - timedelta(hours=1) + timedelta(minutes=5 + k % 36)).isoformat(),
                     "decided_by": ("alice", "bob")[k % 2]} if k % 3 == 0 else {}
            values.append(json.dumps({
                **template, "service": services[k % len(services)], "tag": f"v{k}", "commit": commits[k % len(commits)],
                "ok": k % 10 != 0, "at": at.isoformat(), "started_at": (at - timedelta(seconds=50)).isoformat(),
                "thread_id": f"thread-{k}", "deploy_id": f"deploy-{k}", **asked,
            }))
        await redis.lpush(key, *values)
