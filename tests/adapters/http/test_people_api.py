"""People over HTTP, served as `serve` serves it (bot.wiring.app.http_app) on a real Redis: personal API
tokens act as their person and are managed with `python -m bot tokens`; the shared API_TOKEN
starts threads but never decides; a body's `user` cannot name someone else; one-time sign-in
links set a session cookie that needs a CSRF token to change anything, until signed out."""

from __future__ import annotations

import asyncio
import os
import stat
from collections.abc import AsyncIterator
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest

from bot.__main__ import main
from bot.adapters.http.api.auth_routes import EMAIL_LINK_SENT, SIGN_IN_FAILED
from bot.adapters.http.auth import CSRF_REFUSED, PERSONAL_UNAUTHORIZED, UNAUTHORIZED, Auth
from bot.adapters.http.sessions import Sessions
from bot.adapters.http.shared import SESSION_COOKIE
from bot.core import authority
from bot.core.freeze_windows import stop_the_line
from bot.core.people import API, Identity
from bot.wiring.app import App, sign_in_linker
from tests.adapters.http.test_web_hardening import detail, exchange, request_head
from tests.helpers import eventually, reply, settle
from tests.people_kinds import KINDS

pytestmark = [pytest.mark.redis, pytest.mark.network]

TOKEN = "shared-api-token-people"
PEOPLE = """
[people.alice]
email = "alice@example.com"

[people.bob]
email = "bob@example.com"

[environments.production]
protected = true
approvers = ["bob"]
"""
LATEST = "deploy the latest backend to production"


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    return tmp_path / "data"


@pytest.fixture
def public_url() -> str | None:
    return None


@pytest.fixture
def settings(settings, tmp_path: Path, data_dir: Path, public_url: str | None):
    """deploybot.toml with alice and bob (bob approves production), the shared API_TOKEN, and
    no SESSION_SECRET: the server makes one under DATA_DIR."""
    config = tmp_path / "deploybot.toml"
    config.write_text(PEOPLE)
    return settings.model_copy(update={
        "deploybot_config": config, "api_token": TOKEN, "data_dir": data_dir, "public_url": public_url,
    })


@pytest.fixture
def cli(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], settings, redis_url: str):
    """`python -m bot ...` in this process (on a thread of its own: it runs its own event
    loop), against the same Redis and deploybot.toml: (exit code, stdout, stderr)."""
    monkeypatch.setenv("REDIS_URL", redis_url)
    monkeypatch.setenv("DEPLOYBOT_CONFIG", str(settings.deploybot_config))
    monkeypatch.setenv("DATA_DIR", str(settings.data_dir))
    if settings.public_url:
        monkeypatch.setenv("PUBLIC_URL", settings.public_url)

    async def run(*argv: str) -> tuple[int, str, str]:
        capsys.readouterr()
        code = await asyncio.to_thread(main, list(argv))
        out, err = capsys.readouterr()
        return code, out.strip(), err.strip()

    return run


@pytest.fixture
async def bare(api: httpx.AsyncClient) -> AsyncIterator[httpx.AsyncClient]:
    """A client of the same server without the shared token: it brings its own credentials."""
    async with httpx.AsyncClient(base_url=api.base_url) as client:
        yield client


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


async def new_token(cli, person: str, name: str = "laptop") -> str:
    code, out, err = await cli("tokens", "create", person, "--name", name)
    assert code == 0, err
    assert out.startswith("dbt_") and "\n" not in out  # the token alone on stdout, printed once
    assert "shown this once" in err
    return out


async def paused_for_approval(api: httpx.AsyncClient, fake_llm, headers: dict[str, str]) -> dict:
    """A thread asking to deploy to production, started with `headers` (read with API_TOKEN)."""
    fake_llm.script(
        reply(intent="list_git_tags"),
        reply(intent="deploy", service="backend", tag="v1.2.3", environment="production", reason="newest tag"),
    )
    async with httpx.AsyncClient(base_url=api.base_url, headers=headers or api.headers) as client:
        r = await client.post("/threads", json={"message": LATEST})
    assert r.status_code == 201, r.text
    thread = await settle(api, r.json()["id"])
    assert thread["status"] == "waiting_for_approval", thread["events"]
    return thread


def decision(thread_id: str, pending: dict, **extra) -> tuple[str, dict]:
    return f"/threads/{thread_id}/responses", {"approval_id": pending["approval_id"], "approve": True, **extra}


# --- 1. personal API tokens ----------------------------------------------------------------


async def test_a_personal_token_approves_as_its_person(api, bare, cli, fake_llm, ledger):
    alice, bob = await new_token(cli, "alice"), await new_token(cli, "bob")
    thread = await paused_for_approval(api, fake_llm, bearer(alice))
    assert thread["events"][0]["person"] == "alice" and thread["events"][0]["via"] == "token"
    pending = thread["pending_approval"]
    assert pending["requested_by"] == "alice"

    # alice is no approver of production: her own token does not make her one
    url, body = decision(thread["id"], pending)
    r = await bare.post(url, json=body, headers=bearer(alice))
    assert r.status_code == 403, r.text

    fake_llm.script(reply(intent="done_for_now", message="Deployed."))
    r = await bare.post(url, json=body, headers=bearer(bob))  # no `user`: the token says who
    assert r.status_code == 202, r.text
    done = await settle(api, thread["id"])
    assert done["status"] == "done"
    decided = next(e for e in done["events"] if e["type"] == "human_response")
    assert (decided["person"], decided["via"], decided["user"]) == ("bob", "token", "bob")
    assert next(e for e in done["events"] if e["type"] == "deploy_result")["approved_by"] == "bob"


async def test_the_shared_token_starts_threads_but_never_decides(api, cli, fake_llm, ledger):
    thread = await paused_for_approval(api, fake_llm, {})  # the fixture's client sends API_TOKEN
    first = thread["events"][0]
    assert first["person"] is None and first["user"] == "api"  # the bot itself, nobody in particular
    url, body = decision(thread["id"], thread["pending_approval"], user="bob")
    for approve in (True, False):  # naming an approver changes nothing
        r = await api.post(url, json={**body, "approve": approve})
        assert r.status_code == 403 and "personal token" in r.json()["detail"], r.text
    r = await api.post("/threads", json={"message": "lock production: release freeze"})
    assert r.status_code == 403 and "lock or unlock" in r.json()["detail"], r.text
    # free text is still fine, and a name given is kept as an unverified label
    r = await api.post(url, json={"text": "what is in v1.2.3?", "user": "carol"})
    assert r.status_code == 202, r.text
    said = r.json()["events"][-1]
    assert (said["user"], said["person"], said["via"]) == ("carol", None, "api")
    assert said.get("approve") is None
    assert ledger.exists() is False  # nothing was deployed


async def test_the_shared_tokens_deploy_anyway_gets_the_authoritys_answer_for_the_blocked_deploy(app: App, api):
    """A deploy a freeze stopped: the shared token's "deploy anyway" in its thread is refused
    before it is recorded, saying what the authority says of forcing that deploy (what the
    thread itself says to anyone else who may not), not a sentence of the API's own."""
    freeze = stop_the_line("production", reason="incident 4711", set_by="bob", since=app.service.clock())
    await app.runner.deploying.freezes.set(freeze)
    r = await api.post("/threads", json={"message": "deploy backend v1.2.3 to production", "user": "ci"})
    blocked = await settle(api, r.json()["id"])
    assert [e["kind"] for e in blocked["events"] if e["type"] == "error"] == ["frozen"], blocked["events"]

    said = {"text": "deploy anyway: it cannot wait", "user": "ci"}
    r = await api.post(f"/threads/{blocked['id']}/responses", json=said)
    ci = Identity(None, API, "ci")
    assert (r.status_code, r.json()["detail"]) == (
        403, authority.why_not(app.policy, ci, authority.DeployAnyway("production"))), r.text
    assert (await api.get(f"/threads/{blocked['id']}")).json()["version"] == blocked["version"]


async def test_the_shared_token_cannot_name_a_person(api, bare, cli, fake_llm, ledger):
    """The shared API_TOKEN with `"user": "bob"` made a request recorded as bob's, which bob
    (or anyone) could then take for someone else's. It may name a pipeline or a bot, never a
    person of deploybot.toml: by name, address or any spelling of them."""
    thread = await paused_for_approval(api, fake_llm, {})
    for user in ("bob", " bob ", "bob@example.com", "Bob <BOB@example.com>", "alice"):
        launched = await api.post("/threads", json={"message": LATEST, "user": user})
        answered = await api.post(f"/threads/{thread['id']}/responses", json={"text": "ship it", "user": user})
        cancelled = await api.post(f"/threads/{thread['id']}/cancel", json={"user": user, "reason": "x"})
        rolled = await api.post("/deploys/rollback", json={"service": "backend", "environment": "production",
                                                           "user": user})
        for r in (launched, answered, cancelled, rolled):
            assert r.status_code == 403 and "use your personal token" in r.json()["detail"], (user, r.text)
    still = (await api.get(f"/threads/{thread['id']}")).json()
    assert len(still["events"]) == len(thread["events"]) and still["status"] == "waiting_for_approval"
    # A name nobody in deploybot.toml has is a label for whatever called (via "api", nobody)
    r = await api.post("/threads", json={"message": "hello", "user": "release-pipeline"})
    assert r.status_code == 201, r.text
    first = (await api.get(f"/threads/{r.json()['id']}")).json()["events"][0]
    assert (first["user"], first["person"], first["via"]) == ("release-pipeline", None, "api")
    # bob's own token still speaks for bob
    bob = await new_token(cli, "bob")
    r = await bare.post("/threads", json={"message": "hello", "user": "bob"}, headers=bearer(bob))
    assert r.status_code == 201, r.text


async def test_a_user_naming_someone_else_is_refused(bare, cli):
    alice = await new_token(cli, "alice")
    for user in ("bob", "api", "alice@example.com"):
        r = await bare.post("/threads", json={"message": "hello", "user": user}, headers=bearer(alice))
        assert r.status_code == 403 and "user must be alice" in r.json()["detail"], r.text
    r = await bare.post("/threads", json={"message": "hello", "user": "alice"}, headers=bearer(alice))
    assert r.status_code == 201, r.text
    thread_id = r.json()["id"]
    r = await bare.post(f"/threads/{thread_id}/cancel", json={"user": "bob"}, headers=bearer(alice))
    assert r.status_code == 403, r.text
    r = await bare.post(f"/threads/{thread_id}/cancel", json={"reason": "oops"}, headers=bearer(alice))
    assert r.status_code == 200 and r.json()["events"][-1]["person"] == "alice", r.text


async def test_tokens_are_listed_and_a_revoked_one_is_refused(bare, cli):
    laptop, ci = await new_token(cli, "alice", "laptop"), await new_token(cli, "alice", "ci")
    code, out, _ = await cli("tokens", "list")
    assert code == 0
    rows = [line.split() for line in out.splitlines()]
    assert [(r[1], r[2]) for r in rows] == [("alice", "laptop"), ("alice", "ci")]
    assert laptop not in out and ci not in out  # never the tokens themselves
    laptop_id = rows[0][0]
    assert laptop_id in laptop  # dbt_<id>_<secret>
    assert rows[0][-1] == "never"

    assert (await bare.get("/threads", headers=bearer(laptop))).status_code == 200
    code, out, _ = await cli("tokens", "list")
    assert out.splitlines()[0].split()[-1] != "never"  # last used: now

    assert await cli("tokens", "revoke", laptop_id) == (0, f"revoked {laptop_id}", "")
    r = await bare.get("/threads", headers=bearer(laptop))
    assert (r.status_code, r.json()["detail"]) == (401, PERSONAL_UNAUTHORIZED)
    assert (await bare.get("/threads", headers=bearer(ci))).status_code == 200  # the other still works
    assert (await cli("tokens", "revoke", laptop_id))[0] == 1  # no such token any more
    code, _, err = await cli("tokens", "create", "mallory")
    assert code == 2 and "'mallory' is not a person in deploybot.toml" in err
    # nothing but a real token gets in
    for wrong in (bearer("dbt_0123456789abcdef_" + "x" * 43), bearer(TOKEN + "x"), {"Authorization": "Basic YTpi"}, {}):
        assert (await bare.get("/threads", headers=wrong)).status_code == 401


# --- 3. sign-in links and sessions -----------------------------------------------------------


async def login_code(cli, person: str = "alice") -> str:
    code, out, err = await cli("login-link", person)
    assert code == 0 and "works once, for 10 minutes" in err, err
    url = urlsplit(out)
    assert url.path == "/auth/link"
    return parse_qs(url.query)["code"][0]


async def signed_in(client: httpx.AsyncClient, cli, person: str = "alice") -> httpx.Response:
    r = await client.post("/auth/link", json={"code": await login_code(cli, person)})
    assert r.status_code == 200, r.text
    return r


async def test_a_sign_in_link_works_once(bare, cli, app: App, data_dir):
    code = await login_code(cli)
    r = await bare.post("/auth/link", json={"code": code})
    assert r.status_code == 200 and r.json()["person"] == "alice", r.text
    cookie = r.headers["set-cookie"].lower()
    assert f"{SESSION_COOKIE}=" in cookie and "httponly" in cookie and "samesite=lax" in cookie
    assert "max-age=43200" in cookie and "secure" not in cookie  # plain http, no https PUBLIC_URL
    assert r.headers["cache-control"] == "no-store"
    # the secret it was signed with was made under DATA_DIR, readable by the bot alone
    assert stat.S_IMODE(os.stat(data_dir / "session_secret").st_mode) == 0o600

    async with httpx.AsyncClient(base_url=bare.base_url) as other:  # used again: refused
        r = await other.post("/auth/link", json={"code": code})
        assert (r.status_code, r.json()["detail"]) == (400, SIGN_IN_FAILED)
        assert SESSION_COOKIE not in other.cookies
        r = await other.get("/auth/link", params={"code": code}, headers={"Accept": "text/html"})
        assert r.status_code == 400 and "already used, or it has expired" in r.text
        # an expired link, or none at all, is refused the same way
        stale = await app.credentials.issue_link("alice", ttl_seconds=1)
        await eventually(lambda: _gone(app, stale), within=10, message="the link did not expire")
        for given in (stale, "", "made-up"):
            assert (await other.post("/auth/link", json={"code": given})).status_code == 400
    code, _, err = await cli("login-link", "mallory")
    assert code == 2 and "not a person" in err


async def _gone(app: App, code: str) -> bool:
    return await app.credentials.peek_link(code) is None


async def test_a_session_acts_as_its_person_and_needs_csrf_to_change_anything(bare, cli):
    await signed_in(bare, cli)
    assert (await bare.get("/threads")).status_code == 200  # the cookie alone reads
    r = await bare.post("/threads", json={"message": "hello"})
    assert (r.status_code, r.json()["detail"]) == (403, CSRF_REFUSED)
    session = (await bare.get("/auth/session")).json()
    assert (session["person"], session["via"]) == ("alice", "session")
    csrf = {"X-CSRF-Token": session["csrf_token"]}
    r = await bare.post("/threads", json={"message": "hello"}, headers={"X-CSRF-Token": "forged"})
    assert r.status_code == 403
    r = await bare.post("/threads", json={"message": "hello"}, headers=csrf)
    assert r.status_code == 201, r.text
    first = (await bare.get(f"/threads/{r.json()['id']}")).json()["events"][0]
    assert (first["person"], first["via"]) == ("alice", "session")
    r = await bare.post("/threads", json={"message": "hello", "user": "bob"}, headers=csrf)
    assert r.status_code == 403 and "signed in" in r.json()["detail"]

    # another session's token does not fit this one, and a tampered cookie is nobody
    async with httpx.AsyncClient(base_url=bare.base_url) as other:
        await signed_in(other, cli, "bob")
        r = await other.post("/threads", json={"message": "hi"}, headers=csrf)
        assert r.status_code == 403
        value = other.cookies[SESSION_COOKIE]
        other.cookies.set(SESSION_COOKIE, value[:-2] + ("AA" if not value.endswith("AA") else "BB"))
        r = await other.get("/threads")
        assert (r.status_code, r.json()["detail"]) == (401, UNAUTHORIZED)
        assert (await other.get("/auth/session")).status_code == 401


async def test_sign_out_ends_the_session_even_for_a_copied_cookie(bare, cli):
    await signed_in(bare, cli)
    copied = bare.cookies[SESSION_COOKIE]
    csrf = {"X-CSRF-Token": (await bare.get("/auth/session")).json()["csrf_token"]}
    assert (await bare.post("/auth/sign-out")).status_code == 403  # CSRF here too
    r = await bare.post("/auth/sign-out", headers=csrf)
    assert r.status_code == 200 and r.json() == {"signed_out": True}
    assert SESSION_COOKIE not in bare.cookies  # told to forget it
    async with httpx.AsyncClient(base_url=bare.base_url, cookies={SESSION_COOKIE: copied}) as thief:
        assert (await thief.get("/threads")).status_code == 401
        assert (await thief.get("/auth/session")).status_code == 401


async def test_asking_for_a_link_by_email_answers_the_same_for_anyone(bare):
    # No email channel here: nothing is sent, and nobody can tell whose address it is.
    answers = [await bare.post("/auth/email-link", json={"email": a})
               for a in ("alice@example.com", "nobody@example.com")]
    assert [(r.status_code, r.json()) for r in answers] == [(202, {"detail": EMAIL_LINK_SENT})] * 2


async def test_credentials_are_checked_before_the_body_is_read(bare, cli):
    # Only the head is sent, declaring a megabyte: an answer proves nothing waited for it.
    # (On a thread: the server runs on this event loop.)
    port = urlsplit(str(bare.base_url)).port
    head = {"Content-Type": "application/json", "Content-Length": "1000000"}
    revoked = bearer("dbt_0123456789abcdef_" + "x" * 43)
    status, answer, _ = await asyncio.to_thread(exchange, port, request_head("POST", "/threads", {**head, **revoked}))
    assert status == 401 and detail(answer) == PERSONAL_UNAUTHORIZED
    await signed_in(bare, cli)
    cookie = {"Cookie": f"{SESSION_COOKIE}={bare.cookies[SESSION_COOKIE]}"}
    status, answer, _ = await asyncio.to_thread(exchange, port, request_head("POST", "/threads", {**head, **cookie}))
    assert status == 403 and detail(answer) == CSRF_REFUSED


@pytest.mark.parametrize("public_url", ["https://deploybot.example/"])
async def test_behind_https_the_cookie_is_secure_and_links_name_the_public_address(bare, cli):
    code, out, _ = await cli("login-link", "alice")
    assert code == 0 and out.startswith("https://deploybot.example/auth/link?code=")
    r = await bare.post("/auth/link", json={"code": parse_qs(urlsplit(out).query)["code"][0]})
    assert r.status_code == 200 and "; secure" in r.headers["set-cookie"].lower()


async def test_a_link_is_mailed_to_a_persons_address_at_most_once_a_minute(app: App, settings):
    sent: list[tuple[str, str]] = []

    async def mail(address: str, url: str) -> None:
        sent.append((address, url))

    auth = Auth(TOKEN, open_mode=False, credentials=app.credentials, directory=settings.directory(KINDS),
                sessions=Sessions(b"s" * 32, 60), sign_in_link=sign_in_linker(settings, app.credentials), mail=mail)
    await auth.email_link("ALICE@example.com")
    await auth.email_link("alice@example.com")  # again at once: not mailed twice
    await auth.email_link("nobody@example.com")
    assert [address for address, _ in sent] == ["alice@example.com"]  # deploybot.toml's, not the input
    code = parse_qs(urlsplit(sent[0][1]).query)["code"][0]
    session, _ = await auth.sign_in(code)
    assert session.person == "alice"
