"""Hostile HTTP against a real `python -m bot serve` (Slack, email and API_TOKEN on): bodies
refused by size before or while they are read, authentication before any parsing, bounded
?limit=, the API documentation behind the token, query secrets kept out of the access log,
and Slack requests that slack-sdk cannot check refused with a 401 instead of a 500."""

from __future__ import annotations

import asyncio
import json
import socket
import time
from collections.abc import AsyncIterator, Iterable, Iterator

import httpx
import pytest
import uvicorn
from slack_sdk.signature import SignatureVerifier

from bot.adapters.http.limits import API_MAX_BYTES, SLACK_MAX_BYTES
from bot.adapters.http.shared import MAX_TEXT_CHARS
from bot.testing import cluster
from bot.testing.cluster import free_port, make_repo
from bot.testing.fake_slack import FakeSlack
from bot.wiring.app import http_app
from tests.helpers import eventually

pytestmark = [pytest.mark.redis, pytest.mark.processes, pytest.mark.network]

TOKEN = "api-token-for-hardening"
SIGNING = "slack-signing-secret-hardening"
INBOUND = "inbound-secret-hardening-7f3a"
EMAIL_MAX = 20_000
AUTH = {"Authorization": f"Bearer {TOKEN}"}
UNAUTHORIZED = "missing or wrong bearer token (Authorization: Bearer <API_TOKEN>)"


class Served:
    def __init__(self, process: cluster.BotProcess, port: int) -> None:
        self.process, self.port = process, port
        self.http = httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=10)

    def log(self) -> str:
        return self.process.log.read_text(errors="replace")


@pytest.fixture(scope="module")
def served(redis_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """One `python -m bot serve --no-worker` for the module: nothing here runs a thread."""
    tmp = tmp_path_factory.mktemp("hardening")
    slack = FakeSlack().start()
    port = free_port()
    env = cluster.clean_env(
        REDIS_URL=redis_url, PORT=str(port), HOST="127.0.0.1", DATA_DIR=str(tmp / "data"),
        GIT_REPO=str(make_repo(tmp / "repo")), API_TOKEN=TOKEN, LOG_LEVEL="INFO",
        SLACK_BOT_TOKEN="xoxb-test", SLACK_SIGNING_SECRET=SIGNING, SLACK_API_URL=slack.base_url,
        SMTP_HOST="127.0.0.1", SMTP_PORT=str(free_port()), SMTP_TLS="none", EMAIL_FROM="deploybot@example.com",
        INBOUND_EMAIL_SECRET=INBOUND, EMAIL_REPLY_SECRET="reply-secret", EMAIL_MAX_BYTES=str(EMAIL_MAX),
    )
    process = cluster.web(env, tmp / "serve.log", "--no-worker")
    server = Served(process, port)
    yield server
    server.http.close()
    process.kill()
    slack.stop()


# --- raw HTTP, so a test controls exactly what is sent and when ------------------------

def request_head(method: str, path: str, headers: dict[str, str]) -> bytes:
    lines = [f"{method} {path} HTTP/1.1", "Host: 127.0.0.1", *(f"{k}: {v}" for k, v in headers.items())]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def chunks(total: int, size: int = 64 * 1024) -> Iterator[bytes]:
    """`total` bytes of chunked transfer encoding, without the final empty chunk."""
    while total > 0:
        n = min(size, total)
        total -= n
        yield b"%x\r\n%s\r\n" % (n, b"x" * n)


def exchange(port: int, head: bytes, body: Iterable[bytes] = ()) -> tuple[int | None, bytes, int]:
    """Send `head`, then `body` until the server stops taking it; read the answer until the
    server closes. Returns (status or None if the connection was reset first, the raw
    answer, how many body bytes were sent)."""
    sent = 0
    answer = b""
    with socket.create_connection(("127.0.0.1", port), timeout=20) as s:
        s.sendall(head)
        for piece in body:
            try:
                s.sendall(piece)
            except OSError:  # the server refused and closed
                break
            sent += len(piece)
        try:
            while data := s.recv(65536):
                answer += data
        except ConnectionResetError:
            pass
    status = int(answer.split(b" ", 2)[1]) if answer.startswith(b"HTTP/1.1 ") else None
    return status, answer, sent


def detail(answer: bytes) -> str:
    return json.loads(answer.partition(b"\r\n\r\n")[2])["detail"]


NOW = "now"  # a timestamp taken when the test runs: parameters are made when the suite starts,
# and Slack's check refuses a timestamp over 5 minutes old (the whole suite takes longer)


def slack_headers(timestamp: str = NOW, signature: str = "v0=" + "0" * 64) -> dict[str, str]:
    return {"X-Slack-Request-Timestamp": timestamp, "X-Slack-Signature": signature,
            "Content-Type": "application/json"}


def fresh(headers: dict[str, str]) -> dict[str, str]:
    return {k: str(int(time.time())) if v == NOW else v for k, v in headers.items()}


# --- 1. sizes ---------------------------------------------------------------------------

@pytest.mark.parametrize(("path", "headers", "limit"), [
    ("/slack/events", slack_headers(), SLACK_MAX_BYTES),
    ("/email/inbound", {"Authorization": f"Bearer {INBOUND}"}, EMAIL_MAX),
    ("/threads", {**AUTH, "Content-Type": "application/json"}, API_MAX_BYTES),
])
def test_a_declared_length_over_the_limit_is_refused_before_a_byte_is_read(served, path, headers, limit):
    # Only the head is sent: an answer proves the server did not wait for the body.
    head = request_head("POST", path, {**fresh(headers), "Content-Length": str(300 * 1024 * 1024)})
    status, answer, _ = exchange(served.port, head)
    assert status == 413, answer
    assert detail(answer) == f"request body larger than {limit} bytes"
    assert b"connection: close" in answer.lower()


@pytest.mark.parametrize(("path", "headers", "limit"), [
    ("/slack/events", slack_headers(), SLACK_MAX_BYTES),
    ("/email/inbound", {"Authorization": f"Bearer {INBOUND}"}, EMAIL_MAX),
    ("/threads", {**AUTH, "Content-Type": "application/json"}, API_MAX_BYTES),
])
def test_a_streamed_body_is_refused_as_soon_as_it_passes_the_limit(served, path, headers, limit):
    # Chunked, no Content-Length: one byte over the limit, and the body never ends. Before
    # the limit, the server waited for the rest (and would have read 300 MB).
    head = request_head("POST", path, {**fresh(headers), "Transfer-Encoding": "chunked"})
    status, answer, _ = exchange(served.port, head, chunks(limit + 1))
    assert status == 413, answer
    assert detail(answer) == f"request body larger than {limit} bytes"
    assert b"connection: close" in answer.lower()


@pytest.mark.parametrize(("headers", "refusal"), [
    (slack_headers(), 413),  # looks signed: read up to the 3 MB limit, then refused
    ({"Content-Type": "application/json"}, 401),  # no timestamp: refused before any of it is read
])
def test_a_huge_forged_slack_body_is_not_read_to_its_end(served, headers, refusal):
    # What the incident was: an unsigned body of hundreds of MB. The server stops reading
    # and closes (an answer given before the body's end closes the connection, or uvicorn
    # would read the rest to throw it away), so most of 128 MB is never even sent (socket
    # buffers take a few MB).
    total = 128 * 1024 * 1024
    head = request_head("POST", "/slack/events", {**fresh(headers), "Transfer-Encoding": "chunked"})
    status, _, sent = exchange(served.port, head, chunks(total, 256 * 1024))
    assert sent < total // 4, f"the server read {sent} bytes of a forged body"
    assert status in (refusal, None)  # None: the answer was lost to the reset of a connection still sending


def test_a_message_over_the_character_limit_is_a_413_that_says_so(served):
    over = "x" * (MAX_TEXT_CHARS + 1)
    r = served.http.post("/threads", json={"message": over, "user": "u"}, headers=AUTH)
    assert r.status_code == 413, r.text
    assert r.json()["detail"] == f"message is longer than {MAX_TEXT_CHARS} characters"
    r = served.http.post("/threads/nope/responses", json={"text": over, "user": "u"}, headers=AUTH)
    assert (r.status_code, r.json()["detail"]) == (413, f"text is longer than {MAX_TEXT_CHARS} characters")
    r = served.http.post("/threads/nope/cancel", json={"reason": over}, headers=AUTH)
    assert (r.status_code, r.json()["detail"]) == (413, f"reason is longer than {MAX_TEXT_CHARS} characters")
    # Other invalid bodies stay 422.
    assert served.http.post("/threads", json={"message": ""}, headers=AUTH).status_code == 422


def test_a_message_at_the_limit_fits_in_the_body_limit_however_it_is_escaped(served):
    # 20,000 emoji: json.dumps escapes each as a surrogate pair (12 bytes), 240 KB in all.
    body = json.dumps({"message": "\U0001f680" * MAX_TEXT_CHARS, "user": "u"})
    assert len(body) < API_MAX_BYTES
    r = served.http.post("/threads", content=body, headers={**AUTH, "Content-Type": "application/json"})
    assert r.status_code == 201, r.text


# --- 1 and 3. authentication before parsing, documentation included ---------------------

def test_without_the_token_the_api_answers_401_before_parsing_the_body(served):
    r = served.http.post("/threads", content=b"{not json", headers={"Content-Type": "application/json"})
    assert (r.status_code, r.json()["detail"]) == (401, UNAUTHORIZED)  # was 422: parsed first
    # A declared megabyte that is never sent: the 401 comes without waiting for it.
    head = request_head("POST", "/threads", {"Content-Type": "application/json", "Content-Length": "1000000"})
    status, answer, _ = exchange(served.port, head)
    assert status == 401 and detail(answer) == UNAUTHORIZED
    wrong = {"Authorization": f"Bearer {TOKEN}x"}
    assert served.http.post("/threads/x/responses", json={}, headers=wrong).status_code == 401
    assert served.http.get("/deploys", params={"environment": "staging"}).status_code == 401


@pytest.mark.parametrize("path", ["/docs", "/openapi.json", "/redoc", "/docs/oauth2-redirect"])
def test_the_api_documentation_needs_the_token(served, path):
    assert served.http.get(path).status_code == 401
    assert served.http.get(path, headers=AUTH).status_code == 200


def test_health_and_the_channels_stay_reachable_without_the_api_token(served):
    assert served.http.get("/healthz").status_code == 200
    # They authenticate themselves: Slack by signature, email by its own secret.
    assert served.http.post("/slack/events", content=b"{}", headers=fresh(slack_headers())).status_code == 401
    r = served.http.post(f"/email/inbound?secret={INBOUND}", content=b"not mail")
    assert r.status_code in (200, 400), r.text  # past the secret: read as mail (malformed, or ignored)


@pytest.fixture
async def local(settings, app) -> AsyncIterator[httpx.AsyncClient]:
    """No API_TOKEN (local mode), composed as `serve` composes it."""
    assert settings.api_token is None
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(http_app(app, worker=False), host="127.0.0.1", port=port,
                                           log_level="warning"))
    task = asyncio.create_task(server.serve())
    await eventually(lambda: server.started, every=0.01, message="uvicorn did not start")
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as client:
        yield client
    server.should_exit = True
    await task


async def test_without_api_token_the_api_stays_open(local):
    assert (await local.post("/threads", json={"message": "hello", "user": "u"})).status_code == 201
    assert (await local.get("/openapi.json")).status_code == 200
    assert (await local.post("/threads", content="x" * (API_MAX_BYTES + 1))).status_code == 413


# --- 2. ?limit= --------------------------------------------------------------------------

@pytest.mark.parametrize("limit", ["0", "-1", "201", "many"])
def test_limit_outside_1_to_200_is_a_422(served, limit):
    assert served.http.get("/threads", params={"limit": limit}, headers=AUTH).status_code == 422
    r = served.http.get("/deploys", params={"environment": "staging", "limit": limit}, headers=AUTH)
    assert r.status_code == 422


def test_limit_bounds_the_answer(served):
    for n in range(2):
        assert served.http.post("/threads", json={"message": f"hi {n}", "user": "u"}, headers=AUTH).status_code == 201
    assert len(served.http.get("/threads", params={"limit": 1}, headers=AUTH).json()["threads"]) == 1
    assert served.http.get("/threads", params={"limit": 200}, headers=AUTH).status_code == 200
    r = served.http.get("/deploys", params={"environment": "staging", "limit": 200}, headers=AUTH)
    assert r.status_code == 200, r.text


# --- 4. query secrets in the access log --------------------------------------------------

def test_the_inbound_secret_in_a_query_string_stays_out_of_the_access_log(served):
    for secret in (INBOUND, "a-wrong-guess-93e1"):
        served.http.post(f"/email/inbound?x=1&secret={secret}", content=b"not mail")
    served.http.get("/healthz?marker=access-log-flushed")
    served.process.wait_for_log("marker=access-log-flushed")
    log = served.log()
    assert "/email/inbound?x=1&secret=[redacted]" in log
    assert INBOUND not in log and "a-wrong-guess-93e1" not in log


# --- 5. Slack requests slack-sdk could not check -----------------------------------------

def signed(body: str, timestamp: str | None = None) -> dict[str, str]:
    timestamp = timestamp or str(int(time.time()))
    signature = SignatureVerifier(SIGNING).generate_signature(timestamp=timestamp, body=body)
    return {"X-Slack-Request-Timestamp": timestamp, "X-Slack-Signature": signature,
            "Content-Type": "application/json"}


@pytest.mark.parametrize(("headers", "body", "logged"), [
    (slack_headers(), b'{"type": "event_callback", "x": "\xff\xfe"}', "slack: refused a body that is not UTF-8"),
    (slack_headers(timestamp="soon"), b"{}", "slack: refused a request whose timestamp is not a number"),
    (slack_headers(timestamp="9" * 5000), b"{}", "slack: refused a request whose timestamp is not a number"),
    (slack_headers(timestamp="\u0663"), b"{}", "slack: refused a request whose timestamp is not a number"),
    (slack_headers(signature="v0=\u00e9"), b"{}", "slack: refused a request whose signature is not ASCII"),
    (slack_headers(timestamp="1000000000"), b"{}", "slack: refused a stale request"),
    ({"Content-Type": "application/json"}, b"{}", "slack: refused a request whose timestamp is not a number"),
])
def test_slack_requests_that_cannot_be_verified_are_401_with_a_log_line(served, headers, body, logged):
    # Sent raw: httpx would refuse to send some of these headers.
    head = request_head("POST", "/slack/events", {**fresh(headers), "Content-Length": str(len(body))})
    status, answer, _ = exchange(served.port, head + body)
    assert status == 401, answer
    assert json.loads(answer.partition(b"\r\n\r\n")[2]) == {"error": "invalid signature"}
    served.process.wait_for_log(logged)
    assert "Traceback" not in served.log()


def test_a_signed_but_absurd_slack_body_is_a_400_not_a_500(served):
    body = "[" * 100_000 + "]" * 100_000  # deeper than json.loads can go
    r = served.http.post("/slack/events", content=body, headers=signed(body))
    assert r.status_code == 400, r.text
    assert "Traceback" not in served.log()
