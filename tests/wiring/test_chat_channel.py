"""The proof that a chat channel is one package and one registry line (tests/chat_channel): its
people are in deploybot.toml by its kind, they start threads over real HTTP, are asked for
approval in its room (a stand-in this test reads) and approve, and the deploy runs."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from bot.testing import http as stand_in
from bot.wiring import channels as channel_registry
from tests import chat_channel as chat
from tests.helpers import eventually, ledger_lines, reply

pytestmark = [pytest.mark.redis, pytest.mark.network]

PEOPLE = """
[people.alice]
chat = "U-2"

[people.bob]
chat = "u-1"

[environments.production]
protected = true
approvers = ["alice", "bob"]
approver_must_differ = true
"""
HEADERS = {"X-Chat-Secret": chat.SECRET}


@pytest.fixture
def room():
    """The chat room: what the channel posts, as the chat service would show it."""
    posted: list[dict] = []
    lock = threading.Lock()

    def route(method, path, headers, raw):
        with lock:
            posted.append(json.loads(raw))
        return 200, {"ok": True}, {}

    server = stand_in.serve(route)
    yield stand_in.url(server), posted
    stand_in.stop(server)


@pytest.fixture
def settings(settings, room, tmp_path: Path, monkeypatch):
    monkeypatch.setitem(channel_registry.CHANNELS, chat.KIND, chat.entry(room[0]))  # the one registry line
    (tmp_path / "deploybot.toml").write_text(PEOPLE)
    return settings.model_copy(update={"deploybot_config": tmp_path / "deploybot.toml"})


async def test_chat_people_start_a_thread_are_asked_and_approve(app, api, room, fake_llm, ledger):
    _, posted = room
    assert (await api.post(chat.PATH, json={"user": "u-1", "text": "hi"})).status_code == 401  # no secret
    fake_llm.script(reply(intent="list_git_tags"), reply(
        intent="deploy", service="backend", tag="v1.2.3", environment="production", reason="newest tag"))
    said = await api.post(chat.PATH, json={"user": " U-1 ", "text": "deploy the latest backend to production"},
                          headers=HEADERS)
    assert said.status_code == 200
    thread_id = said.json()["id"]
    await eventually(lambda: posted, within=15, message="no approval was asked in the chat room")
    thread = await app.service.get(thread_id)
    request = thread.pending_approval()
    assert thread.events[0].person == "bob" and thread.events[0].via == chat.KIND  # bob, by his chat id
    assert request.requested_by == "bob"
    assert posted == [{"thread": thread_id, "approval": request.approval_id, "ask": ["u-2"]}]  # alice, not bob

    fake_llm.script(reply(intent="done_for_now", message="backend v1.2.3 is live on production"))
    decided = await api.post(chat.PATH, json={"user": "u-2", "thread": thread_id, "approval": request.approval_id,
                                              "approve": True}, headers=HEADERS)
    assert decided.status_code == 200

    async def done():
        await app.worker.idle()
        finished = await app.service.get(thread_id)
        return finished if finished.status() == "done" else None

    finished = await eventually(done, within=15, message="the approved deploy did not finish")
    [decision] = [e for e in finished.events if e.type == "human_response"]
    assert (decision.person, decision.via, decision.approve) == ("alice", chat.KIND, True)
    assert len(ledger_lines(ledger)) == 1
