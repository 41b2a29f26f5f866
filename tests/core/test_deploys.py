"""A deploy's id, the thread it belongs to and its audit trail are pure: they live in the core,
so channels and the console read them without importing the deploy path."""

from __future__ import annotations

from datetime import UTC, datetime

from bot.core import deploys
from bot.core.events import DeployStarted, new_id
from bot.core.thread import Thread
from tests.architecture.test_architecture import modules

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def test_a_deploy_id_is_its_thread_and_step_and_names_its_thread():
    thread_id, step_id = new_id(), new_id()
    made = deploys.deploy_id(thread_id, step_id)
    assert made == f"{thread_id}-{step_id}"  # stored in locks, queues and the history: never changes
    assert deploys.thread_of(made) == thread_id
    assert deploys.deploying(made) == thread_id


def test_an_owner_that_is_no_deploy_id_names_no_thread():
    assert deploys.deploying("manual:alice") is None
    assert deploys.deploying("t1-short") is None


def test_a_deploy_copied_into_a_fork_was_not_started_there():
    started = DeployStarted(step_id="s1", deploy_id=deploys.deploy_id("t1", "s1"), commit="c" * 40, at=NOW)
    assert deploys.started_here(Thread("t1", (started,)), started)
    assert not deploys.started_here(Thread("t2", (started,)), started)


def test_channels_and_the_console_model_import_no_deploy_path():
    for name, imports in modules().items():
        if name.startswith("adapters.channels.") or name == "adapters.http.console.model":
            assert "bot.runtime.deploying" not in imports, name
