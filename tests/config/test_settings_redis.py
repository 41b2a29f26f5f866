"""Where threads live: one server (REDIS_URL or the embedded one), Sentinel, or Cluster.
Half a configuration, or two at once, is a startup error naming the variables; the
passwords are secrets."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from bot.adapters.redis.connect import SentinelRedis
from bot.config.settings import STORE_SETTINGS, BridgeSettings, Settings, config_problems
from bot.core.redis_target import RedisTarget
from bot.wiring import app as app_module
from tests.config.settings_helpers import clean_environment  # noqa: F401 (clean_environment: autouse)


def refused(**values: object) -> list[str]:
    with pytest.raises(ValidationError) as e:
        Settings(_env_file=None, **values)
    return config_problems(e.value)


SENTINEL = {"redis_sentinels": "10.0.0.1:26379, sentinel-2:26380,[::1]:26381", "redis_sentinel_master": "main"}


def test_one_server_is_the_default_and_redis_url_names_it():
    assert Settings(_env_file=None).redis == RedisTarget("single", url=None)
    target = Settings(_env_file=None, redis_url="redis://cache:6379/0", redis_wait_ms=0).redis
    assert (target.mode, target.url, target.waits) == ("single", "redis://cache:6379/0", False)


def test_sentinel_from_the_environment(monkeypatch):
    monkeypatch.setenv("REDIS_SENTINELS", SENTINEL["redis_sentinels"])
    monkeypatch.setenv("REDIS_SENTINEL_MASTER", "main")
    monkeypatch.setenv("REDIS_PASSWORD", "s-redis-pw")
    monkeypatch.setenv("REDIS_SENTINEL_PASSWORD", "s-sentinel-pw")
    settings = Settings(_env_file=None)
    target = settings.redis
    assert target.mode == "sentinel" and target.master == "main" and target.url is None
    assert target.sentinels == (("10.0.0.1", 26379), ("sentinel-2", 26380), ("::1", 26381))
    assert (target.password, target.sentinel_password, target.wait_ms) == ("s-redis-pw", "s-sentinel-pw", 500)
    assert target.waits
    assert {"s-redis-pw", "s-sentinel-pw"} <= set(settings.secrets())
    assert "s-redis-pw" not in repr(settings) + repr(target) and "s-sentinel-pw" not in repr(target)


def test_cluster_from_the_environment(monkeypatch):
    monkeypatch.setenv("REDIS_CLUSTER", "true")
    monkeypatch.setenv("REDIS_URL", "redis://node-1:7000/0")
    target = Settings(_env_file=None).redis
    assert (target.mode, target.url) == ("cluster", "redis://node-1:7000/0")
    assert not target.waits  # WAIT must follow the write on its own connection: see connect.py


@pytest.mark.parametrize(("values", "says"), [
    ({"redis_sentinels": "h:26379"}, "Redis Sentinel needs REDIS_SENTINEL_MASTER"),
    ({"redis_sentinel_master": "main"}, "Redis Sentinel needs REDIS_SENTINELS"),
    ({**SENTINEL, "redis_url": "redis://h:6379/0"}, "REDIS_SENTINELS replaces REDIS_URL: set one of them"),
    ({**SENTINEL, "redis_cluster": True},
     "REDIS_CLUSTER=true and REDIS_SENTINELS are different setups: set one of them"),
    ({"redis_sentinels": "h", "redis_sentinel_master": "m"}, "REDIS_SENTINELS: 'h' is not host:port"),
    ({"redis_sentinels": "h:99999", "redis_sentinel_master": "m"}, "REDIS_SENTINELS: 'h:99999' is not host:port"),
    ({"redis_sentinels": " , ", "redis_sentinel_master": "m"}, "REDIS_SENTINELS names no host:port"),
    ({"redis_sentinel_password": "pw"}, "REDIS_SENTINEL_PASSWORD is set but REDIS_SENTINELS is not"),
    ({"redis_cluster": True}, "REDIS_CLUSTER=true needs REDIS_URL (any node of the cluster)"),
    ({"redis_password": "pw"},
     "REDIS_PASSWORD needs REDIS_URL or REDIS_SENTINELS (the embedded server has none)"),
])
def test_half_or_two_redis_setups_are_refused_naming_the_variables(values, says):
    assert refused(**values) == [says]


def test_a_negative_wait_is_refused():
    assert refused(redis_wait_ms=-1)[0].startswith("REDIS_WAIT_MS:")


def test_sentinel_never_starts_the_embedded_server(monkeypatch, tmp_path):
    def embedded(*_: object) -> str:
        raise AssertionError("the embedded server was started")

    monkeypatch.setattr(app_module.embedded_redis, "ensure_running", embedded)
    settings = Settings(_env_file=None, data_dir=tmp_path, **SENTINEL)
    client = app_module.redis_client(settings)  # connects lazily: nothing is reached yet
    assert isinstance(client, SentinelRedis)
    cluster = Settings(_env_file=None, redis_cluster=True, redis_url="redis://127.0.0.1:1/0")
    assert type(app_module.redis_client(cluster)).__name__ == "RedisCluster"
    assert not (tmp_path / "redis.url").exists()


def test_the_cli_names_the_store_it_looked_in_without_a_password(tmp_path):
    url = Settings(_env_file=None, redis_url="redis://:hunter2@cache:6380/3").store_named()
    assert url == "the store at redis://cache:6380/3 (REDIS_URL)"
    sentinel = Settings(_env_file=None, redis_password="hunter2", **SENTINEL).store_named()
    assert sentinel == "the store at main behind 10.0.0.1:26379,sentinel-2:26380,::1:26381 (REDIS_SENTINELS)"
    embedded = Settings(_env_file=None, data_dir=tmp_path / "d").store_named()
    assert embedded.startswith(f"the embedded store under {tmp_path / 'd'}: no REDIS_URL is set")


def test_the_agents_bridge_refuses_every_setting_that_reaches_the_store():
    # Derived from Settings, so a Redis setting added later is refused too.
    assert {name.upper() for name in Settings.model_fields if "redis" in name} | {"DATA_DIR"} == set(STORE_SETTINGS)
    agent = {"DEPLOYBOT_TOKEN": "dbt_x", "DEPLOYBOT_URL": "http://127.0.0.1:8000"}
    assert BridgeSettings.read(agent).problem() is None
    assert BridgeSettings.read({**agent, "REDIS_URL": ""}).problem() is None  # empty: unset
    for name in STORE_SETTINGS:
        said = BridgeSettings.read({**agent, name.lower(): "x"}).problem()
        assert said is not None and said.startswith(f"{name} is set: an agent's process must not hold"), name
    assert "DEPLOYBOT_URL is not set" in BridgeSettings.read({"DEPLOYBOT_TOKEN": "t"}).problem()
    for url in ("127.0.0.1:8000", "ftp://h", "http://h/?x=1", "http://"):
        assert BridgeSettings.read({**agent, "DEPLOYBOT_URL": url}).problem().startswith(f"DEPLOYBOT_URL={url} ")
