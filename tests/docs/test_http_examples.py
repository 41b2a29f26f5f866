"""Every curl example of the docs (```sh blocks calling `curl -s localhost:8000`) is sent, as the
same request with httpx, to a real `python -m bot serve`, in order: each answer has the status
the doc's `# STATUS ...` line after it says, and the fields it shows (a JSON object shows a
subset of the answer; other text, the answer's first line). Ids are placeholders
(tests/docs/placeholders.py); a GET whose answer is not yet what the doc shows (a deploy
running in the background) is asked again until a deadline."""

from __future__ import annotations

import json
import shlex
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from bot.testing.cluster import BotProcess, free_port
from tests.docs.markdown import DOCS, Block, blocks
from tests.docs.placeholders import Placeholders

DOC_ADDRESS = "localhost:8000"


@dataclass
class Request:
    command: str
    status: int
    shows: str  # the doc's answer after the status


def examples() -> list[Block]:
    return [b for path in DOCS for b in blocks(path, "sh") if f"curl -s {DOC_ADDRESS}" in b.body]


def requests(block: Block) -> list[Request]:
    found, command = [], ""
    for line in block.body.splitlines():
        if line.startswith("# "):
            status, _, shows = line[2:].partition(" ")
            found.append(Request(command, int(status), shows))
            command = ""
        else:
            command += line.removesuffix("\\").strip() + " "
    assert command == "", f"{block}: a request without the answer it gets"
    return found


def call(client: httpx.Client, command: str) -> httpx.Response:
    words = shlex.split(command, comments=True)
    assert words[:2] == ["curl", "-s"], command
    url, headers, body = "", {}, None
    it = iter(words[2:])
    for word in it:
        if word == "-H":
            name, _, value = next(it).partition(":")
            headers[name.strip()] = value.strip()
        elif word == "-d":
            body = next(it)
        else:
            url = word
    path = url.removeprefix(DOC_ADDRESS)
    return client.request("POST" if body is not None else "GET", path, headers=headers, content=body)


def shows(expected: Any, actual: Any, placeholders: Placeholders) -> bool:
    """Whether `actual` has every field of `expected`, binding placeholders only if it has."""
    bound = dict(placeholders.bound)
    if _subset(expected, actual, placeholders):
        return True
    placeholders.bound = bound
    return False


def _subset(expected: Any, actual: Any, placeholders: Placeholders) -> bool:
    if isinstance(expected, dict):
        return isinstance(actual, dict) and all(
            k in actual and _subset(v, actual[k], placeholders) for k, v in expected.items()
        )
    if isinstance(expected, str):
        return isinstance(actual, str) and placeholders.match(expected, actual)
    return expected == actual


def answered(response: httpx.Response, request: Request, placeholders: Placeholders) -> bool:
    if response.status_code != request.status:
        return False
    if request.shows.startswith("{"):
        return shows(json.loads(request.shows), response.json(), placeholders)
    return placeholders.match(request.shows, response.text.splitlines()[0])


@pytest.fixture
def server(doc_env, app_repo, tmp_path) -> Iterator[httpx.Client]:
    port = free_port()
    bot = BotProcess(["serve"], {**doc_env, "PORT": str(port), "GIT_REPO": str(app_repo)}, tmp_path / "serve.log")
    with httpx.Client(base_url=f"http://localhost:{port}", timeout=10) as client:
        deadline = time.monotonic() + 60
        while True:
            try:
                if client.get("/healthz").status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert bot.alive() and time.monotonic() < deadline, (tmp_path / "serve.log").read_text()
            time.sleep(0.05)
        yield client
    bot.terminate()


def test_the_docs_show_requests_to_send():
    assert {b.path.name for b in examples()} >= {"README.md", "http-api.md"}
    assert all(requests(b) for b in examples())


@pytest.mark.parametrize("block", examples(), ids=str)
def test_each_request_gets_the_answer_the_doc_shows(block, server):
    placeholders = Placeholders()
    for request in requests(block):
        command = placeholders.fill(request.command)
        deadline = time.monotonic() + 30
        response = call(server, command)
        while not answered(response, request, placeholders):
            retry = command.split()[-1].startswith(DOC_ADDRESS) and time.monotonic() < deadline  # a GET
            assert retry, f"{block}: {request.command}\n doc: {request.status} {request.shows}\n" \
                          f" got: {response.status_code} {response.text[:2000]}"
            time.sleep(0.1)
            response = call(server, command)
