"""Lua scripts sent by hash: one command, one round trip."""

from __future__ import annotations

import hashlib
from typing import Any

from redis.asyncio import Redis
from redis.exceptions import NoScriptError

_SHAS: dict[str, str] = {}


def sha(source: str) -> str:
    if source not in _SHAS:
        _SHAS[source] = hashlib.sha1(source.encode()).hexdigest()
    return _SHAS[source]


async def run(redis: Redis, source: str, keys: list[str], *args: Any) -> Any:
    """EVALSHA is sent directly (redis-py's Script objects add a SCRIPT EXISTS round trip
    when pipelined, and EVAL resends the source every time); a server that lost its script
    cache (restart, failover) answers NOSCRIPT once and gets the script loaded again."""
    digest = sha(source)
    try:
        return await redis.evalsha(digest, len(keys), *keys, *args)
    except NoScriptError:
        await redis.script_load(source)
        return await redis.evalsha(digest, len(keys), *keys, *args)
