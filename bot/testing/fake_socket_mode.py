"""A local WebSocket server that plays Slack's Socket Mode for tests.

Slack's Web API stand-in (bot/testing/fake_slack.py) answers `apps.connections.open` with
this server's `ws://127.0.0.1:<port>/link` URL (`FakeSlack.socket_url`). A client that
connects is greeted with `hello`, as Slack does; `send` then delivers an envelope
(`events_api`, `interactive`, `slash_commands`) to the connected client, and every
acknowledgement the client sends back (`{"envelope_id": ..., "payload": ...}`) is recorded,
so a test can check each envelope was acknowledged, and how quickly.

Runs in the test's own event loop (aiohttp's server), beside the bot under test.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import time
from dataclasses import dataclass, field
from typing import Any

from aiohttp import WSMsgType, web


@dataclass
class Ack:
    envelope_id: str
    payload: Any
    seconds: float  # from sending the envelope to its acknowledgement


@dataclass
class FakeSocketMode:
    acks: dict[str, Ack] = field(default_factory=dict)
    connections: int = 0
    _socket: web.WebSocketResponse | None = None
    _runner: web.AppRunner | None = None
    _port: int = 0
    _sent: dict[str, float] = field(default_factory=dict)
    _ids: itertools.count = field(default_factory=lambda: itertools.count(1))
    _connected: asyncio.Event = field(default_factory=asyncio.Event)

    @property
    def url(self) -> str:
        return f"ws://127.0.0.1:{self._port}/link"

    async def start(self) -> FakeSocketMode:
        app = web.Application()
        app.router.add_get("/link", self._link)
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self._port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        return self

    async def stop(self) -> None:
        if self._socket is not None:
            await self._socket.close()
        if self._runner is not None:
            await self._runner.cleanup()

    async def connected(self, within: float = 10) -> None:
        await asyncio.wait_for(self._connected.wait(), within)

    async def _link(self, request: web.Request) -> web.WebSocketResponse:
        socket = web.WebSocketResponse()
        await socket.prepare(request)
        self._socket = socket
        self.connections += 1
        await socket.send_json({
            "type": "hello", "num_connections": 1,
            "debug_info": {"host": "fake-socket-mode", "approximate_connection_time": 3600},
            "connection_info": {"app_id": "A1"},
        })
        self._connected.set()
        async for message in socket:
            if message.type == WSMsgType.TEXT:
                data = json.loads(message.data)
                envelope_id = data.get("envelope_id")
                if isinstance(envelope_id, str):
                    sent = self._sent.get(envelope_id, time.monotonic())
                    self.acks[envelope_id] = Ack(envelope_id, data.get("payload"), time.monotonic() - sent)
        return socket

    async def send(self, kind: str, payload: dict[str, Any], accepts_response_payload: bool = False) -> str:
        """Deliver one envelope; its id, to look its acknowledgement up with `ack`."""
        await self.connected()
        assert self._socket is not None
        envelope_id = f"env-{next(self._ids)}"
        self._sent[envelope_id] = time.monotonic()
        await self._socket.send_json({
            "envelope_id": envelope_id, "type": kind, "payload": payload,
            "accepts_response_payload": accepts_response_payload, "retry_attempt": 0, "retry_reason": "",
        })
        return envelope_id

    async def ack(self, envelope_id: str, within: float = 5) -> Ack:
        """The acknowledgement of an envelope, waited for."""
        deadline = time.monotonic() + within
        while envelope_id not in self.acks:
            if time.monotonic() > deadline:
                raise AssertionError(f"envelope {envelope_id} was not acknowledged within {within}s")
            await asyncio.sleep(0.01)
        return self.acks[envelope_id]
