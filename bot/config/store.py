"""Where threads live (REDIS_URL, Sentinels, a cluster, or the embedded server under DATA_DIR),
read from the flat variables (`s`: the Settings), and how it is named for people."""

from __future__ import annotations

from urllib.parse import urlsplit

from bot.config.fields import Fields
from bot.config.reading import ConfigError, require
from bot.core import wording
from bot.core.redis_target import RedisTarget


def read_redis(s: Fields) -> RedisTarget:
    password = s.redis_password.get_secret_value() if s.redis_password else None
    sentinel_password = s.redis_sentinel_password.get_secret_value() if s.redis_sentinel_password else None
    if s.redis_sentinels or s.redis_sentinel_master:
        require("Redis Sentinel", (
            ("REDIS_SENTINELS", s.redis_sentinels), ("REDIS_SENTINEL_MASTER", s.redis_sentinel_master),
        ))
        if s.redis_url:
            raise ConfigError("REDIS_SENTINELS replaces REDIS_URL: set one of them")
        if s.redis_cluster:
            raise ConfigError("REDIS_CLUSTER=true and REDIS_SENTINELS are different setups: set one of them")
        assert s.redis_sentinels and s.redis_sentinel_master
        return RedisTarget(
            "sentinel", sentinels=_addresses("REDIS_SENTINELS", s.redis_sentinels),
            master=s.redis_sentinel_master.strip(), password=password,
            sentinel_password=sentinel_password, wait_ms=s.redis_wait_ms,
        )
    if sentinel_password:
        raise ConfigError("REDIS_SENTINEL_PASSWORD is set but REDIS_SENTINELS is not")
    if s.redis_cluster and not s.redis_url:
        raise ConfigError("REDIS_CLUSTER=true needs REDIS_URL (any node of the cluster)")
    if password and not s.redis_url:
        raise ConfigError("REDIS_PASSWORD needs REDIS_URL or REDIS_SENTINELS (the embedded server has none)")
    return RedisTarget(
        "cluster" if s.redis_cluster else "single", url=s.redis_url, password=password,
        wait_ms=s.redis_wait_ms,
    )


def store_named(s: Fields) -> str:
    """Where the store is, for people (the CLI says where it looked): never a password."""
    target = read_redis(s)
    if target.mode == "sentinel":
        sentinels = ",".join(f"{host}:{port}" for host, port in target.sentinels)
        return wording.store_at(f"{target.master} behind {sentinels}", "REDIS_SENTINELS")
    if target.url is None:
        return wording.store_embedded(str(s.data_dir.resolve()))
    parts = urlsplit(target.url)
    address = f"{parts.scheme}://{parts.hostname}{f':{parts.port}' if parts.port else ''}{parts.path}"
    return wording.store_at(address, "REDIS_URL")


def _addresses(name: str, value: str) -> tuple[tuple[str, int], ...]:
    """host:port,host:port ([::1]:26379 for IPv6), in the order written."""
    found = []
    for entry in (e.strip() for e in value.split(",")):
        if not entry:
            continue
        host, _, port = entry.rpartition(":")
        host = host.removeprefix("[").removesuffix("]")
        if not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise ConfigError(f"{name}: {entry!r} is not host:port")
        found.append((host, int(port)))
    if not found:
        raise ConfigError(f"{name} names no host:port")
    return tuple(found)

