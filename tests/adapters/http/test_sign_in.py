"""Signing in, attacked, served as `serve` serves it (bot.wiring.app.http_app) on a real Redis with a real
SMTP server (aiosmtpd): a sign-in link is mailed only to the address deploybot.toml holds for its
person, whatever the request names; a GET of a link uses nothing (mail scanners, chat unfurls)
and only its page's same-origin form POST, or an API client's JSON POST, signs in."""

from __future__ import annotations

import re
from collections.abc import Iterator
from email import message_from_bytes, policy
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from aiosmtpd.controller import Controller

from bot.adapters.http.api.auth_routes import EMAIL_LINK_SENT, LINK_FROM_ELSEWHERE, SIGN_IN_FAILED
from bot.adapters.http.auth import Auth
from bot.adapters.http.origins import CROSS_ORIGIN
from bot.adapters.http.sessions import Sessions
from bot.adapters.http.shared import RETURN_COOKIE, SESSION_COOKIE
from bot.wiring.app import App, sign_in_linker
from tests.conftest import free_port
from tests.helpers import eventually, ledger_lines, reply
from tests.people_kinds import KINDS

pytestmark = [pytest.mark.redis, pytest.mark.network]

TOKEN = "shared-api-token-sign-in"
ATTACKER = "attacker@evil.test"
PEOPLE = """
[people.alice]
email = "Alice@Acme.test"

[people.bob]
email = "bob@acme.test"

[people.carol]
email = "carol@acme.test"

[environments.production]
protected = true
approvers = ["alice", "bob"]
required_approvals = 2
"""
# Not exactly one bare address: each is answered like an unknown address and mails nothing.
HOSTILE = (
    f"alice@acme.test, {ATTACKER}",
    f"alice@acme.test,{ATTACKER}",
    f"alice@acme.test;{ATTACKER}",
    f"alice@acme.test {ATTACKER}",
    f"Alice <alice@acme.test>, {ATTACKER}",
    "Alice <alice@acme.test>",
    "<alice@acme.test>",
    '"alice" alice@acme.test',
    "alice@acme.test\r\nBcc: attacker@evil.test",
    "alice@acme.test\nBcc: attacker@evil.test",
    "alice@acme.test%0d%0aBcc:%20attacker@evil.test",
    "alice@acme.test\r\n",
    " alice@acme.test",
    "alice @acme.test",
    "alice@acme.test\t",
)


class Mailbox:
    """What the SMTP server was given: each message with its envelope's recipients."""

    def __init__(self) -> None:
        self.sent: list[tuple[list[str], object]] = []

    async def handle_DATA(self, server, session, envelope) -> str:  # noqa: N802 (aiosmtpd's name)
        self.sent.append(([r.lower() for r in envelope.rcpt_tos], message_from_bytes(envelope.content,
                                                                                       policy=policy.default)))
        return "250 OK"

    def to(self, address: str) -> list[object]:
        return [m for rcpts, m in self.sent if address in rcpts or address in str(m["To"]).lower()]


@pytest.fixture
def mailbox() -> Iterator[Mailbox]:
    box = Mailbox()
    controller = Controller(box, hostname="127.0.0.1", port=free_port())
    controller.start()
    box.port = controller.port  # type: ignore[attr-defined]
    yield box
    controller.stop()


@pytest.fixture
def settings(settings, tmp_path: Path, mailbox: Mailbox):
    """alice and bob, both needed to deploy to production; API_TOKEN; email on (real SMTP)."""
    config = tmp_path / "deploybot.toml"
    config.write_text(PEOPLE)
    return settings.model_copy(update={
        "deploybot_config": config, "api_token": TOKEN, "data_dir": tmp_path / "data",
        "smtp_host": "127.0.0.1", "smtp_port": mailbox.port, "smtp_tls": "none",  # type: ignore[attr-defined]
        "email_from": "deploybot@acme.test", "inbound_email_secret": "inbound-secret",
        "email_reply_secret": "reply-secret", "email_allowed_senders": "@acme.test",
    })


@pytest.fixture
async def outsider(api: httpx.AsyncClient) -> Iterator[httpx.AsyncClient]:
    """A client of the same server with no credentials at all."""
    async with httpx.AsyncClient(base_url=api.base_url) as client:
        yield client


def code_in(message) -> str:
    url = re.search(r"http://\S+/auth/link\?code=\S+", message.get_body(preferencelist=("plain",)).get_content())[0]
    return parse_qs(urlsplit(url).query)["code"][0]


def origin(client: httpx.AsyncClient) -> dict[str, str]:
    return {"Origin": str(client.base_url).rstrip("/")}


# --- 1. links go only where the person's address is ------------------------------------------


async def test_an_outsider_gets_no_link_and_cannot_deploy(outsider, api, mailbox, fake_llm, ledger):
    unknown = await outsider.post("/auth/email-link", json={"email": "nobody@acme.test"})
    for hostile in HOSTILE:
        for person in ("alice", "bob"):
            given = hostile.replace("alice", person)
            r = await outsider.post("/auth/email-link", json={"email": given})
            assert (r.status_code, r.json()) == (unknown.status_code, unknown.json()), given
    assert (unknown.status_code, unknown.json()) == (202, {"detail": EMAIL_LINK_SENT})
    # the console's form too (its answer is the same redirect for anyone)
    for given in (f"alice@acme.test, {ATTACKER}", "nobody@acme.test"):
        async with httpx.AsyncClient(base_url=outsider.base_url) as browser:  # a browser each
            r = await browser.post("/console/sign-in", data={"email": given}, headers=origin(browser))
            assert (r.status_code, r.headers["location"]) == (303, "/console/?notice=link")

    # A plain request does mail carol, at the address deploybot.toml holds: the mail works.
    await outsider.post("/auth/email-link", json={"email": "CAROL@acme.test"})
    [to_carol] = await eventually(lambda: mailbox.to("carol@acme.test"), message="no link reached carol")
    assert [rcpts for rcpts, _ in mailbox.sent] == [["carol@acme.test"]], mailbox.sent
    assert str(to_carol["To"]) == "carol@acme.test" and mailbox.to(ATTACKER) == []

    # Not even a string: the same answer.
    for odd in (["alice@acme.test", ATTACKER], {"to": "alice@acme.test"}, "", "a" * 5000):
        r = await outsider.post("/auth/email-link", json={"email": odd})
        assert (r.status_code, r.json()) == (202, {"detail": EMAIL_LINK_SENT}), odd

    # With no link, the outsider can neither ask for the deploy nor approve it as anyone.
    fake_llm.script(reply(intent="deploy", service="backend", tag="v1.2.3", environment="production", reason="x"))
    r = await outsider.post("/threads", json={"message": "deploy backend v1.2.3 to production", "user": "alice"})
    assert r.status_code == 401
    assert (await outsider.get("/auth/session")).status_code == 401
    assert ledger_lines(ledger) == [] and fake_llm.prompts == []


async def test_a_link_goes_to_the_stored_address_never_to_the_input(app: App, settings):
    sent: list[str] = []

    async def mail(address: str, url: str) -> None:
        sent.append(address)

    auth = Auth(TOKEN, open_mode=False, credentials=app.credentials, directory=settings.directory(KINDS),
                sessions=Sessions(b"s" * 32, 60), sign_in_link=sign_in_linker(settings, app.credentials), mail=mail)
    for hostile in HOSTILE:
        await auth.email_link(hostile)
    assert sent == []  # and alice was not counted as mailed: her own request still gets one
    await auth.email_link("ALICE@acme.test")
    assert sent == ["alice@acme.test"]  # deploybot.toml's address (addresses compare lower-cased)


# --- 2. a GET shows the link's page; only its form's POST signs in ---------------------------


async def test_a_get_uses_nothing_and_the_pages_form_signs_in(outsider, app: App):
    code = await app.credentials.issue_link("bob", 600)
    for _ in range(3):  # a mail scanner, a chat unfurl, the person: the link is still good
        page = await outsider.get("/auth/link", params={"code": code}, headers={"Accept": "text/html"})
        assert page.status_code == 200 and "<h1>Sign in as bob</h1>" in page.text
        assert 'href="/console/static/console.css"' in page.text  # styled like the console
        assert SESSION_COOKIE not in outsider.cookies
    assert f'<input type="hidden" name="code" value="{code}">' in page.text
    assert (await outsider.get("/auth/session")).status_code == 401

    # The form's POST from another site, or from nowhere said, signs nobody in.
    for headers, status, detail in (
        ({"Origin": "https://evil.test"}, 403, CROSS_ORIGIN),
        ({"Origin": "null"}, 403, CROSS_ORIGIN),
        ({"Referer": "https://evil.test/page"}, 403, CROSS_ORIGIN),
        ({}, 403, LINK_FROM_ELSEWHERE),
    ):
        r = await outsider.post("/auth/link", data={"code": code}, headers=headers)
        assert (r.status_code, r.json()["detail"]) == (status, detail), headers
        assert SESSION_COOKIE not in outsider.cookies

    # The page's own form (a browser sends its Origin; without one, its Referer) signs in.
    referer = {"Referer": f"{str(outsider.base_url).rstrip('/')}/auth/link?code={code}"}
    r = await outsider.post("/auth/link", data={"code": code}, headers=referer)
    assert (r.status_code, r.headers["location"]) == (303, "/console/")
    assert r.headers["cache-control"] == "no-store" and SESSION_COOKIE in outsider.cookies
    assert (await outsider.get("/auth/session")).json()["person"] == "bob"

    # Signed in as bob, the same browser may use alice's link (no session's token asked).
    other = await app.credentials.issue_link("alice", 600)
    r = await outsider.post("/auth/link", data={"code": other}, headers=origin(outsider))
    assert r.status_code == 303, r.text
    assert (await outsider.get("/auth/session")).json()["person"] == "alice"

    # Used: the link's page says so, styled, with the way back to signing in.
    for used in (code, "made-up", ""):
        page = await outsider.get("/auth/link", params={"code": used})
        assert page.status_code == 400 and "This sign-in link cannot be used" in page.text
        assert 'href="/console/"' in page.text and "`" not in page.text
        assert "console.css" in page.text
    async with httpx.AsyncClient(base_url=outsider.base_url) as other:
        r = await other.post("/auth/link", data={"code": code}, headers=origin(other))
        assert r.status_code == 400 and "This sign-in link cannot be used" in r.text


async def test_signing_in_goes_back_to_the_page_asked_for_and_only_to_a_console_page(outsider, app: App):
    """The sign-in page remembers the console page a signed-out browser asked for; signing in
    there goes back to it. A cookie set by anyone else never sends the browser off the console."""
    asked = await outsider.get("/console/deploys?environment=production", headers={"Accept": "text/html"})
    assert asked.status_code == 401 and "Sign in to deploybot" in asked.text
    assert outsider.cookies[RETURN_COOKIE].strip('"') == "/console/deploys?environment=production"
    code = await app.credentials.issue_link("bob", 600)
    r = await outsider.post("/auth/link", data={"code": code}, headers=origin(outsider))
    assert (r.status_code, r.headers["location"]) == (303, "/console/deploys?environment=production")
    assert RETURN_COOKIE not in outsider.cookies  # used once

    for hostile in ("//evil.test/", "/console//evil.test", "https://evil.test/console/",
                    "/console/\\evil.test", "/elsewhere", "/console/ with space", "/console/" + "a" * 600):
        async with httpx.AsyncClient(base_url=outsider.base_url) as browser:
            browser.cookies.set(RETURN_COOKIE, hostile)
            code = await app.credentials.issue_link("bob", 600)
            r = await browser.post("/auth/link", data={"code": code}, headers=origin(browser))
            assert (r.status_code, r.headers["location"]) == (303, "/console/"), hostile


async def test_asking_again_for_a_link_from_one_browser_says_one_was_sent(outsider, mailbox):
    """The console's form, twice within a minute from one browser: the second answer says a link
    was asked for moments ago (whatever address was typed: it tells nothing of whose it is)."""
    first = await outsider.post("/console/sign-in", data={"email": "bob@acme.test"}, headers=origin(outsider))
    assert first.status_code == 303 and first.headers["location"] == "/console/?notice=link"
    again = await outsider.post("/console/sign-in", data={"email": "nobody@acme.test"}, headers=origin(outsider))
    assert again.headers["location"] == "/console/?notice=link-recent"
    page = await outsider.get(again.headers["location"])
    assert "A link was asked for from this browser less than a minute ago" in page.text
    await eventually(lambda: len(mailbox.to("bob@acme.test")) == 1)
    async with httpx.AsyncClient(base_url=outsider.base_url) as another_browser:
        r = await another_browser.post("/console/sign-in", data={"email": "bob@acme.test"},
                                       headers=origin(another_browser))
        assert r.headers["location"] == "/console/?notice=link"


async def test_an_api_client_posts_the_code_as_json(outsider, app: App):
    code = await app.credentials.issue_link("alice", 600)
    r = await outsider.post("/auth/link", json={"code": code})
    assert r.status_code == 200 and r.json()["person"] == "alice", r.text
    assert (await outsider.get("/auth/session")).json()["person"] == "alice"
    async with httpx.AsyncClient(base_url=outsider.base_url) as other:
        r = await other.post("/auth/link", json={"code": code})  # once
        assert (r.status_code, r.json()["detail"]) == (400, SIGN_IN_FAILED)
        for given in ({"code": "x" * 5000}, {"code": 3}, {}, []):
            r = await other.post("/auth/link", json=given)
            assert (r.status_code, r.json()["detail"]) == (400, SIGN_IN_FAILED), given
        assert SESSION_COOKIE not in other.cookies


async def test_a_body_that_is_not_json_text_is_a_422_and_signs_nobody_in(outsider, app: App, mailbox):
    # NaN and Infinity are not in JSON's grammar, a lone surrogate (\ud800) is no text: the
    # sign-in routes refuse them as every JSON route does, before a link is looked up or mailed.
    code = await app.credentials.issue_link("alice", 600)
    for path, text in (
        ("/auth/link", '{"code": "\\ud800"}'), ("/auth/link", f'{{"code": "{code}", "x": NaN}}'),
        ("/auth/email-link", '{"email": "carol@acme.test\\udfff"}'),
        ("/auth/email-link", '{"email": "carol@acme.test", "x": Infinity}'),
    ):
        r = await outsider.post(path, content=text, headers={"Content-Type": "application/json"})
        assert r.status_code == 422 and "not JSON" in r.json()["detail"], (path, text, r.text)
    assert SESSION_COOKIE not in outsider.cookies and await app.credentials.peek_link(code) == "alice"
    # Mail goes out after the answer: one asked for afterwards is the only one that came.
    await outsider.post("/auth/email-link", json={"email": "bob@acme.test"})
    await eventually(lambda: mailbox.to("bob@acme.test"), message="no link reached bob")
    assert [rcpts for rcpts, _ in mailbox.sent] == [["bob@acme.test"]]


async def test_favicon_is_no_404(outsider):
    r = await outsider.get("/favicon.ico")
    assert r.status_code == 204


async def _gone(app: App, code: str) -> bool:
    return await app.credentials.peek_link(code) is None


async def test_an_expired_link_shows_its_page(outsider, app: App):
    stale = await app.credentials.issue_link("alice", ttl_seconds=1)
    await eventually(lambda: _gone(app, stale), within=10, message="the link did not expire")
    page = await outsider.get("/auth/link", params={"code": stale})
    assert page.status_code == 400 and "This sign-in link cannot be used" in page.text
    r = await outsider.post("/auth/link", json={"code": stale})
    assert (r.status_code, r.json()["detail"]) == (400, SIGN_IN_FAILED)
