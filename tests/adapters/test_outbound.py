"""The shared outgoing HTTP (bot/adapters/outbound.py), the GitHub client
(bot/adapters/github_api.py) and the channels' background-send tail
(bot/adapters/channels/deliveries.py), against a real HTTP server on loopback."""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from bot.adapters import github_api, outbound
from bot.adapters.channels.deliveries import Deliveries
from bot.core.events import DeliveryFailed, Event
from bot.testing.http import serve, stop, url

pytestmark = pytest.mark.network


def answer(status: int, headers: dict[str, str] | None = None, body: Any = None) -> httpx.Response:
    return httpx.Response(
        status, headers=headers or {}, json=body, request=httpx.Request("GET", "https://h.example/secret/path?k=v"),
    )


class Scripted:
    """Answers each request with the next scripted (status, body, headers); then 200 {}."""

    def __init__(self) -> None:
        self.script: list[tuple[int, Any, dict[str, str]]] = []
        self.seen: list[tuple[str, str, dict[str, str]]] = []
        self.lock = threading.Lock()
        self.server = serve(self.route)

    def route(self, method: str, path: str, headers: Any, raw: bytes) -> tuple[int, Any, dict[str, str]]:
        with self.lock:
            self.seen.append((method, path, {k.lower(): v for k, v in headers.items()}))
            return self.script.pop(0) if self.script else (200, {}, {})


@pytest.fixture
def server() -> Iterator[Scripted]:
    s = Scripted()
    yield s
    stop(s.server)


# --- what an answer means --------------------------------------------------------------------


def test_a_rate_limit_says_how_long_to_wait():
    assert outbound.rate_limit_wait(answer(429, {"retry-after": "7"})) == 7
    assert outbound.rate_limit_wait(answer(403, {"retry-after": "3600"})) == outbound.RATE_LIMIT_CAP
    reset = {"x-ratelimit-remaining": "0", "x-ratelimit-reset": "1030"}
    assert outbound.rate_limit_wait(answer(403, reset), now=lambda: 1000.0) == 30
    # A reset already past still waits a second; a missing or broken one too.
    assert outbound.rate_limit_wait(answer(403, reset), now=lambda: 2000.0) == 1
    assert outbound.rate_limit_wait(answer(429, {"x-ratelimit-remaining": "0"}), now=lambda: 5.0) == 1
    # Not a rate limit, or one that does not say: the listed waits apply.
    assert outbound.rate_limit_wait(answer(403, {"x-ratelimit-remaining": "12"})) is None
    assert outbound.rate_limit_wait(answer(503, {"retry-after": "5"})) is None
    assert outbound.rate_limit_wait(answer(429, {"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"})) is None


def test_which_answers_are_tried_again():
    assert outbound.check(answer(201)).status_code == 201
    for status, headers in [(408, {}), (429, {}), (500, {}), (503, {}), (403, {"x-ratelimit-remaining": "0"})]:
        with pytest.raises(outbound.Retryable):
            outbound.check(answer(status, headers))
    for status in (301, 400, 401, 403, 404, 410, 422):
        with pytest.raises(outbound.Refused):
            outbound.check(answer(status))


def test_a_failure_names_the_status_and_detail_never_the_url():
    with pytest.raises(outbound.Refused) as refused:
        outbound.check(answer(404, body={"message": "Not Found"}), github_api.message)
    assert str(refused.value) == "HTTP 404: Not Found"
    assert outbound.describe(refused.value) == "HTTP 404: Not Found"
    assert outbound.where("https://user:pw@hooks.example:8443/T0/B1/secret?token=x") == "https://hooks.example:8443"
    assert outbound.describe(httpx.ConnectError("refused")) == "ConnectError: refused"


# --- requests and retries --------------------------------------------------------------------


async def test_retries_follow_the_listed_waits_until_an_answer_is_good(server):
    server.script = [(503, {}, {}), (429, {"message": "slow down"}, {"Retry-After": "0"})]
    async with httpx.AsyncClient(base_url=url(server.server)) as client:
        response = await outbound.retried(
            lambda: outbound.request(client, "GET", "/x"), (0, 0, 0), "a test call", logging.getLogger("test")
        )
    assert response.status_code == 200
    assert len(server.seen) == 3


async def test_when_the_retries_run_out_the_last_answer_is_raised(server):
    server.script = [(502, {}, {})] * 3
    async with httpx.AsyncClient(base_url=url(server.server)) as client:
        with pytest.raises(outbound.Retryable, match="HTTP 502"):
            await outbound.retried(lambda: outbound.request(client, "GET", "/x"), (0, 0), "x", logging.getLogger())
    assert len(server.seen) == 3


async def test_a_request_that_must_not_run_twice_is_not_retried_after_a_5xx(server):
    server.script = [(502, {}, {})]
    async with httpx.AsyncClient(base_url=url(server.server)) as client:
        with pytest.raises(outbound.Unsure):
            await outbound.retried(
                lambda: outbound.request(client, "POST", "/dispatch", once=True), (0, 0), "x", logging.getLogger()
            )
    assert len(server.seen) == 1


async def test_a_request_that_must_not_run_twice_is_retried_after_a_rate_limit(server):
    server.script = [(429, {}, {"Retry-After": "0"})]
    async with httpx.AsyncClient(base_url=url(server.server)) as client:
        response = await outbound.retried(
            lambda: outbound.request(client, "POST", "/dispatch", once=True), (0,), "x", logging.getLogger()
        )
    assert response.status_code == 200 and len(server.seen) == 2


# --- the GitHub client -------------------------------------------------------------------------


async def test_the_github_client_sends_its_headers_and_follows_pages(server):
    base = url(server.server)
    server.script = [
        (200, [{"n": 1}], {"Link": f'<{base}/repos/o/r/tags?per_page=100&page=2>; rel="next"'}),
        (200, [{"n": 2}], {}),
    ]
    github = github_api.GitHub("tok", base + "/")
    try:
        pages = [page.json() async for page in github.pages("/repos/o/r/tags", (0,), logging.getLogger())]
    finally:
        await github.aclose()
    assert pages == [[{"n": 1}], [{"n": 2}]]
    paths = [path for _, path, _ in server.seen]
    assert paths == ["/repos/o/r/tags?per_page=100", "/repos/o/r/tags?per_page=100&page=2"]
    headers = server.seen[0][2]
    assert headers["authorization"] == "Bearer tok"
    assert headers["x-github-api-version"] == github_api.API_VERSION
    assert headers["accept"] == "application/vnd.github+json"


# --- the channels' background sends ----------------------------------------------------------


async def test_a_delivery_that_keeps_failing_is_recorded_once_with_its_attempts(server):
    server.script = [(503, {}, {})] * 3
    recorded: list[tuple[str, list[Event]]] = []

    async def record(thread_id: str, events: Any) -> None:
        recorded.append((thread_id, list(events)))

    deliveries = Deliveries("webhook", record)
    async with httpx.AsyncClient(base_url=url(server.server)) as client:
        deliveries.spawn(deliveries.retried(
            "t1", "http://127.0.0.1", "a webhook", lambda: outbound.request(client, "POST", "/hook"), (0, 0),
            lambda attempts, why: f"{attempts} times: {why}",
        ))
        await deliveries.drain()
    [(thread_id, [failed])] = recorded
    assert thread_id == "t1" and isinstance(failed, DeliveryFailed)
    assert (failed.channel, failed.to, failed.reason) == ("webhook", "http://127.0.0.1", "3 times: HTTP 503")


async def test_a_failure_to_record_is_logged_not_raised_and_drain_waits_for_late_sends(caplog):
    async def broken(thread_id: str, events: Any) -> None:
        raise ConnectionError("the store is away")

    deliveries = Deliveries("email", broken)
    finished: list[str] = []

    async def later() -> None:
        await asyncio.sleep(0)
        finished.append("later")

    async def first() -> None:
        deliveries.spawn(later())  # started while drain is already waiting
        await deliveries.failed("t1", "a@example.com", "x" * 1000, "an email to a@example.com")
        finished.append("first")

    deliveries.spawn(first())
    await deliveries.drain()
    assert sorted(finished) == ["first", "later"]
    assert "recording that an email to a@example.com failed also failed" in caplog.text
