"""The bot answers only to its own names, in every mode (local too), served as `serve` serves it
(bot.wiring.app.http_app) on a real Redis: a Host that is not loopback, PUBLIC_URL's host or one of
ALLOWED_HOSTS is a 400 before anything is routed (DNS rebinding: a page on a name that resolves
to 127.0.0.1 reads nothing), a change asked for by another origin's page is a 403, and the
console's CSRF token is each browser's own."""

from __future__ import annotations

import logging
import re
from collections.abc import AsyncIterator

import httpx
import pytest
from starlette.datastructures import Headers

from bot.adapters.http.origins import BAD_HOST, CROSS_ORIGIN, own_hosts, same_origin
from bot.wiring.app import App, http_app

pytestmark = [pytest.mark.redis, pytest.mark.network]

TOKEN = "shared-api-token-own-names"


@pytest.fixture
def extra() -> dict:
    return {}


@pytest.fixture
def settings(settings, extra: dict):
    return settings.model_copy(update=extra)


@pytest.fixture
async def browser(api: httpx.AsyncClient) -> AsyncIterator[httpx.AsyncClient]:
    """A client with a cookie jar of its own and no credentials (local mode needs none)."""
    async with httpx.AsyncClient(base_url=api.base_url) as client:
        yield client


def port(client: httpx.AsyncClient) -> int:
    return client.base_url.port  # type: ignore[return-value]


def csrf_of(page: httpx.Response) -> str:
    return re.search(r'name="csrf_token" value="([^"]+)"', page.text)[1]


async def test_in_local_mode_another_host_name_is_refused_before_anything(browser, app: App):
    assert app.api_token is None  # local mode: no credentials asked
    for host in ("evil.test", f"evil.test:{port(browser)}", "127.0.0.1.evil.test", "localhost.evil.test:80",
                 "evil.test@127.0.0.1", "127.0.0.1/x", "", "[::2]"):
        for method, path in (("GET", "/console/"), ("GET", "/threads"), ("GET", "/healthz"),
                             ("POST", "/threads"), ("GET", "/auth/session"), ("GET", "/nowhere")):
            r = await browser.request(method, path, headers={"Host": host}, json={"message": "deploy"})
            assert (r.status_code, r.json()["detail"]) == (400, BAD_HOST), (host, method, path)
    assert await app.store.recent(10) == []
    for host in ("127.0.0.1", f"127.0.0.1:{port(browser)}", f"LOCALHOST:{port(browser)}", "localhost",
                 f"[::1]:{port(browser)}", "[::1]"):
        r = await browser.get("/threads", headers={"Host": host})
        assert r.status_code == 200, (host, r.text)


@pytest.mark.parametrize("extra", [{
    "api_token": TOKEN, "public_url": "https://deploybot.example:8443/", "allowed_hosts": "ops.internal, 10.0.0.7",
}])
async def test_public_url_and_allowed_hosts_are_its_names_too(api):
    for host in ("deploybot.example", "deploybot.example:8443", "ops.internal", "OPS.internal:80", "10.0.0.7:8080"):
        assert (await api.get("/threads", headers={"Host": host})).status_code == 200, host
    r = await api.get("/threads", headers={"Host": "evil.test"})  # a good token changes nothing
    assert (r.status_code, r.json()["detail"]) == (400, BAD_HOST)


async def test_a_change_from_another_origin_is_refused_in_local_mode(browser, app: App):
    own = f"http://127.0.0.1:{port(browser)}"
    for headers in ({"Origin": "http://evil.test"}, {"Origin": "null"}, {"Origin": f"http://localhost:{port(browser)}"},
                    {"Origin": f"http://127.0.0.1:{port(browser) + 1}"}, {"Referer": "http://evil.test/page"},
                    {"Origin": "http://evil.test", "Referer": f"{own}/console/"}):
        r = await browser.post("/threads", json={"message": "hello"}, headers=headers)
        assert (r.status_code, r.json()["detail"]) == (403, CROSS_ORIGIN), headers
    assert await app.store.recent(10) == []
    # reading from anywhere is fine (a browser's cross-origin read is the browser's to stop)
    assert (await browser.get("/threads", headers={"Origin": "http://evil.test"})).status_code == 200
    # its own origin, or nothing said (a script, curl), may change things
    for headers in ({"Origin": own}, {"Referer": f"{own}/console/"}, {"Origin": own.replace("http:", "https:", 1)}, {}):
        r = await browser.post("/threads", json={"message": "hello"}, headers=headers)
        assert r.status_code == 201, (headers, r.text)


async def test_two_browsers_in_local_mode_have_tokens_of_their_own(api, app: App):
    async with httpx.AsyncClient(base_url=api.base_url) as one, httpx.AsyncClient(base_url=api.base_url) as two:
        first, second = await one.get("/console/"), await two.get("/console/")
        assert first.status_code == second.status_code == 200
        assert "deploybot_browser" in one.cookies and "deploybot_browser" in two.cookies
        mine, theirs = csrf_of(first), csrf_of(second)
        assert mine != theirs
        assert csrf_of(await one.get("/console/")) == mine  # the same browser keeps its token
        lock = {"reason": "maintenance", "next": "/console/"}
        r = await two.post("/console/environments/production/lock", data={**lock, "csrf_token": mine})
        assert r.status_code == 403 and "CSRF" in r.text
        async with httpx.AsyncClient(base_url=api.base_url) as fresh:  # no cookie at all
            r = await fresh.post("/console/environments/production/lock", data={**lock, "csrf_token": mine})
            assert r.status_code == 403
        assert await app.store.recent(10) == []
        r = await one.post("/console/environments/production/lock", data={**lock, "csrf_token": mine})
        assert r.status_code == 303, r.text
        assert len(await app.store.recent(10)) == 1


def test_names_and_origins_compare_as_browsers_send_them():
    assert own_hosts(["Deploybot.Example:8443", "[2001:db8::1]", " ops.internal ", "bad/name"]) == {
        "127.0.0.1", "localhost", "::1", "deploybot.example", "2001:db8::1", "ops.internal"}

    def same(host: str, **given: str) -> bool | None:
        return same_origin(Headers({"host": host, **given}))

    assert same("deploybot.example", origin="https://deploybot.example") is True  # TLS ended by a proxy
    assert same("deploybot.example:443", origin="https://deploybot.example") is True
    assert same("deploybot.example", origin="https://deploybot.example:8443") is False
    assert same("127.0.0.1:8080", referer="http://127.0.0.1:8080/console/?x=1") is True
    assert same("127.0.0.1:8080", origin="null") is False and same("127.0.0.1:8080", origin="file://") is False
    assert same("127.0.0.1:8080") is None


@pytest.mark.parametrize(("extra", "warned"), [
    ({"api_token": TOKEN}, True),  # HOST 0.0.0.0, no name: only loopback answers
    ({"api_token": TOKEN, "public_url": "https://deploybot.example"}, False),
    ({"api_token": TOKEN, "allowed_hosts": "ops.internal"}, False),
    ({}, False),  # local mode binds 127.0.0.1
])
def test_serving_beyond_loopback_without_a_name_is_warned_about(app: App, caplog, warned: bool):
    caplog.set_level(logging.WARNING, logger="bot.wiring.app")
    http_app(app)
    assert any("set PUBLIC_URL or ALLOWED_HOSTS" in r.getMessage() for r in caplog.records) is warned
