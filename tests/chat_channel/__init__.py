"""A chat channel for the tests, the proof that a channel is one package and one registry line:
people write to it over HTTP (a shared secret proves the chat service), it starts their threads
and takes their decisions, and it asks each approver the authority lets decide in the chat room,
a stand-in the test reads. Its people are in deploybot.toml by its kind: `chat = "u-1"` under
[people.bob]. Registered by `monkeypatch.setitem(CHANNELS, KIND, entry(room_url))`."""

from __future__ import annotations

from collections.abc import Sequence

import httpx
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from bot.core import authority
from bot.core.events import ApprovalRequested, Event
from bot.core.people import identity_for
from bot.core.policy import Policy
from bot.core.thread import Origin, Thread
from bot.runtime.ports import Channel, Route
from bot.runtime.service import ThreadService
from bot.wiring import channels as channel_registry

__all__ = ["KIND", "MAX_BYTES", "PATH", "SECRET", "ChatChannel", "entry", "normalise"]

KIND = "chat"  # in deploybot.toml (`chat = "u-1"`), a thread's origin and an identity's `via`
PATH = "/chat/messages"
SECRET = "chat-shared-secret"  # what the chat service signs its posts with
MAX_BYTES = 4096


def normalise(user: str) -> str:
    """Chat user ids ignore case: `U-1` is `u-1`."""
    return user.strip().lower()


class ChatChannel:
    """POST /chat/messages with X-Chat-Secret: {"user", "text"} starts a thread; {"user",
    "thread", "approval", "approve"} decides on an approval. It tells by posting to `room`."""

    def __init__(self, service: ThreadService, kick, policy: Policy, room: str) -> None:
        self.service, self.kick, self.policy, self.room = service, kick, policy, room

    async def endpoint(self, request: Request) -> Response:
        if request.headers.get("x-chat-secret") != SECRET:  # how it proves who is speaking
            return JSONResponse({"detail": "wrong chat secret"}, status_code=401)
        body = await request.json()
        who = self.service.directory.by(KIND, str(body["user"]))
        if "approval" in body:
            thread = await self.service.respond(str(body["thread"]), "", who, approval_id=str(body["approval"]),
                                                approve=bool(body["approve"]), channel=KIND)
        else:
            thread = await self.service.launch(str(body["text"]), who, channel=KIND, origin=Origin(channel=KIND))
        await self.kick(thread.id)
        return JSONResponse({"id": thread.id})

    async def publish(self, thread: Thread, new: Sequence[Event]) -> None:
        """An approval asked in one of its threads: asked of the chat ids of whoever may decide."""
        if thread.origin.channel != KIND:
            return
        for event in new:
            if isinstance(event, ApprovalRequested):
                asked = [user for principal in authority.deciders(self.policy, thread, event)
                         for user in self._users(principal)]
                async with httpx.AsyncClient() as http:
                    await http.post(self.room, json={"thread": thread.id, "approval": event.approval_id,
                                                     "ask": asked})

    def _users(self, principal: str) -> tuple[str, ...]:
        person = self.policy.directory.people.get(principal)
        if person is not None:
            return person.ids.get(KIND, ())
        seen = identity_for(principal)
        return (seen.evidence,) if seen.via == KIND else ()


def entry(room: str) -> channel_registry.Kind:
    """Its entry in the registry: how it proves who is speaking, its builder, its path's body
    limit, and its kind of people's ids."""

    def build(parts: channel_registry.Parts) -> Channel:
        chat = ChatChannel(parts.service, parts.kick, parts.policy, room)
        return channel_registry.Plugged(chat, (Route(PATH, chat.endpoint),), chat)

    return channel_registry.Kind("X-Chat-Secret, a secret shared with the chat service", build,
                                 lambda settings: ((PATH, MAX_BYTES),), ids=lambda: (KIND, normalise))
