"""POST /threads without the framework (bot/adapters/http/api/fast_launch.py) answers exactly as
the framework's route does: the same requests, sent to the app `serve` serves with and
without the fast path, on a real Redis, get the same status and the same words; and the
plain case is the fast path's own (the framework is not entered)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from redis.exceptions import ConnectionError as RedisConnectionError

from bot.adapters.http.api import fast_launch
from bot.adapters.http.shared import MAX_TEXT_CHARS
from bot.runtime.service import Forbidden
from bot.wiring.app import App, http_app

pytestmark = [pytest.mark.redis, pytest.mark.network]

TOKEN = "shared-token-fast-launch"
PEOPLE = """
[people.alice]
email = "alice@example.com"

[environments.production]
protected = true
approvers = ["alice"]
"""
JSON = {"Content-Type": "application/json"}


@pytest.fixture
def settings(settings, tmp_path: Path):
    config = tmp_path / "deploybot.toml"
    config.write_text(PEOPLE)
    return settings.model_copy(update={"deploybot_config": config, "api_token": TOKEN, "data_dir": tmp_path / "d"})


@pytest.fixture
async def clients(app: App) -> AsyncIterator[tuple[httpx.AsyncClient, httpx.AsyncClient]]:
    """(with the fast path, through the framework only), both the app `serve` serves."""
    fast = httpx.AsyncClient(transport=httpx.ASGITransport(app=http_app(app)), base_url="http://127.0.0.1")
    framework = httpx.AsyncClient(transport=httpx.ASGITransport(app=http_app(app, fast_launch=False)),
                                  base_url="http://127.0.0.1")
    async with fast, framework:
        yield fast, framework


@pytest.fixture
async def alice(app: App) -> str:
    _, token = await app.credentials.create("alice", "laptop")
    return token


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


async def both(clients, content: bytes | str, headers: dict[str, str]) -> tuple[httpx.Response, httpx.Response]:
    fast, framework = clients
    data = content.encode() if isinstance(content, str) else content
    return (await fast.post("/threads", content=data, headers=headers),
            await framework.post("/threads", content=data, headers=headers))


# JSON's grammar has no NaN or Infinity, and its text no lone surrogate (a \ud800 without its pair).
NOT_JSON = [
    '{"message": "\\ud800"}', '{"message": "list tags \\udc00"}', '{"message": "list tags", "user": "\\udbff"}',
    '{"message": NaN}', '{"message": "list tags", "extra": NaN}', '{"message": "list tags", "n": [Infinity]}',
    '{"message": "list tags", "n": -Infinity}', '{"message": "list tags", "\\ud800": 1}',
]
REFUSED = [
    ('{"message": "list tags"', JSON),  # not JSON
    ('{"message": ""}', JSON),
    ('{"message": "   "}', JSON),  # only blanks: the service's refusal
    ('{"message": "%s"}' % ("x" * (MAX_TEXT_CHARS + 1)), JSON),
    ('{"message": 7}', JSON),
    ('{"message": "list tags", "user": ""}', JSON),
    ('{"message": "list tags", "user": "alice"}', JSON),  # the shared token may not name a person
    ('{"message": "lock production: release freeze"}', JSON),  # nor say what takes a person's powers
    ('["list tags"]', JSON),
    ("", JSON),
    ("message=list+tags", {"Content-Type": "application/x-www-form-urlencoded"}),
    *[(body, JSON) for body in NOT_JSON],
]


@pytest.mark.parametrize(("body", "headers"), REFUSED)
async def test_what_is_refused_is_refused_in_the_routes_own_words(clients, body, headers):
    fast, framework = await both(clients, body, {**headers, **bearer(TOKEN)})
    assert fast.status_code >= 400, fast.text
    assert (fast.status_code, fast.json()) == (framework.status_code, framework.json())


@pytest.mark.parametrize("body", NOT_JSON)
async def test_what_is_not_json_text_is_a_422_that_says_so_and_starts_nothing(clients, app, body):
    fast, framework = await both(clients, body, {**JSON, **bearer(TOKEN)})
    assert (fast.status_code, framework.status_code) == (422, 422), (fast.text, framework.text)
    assert fast.json() == framework.json()
    assert "not JSON" in fast.json()["detail"]
    assert await app.store.recent(10) == [] and await app.queue.backlog() == 0


async def test_a_surrogate_pair_is_text_and_starts_a_thread(clients, app):
    fast, framework = await both(clients, '{"message": "list tags \\ud83d\\ude80"}', {**JSON, **bearer(TOKEN)})
    assert (fast.status_code, framework.status_code) == (201, 201), (fast.text, framework.text)
    stored = [await app.service.get(r.json()["id"]) for r in (fast, framework)]
    assert [t.events[0].text for t in stored] == ["list tags \U0001f680"] * 2


async def test_without_a_token_both_are_refused_before_the_body(clients):
    fast, framework = await both(clients, '{"message": "list tags"}', JSON)
    assert fast.status_code == 401
    assert (fast.status_code, fast.json(), fast.headers.get("www-authenticate")) == (
        framework.status_code, framework.json(), framework.headers.get("www-authenticate"))


async def test_a_person_naming_someone_else_is_refused_alike(clients, alice):
    fast, framework = await both(clients, '{"message": "list tags", "user": "bob"}', {**JSON, **bearer(alice)})
    assert fast.status_code == 403
    assert (fast.status_code, fast.json()) == (framework.status_code, framework.json())


@pytest.mark.parametrize("fault", [RedisConnectionError("connection refused"), Forbidden("over your agent's limit")])
async def test_what_the_launch_itself_refuses_is_answered_alike(clients, app, monkeypatch, fault):
    async def failing(*args, **kwargs):
        raise fault

    monkeypatch.setattr(app.service, "launch", failing)
    fast, framework = await both(clients, '{"message": "list tags"}', {**JSON, **bearer(TOKEN)})
    assert fast.status_code in (503, 403), fast.text
    assert (fast.status_code, fast.json(), fast.headers.get("retry-after")) == (
        framework.status_code, framework.json(), framework.headers.get("retry-after"))


LAUNCHED = [
    ('{"message": "list tags"}', JSON, "api"),
    ('{"message": "list tags", "user": "ci-pipeline", "extra": 1}', JSON, "ci-pipeline"),
    ('{"message": "list tags", "user": null}', {"Content-Type": "application/json; charset=UTF-8"}, "api"),
    ('{"message": "list tags"}', {"Content-Type": "application/json; charset=latin-1"}, "api"),  # framework's
    ('{"message": "list tags"}', {"Content-Type": "application/vnd.api+json"}, "api"),  # framework's
]


@pytest.mark.parametrize(("body", "headers", "user"), LAUNCHED)
async def test_what_starts_a_thread_starts_the_same_thread(clients, app, body, headers, user):
    fast, framework = await both(clients, body, {**headers, **bearer(TOKEN)})
    assert (fast.status_code, framework.status_code) == (201, 201), (fast.text, framework.text)
    assert fast.json().keys() == framework.json().keys() == {"id"}
    stored = [await app.service.get(r.json()["id"]) for r in (fast, framework)]
    said = [(t.events[0].text, t.events[0].user, t.events[0].person, t.events[0].via, t.origin.channel)
            for t in stored]
    assert said[0] == said[1]
    assert said[0][:3] + said[0][4:] == ("list tags", user, None, "api")
    assert await app.queue.backlog() == 2  # both handed to a worker with their creation


async def test_a_person_starts_a_thread_as_themselves(clients, app, alice):
    fast, framework = await both(clients, '{"message": "list tags"}', {**JSON, **bearer(alice)})
    stored = [await app.service.get(r.json()["id"]) for r in (fast, framework)]
    assert [(t.events[0].person, t.events[0].via) for t in stored] == [("alice", "token")] * 2


async def test_the_plain_case_never_enters_the_framework_and_the_rest_always_does(app, monkeypatch):
    answered: list[bool] = []
    real = fast_launch.FastLaunch._answer

    async def counting(self, scope, body):
        response = await real(self, scope, body)
        answered.append(response is not None)
        return response

    monkeypatch.setattr(fast_launch.FastLaunch, "_answer", counting)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=http_app(app)), base_url="http://127.0.0.1") as c:
        ok = await c.post("/threads", json={"message": "list tags"}, headers=bearer(TOKEN))
        bad = await c.post("/threads", json={"message": ""}, headers=bearer(TOKEN))
    assert (ok.status_code, bad.status_code) == (201, 422)
    assert answered == [True, False]


async def test_a_body_in_pieces_is_read_to_its_end(clients, app):
    async def pieces() -> AsyncIterator[bytes]:
        for piece in (b'{"mess', b'age": "list ', b'tags"}'):
            yield piece

    fast, _ = clients
    r = await fast.post("/threads", content=pieces(), headers={**JSON, **bearer(TOKEN)})
    assert r.status_code == 201, r.text
    assert (await app.service.get(r.json()["id"])).events[0].text == "list tags"
