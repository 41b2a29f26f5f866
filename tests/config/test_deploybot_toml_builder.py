"""The tests' deploybot.toml builder (tests/deploybot_toml.py) writes what the real settings
read: the same people, groups, environments and other tables as the text it replaced."""

from __future__ import annotations

import tomllib

from bot.config.settings_file import load
from tests.deploybot_toml import Toml

BASE = (
    Toml().person("alice", slack="UALICE", email="alice@example.com").person("bob", email=["b@x.org", "r@x.org"])
    .group("sre", "alice", "bob")
    .environment("production", protected=True, approvers=["group:sre"], approver_must_differ=True)
    .unprotected("staging")
)


def test_what_is_built_is_what_the_settings_read(tmp_path):
    config = load(BASE.entry("freezes", environments=["production"], **{"from": "Fri 16:00"}, to="Mon 08:00",
                             timezone="Europe/Berlin", reason="weekend").write(tmp_path))
    assert {name: entry.model_dump(exclude_defaults=True) for name, entry in config.people.items()} == {
        "alice": {"slack": ("UALICE",), "email": ("alice@example.com",)}, "bob": {"email": ("b@x.org", "r@x.org")},
    }
    assert config.groups == {"sre": ("alice", "bob")}
    assert config.environments["production"].approvers == ("group:sre",)
    assert config.environments["production"].protected and not config.environments["staging"].protected
    assert [f.reason for f in config.freezes] == ["weekend"]


def test_each_step_leaves_what_it_was_built_on_as_it_was():
    more = BASE.environment("production", required_approvals=2).person("carol", slack="UCAROL")
    assert "required_approvals" not in tomllib.loads(str(BASE))["environments"]["production"]
    assert "carol" not in tomllib.loads(str(BASE))["people"]
    assert tomllib.loads(str(more))["environments"]["production"] == {
        "protected": True, "approvers": ["group:sre"], "approver_must_differ": True, "required_approvals": 2,
    }
