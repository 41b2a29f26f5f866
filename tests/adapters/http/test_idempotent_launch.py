"""POST /threads with an Idempotency-Key, on the real app and a real Redis: a retried launch
answers the first thread, even when the tries race; another asker's key is theirs; a key
reused for another message, or no key at all, is refused before anything is stored."""

from __future__ import annotations

import asyncio

import pytest

from tests.helpers import settle

pytestmark = [pytest.mark.redis, pytest.mark.network]


async def ids(api) -> set[str]:
    return {t["id"] for t in (await api.get("/threads", params={"limit": 200})).json()["threads"]}


async def launch(api, message: str, key: str, user: str = "alice"):
    return await api.post("/threads", json={"message": message, "user": user}, headers={"Idempotency-Key": key})


async def test_a_retried_launch_answers_its_first_thread(api):
    first = await launch(api, "list tags", "ci-run-42")
    assert first.status_code == 201, first.text
    again = await launch(api, "list tags", "ci-run-42")
    assert (again.status_code, again.json()["id"]) == (200, first.json()["id"])
    assert await ids(api) == {first.json()["id"]}
    await settle(api, first.json()["id"])

    # tries that race (a client retrying before the first answer came): one thread
    raced = await asyncio.gather(*(launch(api, "list tags", "ci-run-43") for _ in range(6)))
    assert len({r.json()["id"] for r in raced}) == 1 and sorted(r.status_code for r in raced) == [200] * 5 + [201]

    # the same key from someone else is their own thread
    bobs = await launch(api, "list tags", "ci-run-42", user="bob")
    assert bobs.status_code == 201 and bobs.json()["id"] != first.json()["id"]


async def test_a_key_reused_for_another_message_or_no_key_is_refused_storing_nothing(api):
    await launch(api, "list tags", "k-1")
    before = await ids(api)
    reused = await launch(api, "deploy backend v1.2.3 to staging", "k-1")
    assert reused.status_code == 409 and "another message" in reused.json()["detail"]
    for bad in ("", "has space", "x" * 201, "tab\there"):
        r = await api.post("/threads", json={"message": "list tags"}, headers={"Idempotency-Key": bad})
        assert r.status_code == 422 and "Idempotency-Key" in r.json()["detail"], (bad, r.text)
    assert await ids(api) == before
