"""Bodies that are not JSON text, on every API route that reads JSON, over real HTTP (the app
`serve` serves, on uvicorn, with a real Redis): `NaN` and `Infinity` (not in JSON's grammar,
though Python's parser takes them) and a lone surrogate (`"\\ud800"`, which no encoder can
write back out) are refused with a 422 that says so, and nothing is stored."""

from __future__ import annotations

import json

import pytest

from tests.helpers import settle

pytestmark = [pytest.mark.redis, pytest.mark.network]

# Each route with the fields of a body it takes, each as JSON text.
ROUTES = [
    ("/threads", {"message": '"list tags"'}),
    ("/threads/{id}/responses", {"text": '"why?"'}),
    ("/threads/{id}/cancel", {"reason": '"no longer needed"'}),
    ("/threads/{id}/fork", {"at": "1"}),
    ("/deploys/rollback", {"service": '"backend"', "environment": '"staging"'}),
    ("/deploys/promote", {"service": '"backend"', "environment": '"production"'}),
]
NOT_JSON = ["NaN", "Infinity", "-Infinity", "[1, NaN]", '"\\ud800"', '"ok \\udfff"', '{"\\udbff": 1}']


def body(fields: dict[str, str], **more: str) -> str:
    return "{" + ", ".join(f"{json.dumps(k)}: {v}" for k, v in {**fields, **more}.items()) + "}"


def variants(fields: dict[str, str], value: str) -> list[str]:
    """`value` in place of the body's first field, and beside its fields (ignored, but read)."""
    return [body(fields, **{next(iter(fields)): value}), body(fields, extra=value)]


@pytest.fixture
async def thread_id(api) -> str:
    launched = await api.post("/threads", json={"message": "list tags"})
    assert launched.status_code == 201, launched.text
    return (await settle(api, launched.json()["id"]))["id"]


async def post(api, path: str, thread_id: str, text: str):
    return await api.post(path.format(id=thread_id), content=text, headers={"Content-Type": "application/json"})


@pytest.mark.parametrize("value", NOT_JSON)
@pytest.mark.parametrize(("path", "fields"), ROUTES)
async def test_what_is_not_json_text_is_a_422_that_says_so_and_stores_nothing(app, api, thread_id, path, fields, value):
    before = (await app.service.get(thread_id)).version, await app.store.recent(100)
    for text in variants(fields, value):
        answer = await post(api, path, thread_id, text)
        assert answer.status_code == 422, (text, answer.text)
        assert "not JSON" in answer.json()["detail"], answer.text
    assert ((await app.service.get(thread_id)).version, await app.store.recent(100)) == before


@pytest.mark.parametrize(("path", "fields"), ROUTES)
async def test_json_text_in_the_same_places_is_read(app, api, thread_id, path, fields):
    # Past the check: answered as the route answers it (started, or refused for what it
    # asks), never as "not JSON"; a surrogate pair is one character (U+1F680).
    for text in [body(fields, extra=value) for value in ("1.5", '"\\ud83d\\ude80"', "null")]:
        answer = await post(api, path, thread_id, text)
        assert answer.status_code < 500 and "not JSON" not in answer.text, answer.text
