"""Access control and settings that decide how the server is exposed."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from bot.core.events import DoneForNow, UserMessage
from bot.core.thread import Origin
from bot.runtime.ports import DeployRecord
from tests.runtime.ports.test_status_index import waiting_events

pytestmark = [pytest.mark.redis, pytest.mark.network]


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


# --- paging ------------------------------------------------------------------------------------


async def walk(api, path: str, key: str, **params) -> tuple[list[str], int]:
    """Every page of `path`: the ids listed and the number of pages. Asserts each page but
    the last has next_cursor, and the last has none."""
    ids, pages, cursor = [], 0, None
    while True:
        query = {**params, **({"cursor": cursor} if cursor else {})}
        answer = (await api.get(path, params=query)).json()
        pages += 1
        ids += [item["id" if key == "threads" else "deploy_id"] for item in answer[key]]
        cursor = answer.get("next_cursor")
        if cursor is None:
            assert "next_cursor" not in answer
            return ids, pages
        assert len(answer[key]) == params["limit"]


async def test_threads_page_with_a_cursor_without_duplicates_or_gaps(api, app):
    done = [(await app.store.create(Origin(), [UserMessage(text=f"t{n}", user="a"), DoneForNow(message="ok")])).id
            for n in range(12)]
    waiting = [(await app.store.create(Origin(), waiting_events())).id for _ in range(3)]
    ids, pages = await walk(api, "/threads", "threads", limit=5)
    assert ids == (done + waiting)[::-1] and pages == 3
    ids, pages = await walk(api, "/threads", "threads", limit=5, status="done")
    assert ids == done[::-1] and pages == 3
    ids, pages = await walk(api, "/threads", "threads", limit=5, status="waiting_for_approval")
    assert ids == waiting[::-1] and pages == 1
    bad = await api.get("/threads", params={"cursor": "nonsense!"})
    assert bad.status_code == 422 and "cursor" in bad.json()["detail"]


async def test_deploys_page_with_a_cursor(api, app):
    at = datetime(2026, 11, 5, tzinfo=UTC)
    for n in range(11):
        await app.environments.record(DeployRecord("production", "backend", f"v{n}", "c" * 40, True,
                                                   at + timedelta(minutes=n), "bob", "t", f"d{n}"))
    ids, pages = await walk(api, "/deploys", "deploys", limit=4, environment="production")
    assert ids == [f"d{n}" for n in range(10, -1, -1)] and pages == 3
    bad = await api.get("/deploys", params={"environment": "production", "cursor": "nonsense!"})
    assert bad.status_code == 422
