"""Access control and settings that decide how the server is exposed."""

from __future__ import annotations

import pytest

from bot.settings import Settings


@pytest.fixture
def settings(settings):
    return settings.model_copy(update={"api_token": "s3cret-token-value"})


async def test_a_token_guards_every_thread_route(api):
    bare = {"Authorization": ""}
    assert (await api.post("/threads", json={"message": "hi", "user": "x"}, headers=bare)).status_code == 401
    wrong = {"Authorization": "Bearer nope"}
    assert (await api.get("/threads", headers=wrong)).status_code == 401
    assert (await api.get("/threads/abc", headers=wrong)).status_code == 401
    assert (await api.get("/threads")).status_code == 200  # the fixture sends the right token
    assert (await api.get("/healthz", headers=bare)).status_code == 200  # health stays open


def test_without_a_token_the_server_binds_to_loopback_only():
    assert Settings(_env_file=None, host="0.0.0.0").bind_host() == "127.0.0.1"
    assert Settings(_env_file=None, host="0.0.0.0", api_token="t").bind_host() == "0.0.0.0"
