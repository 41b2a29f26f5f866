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
    failed, every 3rd asked for an approval that alice or bob gave 5 to 40 minutes later.
    (Service and commit names go into the JSON as they are: plain names and hex only.)"""
    varying = ("service", "tag", "commit", "ok", "at", "started_at", "thread_id", "deploy_id",
               "approval_asked_at", "decided_at", "decided_by")
    fixed = {k: v for k, v in json.loads(dump_record(DeployRecord(
        environment, services[0], "v0", commits[0], True, newest, None, "thread", "deploy"))).items()
        if k not in varying}
    head = json.dumps(fixed)[:-1]  # the same for every record: only what varies is formatted
    key = Keys().history(environment)
    for first in range(count - 1, -1, -BATCH):
        values = []
        for k in range(first, max(first - BATCH, -1), -1):  # oldest first: the newest ends at the head
            at = newest - k * every
            asked, decided = at - timedelta(hours=1), at - timedelta(minutes=55 - k % 36)
            approval = (f', "approval_asked_at": "{asked.isoformat()}", "decided_at": "{decided.isoformat()}", '
                        f'"decided_by": "{("alice", "bob")[k % 2]}"'
                        if k % 3 == 0 else ', "approval_asked_at": null, "decided_at": null, "decided_by": ""')
            values.append(
                f'{head}, "service": "{services[k % len(services)]}", "tag": "v{k}", '
                f'"commit": "{commits[k % len(commits)]}", "ok": {"false" if k % 10 == 0 else "true"}, '
                f'"at": "{at.isoformat()}", "started_at": "{(at - timedelta(seconds=50)).isoformat()}", '
                f'"thread_id": "thread-{k}", "deploy_id": "deploy-{k}"{approval}}}'
            )
        await redis.lpush(key, *values)
