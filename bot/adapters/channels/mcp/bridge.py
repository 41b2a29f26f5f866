"""`python -m bot mcp`: the stdio bridge an agent's MCP client spawns, to the server's /mcp.

It holds the agent's token and the server's address, nothing else: it builds nothing of the
app and never reaches the store. The server's front door turns the token into the agent on
every request, as for any agent over HTTP (bot/adapters/channels/mcp/server.py), so what the agent
may do is decided there. JSON-RPC messages go through as they are, both ways (progress
notifications too), with the official SDK's transports at each end: `stdio_server` towards
the agent, `streamable_http_client` towards the server.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from typing import Any

import anyio
import httpx2
from mcp.client.streamable_http import streamable_http_client
from mcp.server.stdio import stdio_server
from mcp.shared.inbound import (
    MCP_METHOD_HEADER,
    MCP_NAME_HEADER,
    MCP_PROTOCOL_VERSION_HEADER,
    NAME_BEARING_METHODS,
    encode_header_value,
)
from mcp.shared.message import ClientMessageMetadata, SessionMessage
from mcp_types import (
    PROTOCOL_VERSION_META_KEY,
    ErrorData,
    JSONRPCError,
    JSONRPCMessage,
    JSONRPCNotification,
    JSONRPCRequest,
    JSONRPCResponse,
    RequestId,
)

from bot.adapters.channels.mcp.server import MAX_WAIT, PATH
from bot.core import wording

log = logging.getLogger(__name__)

# A wait_for_thread called without a progress token says nothing until it returns (up to
# MAX_WAIT), so a read of the answer may take that long.
TIMEOUT = httpx2.Timeout(30.0, read=MAX_WAIT + 60.0)
SETTLE = 30.0  # seconds the answers still owed are waited for once the agent has closed stdin
UNREACHABLE = -32000  # the JSON-RPC error code of a call the server could not be reached for


class Refused(Exception):
    """The bridge cannot start: `message` in one line, and the exit code."""

    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        self.message, self.code = message, code


def endpoint(url: str) -> str:
    """The server's /mcp, from DEPLOYBOT_URL (the server's address; /mcp itself is taken too)."""
    url = url.rstrip("/")
    return url if url.endswith(PATH) else url + PATH


async def run(url: str, token: str) -> int:
    """Bridge stdin/stdout to the server until the agent closes stdin; raises Refused when the
    server does not take the token, or cannot be reached, at the start."""
    bridge = Bridge(url)
    async with httpx2.AsyncClient(
        headers={"Authorization": f"Bearer {token}"}, timeout=TIMEOUT, transport=Answering(bridge),
        event_hooks={"response": [bridge.heard]},
    ) as http:
        await _check(http, url)
        bridge.serving = True
        await _serve(bridge, http, endpoint(url))
    return 0


async def _check(http: httpx2.AsyncClient, url: str) -> None:
    """Before a message is read, the protocol's ping: the front door answers /mcp 401 (no
    agent's token) or 403 (a person's) first, so the agent hears why at once, not on a call."""
    ping = {"jsonrpc": "2.0", "id": 0, "method": "ping"}
    try:
        answer = await http.post(endpoint(url), json=ping, headers={"Accept": "application/json, text/event-stream"})
    except httpx2.TransportError as e:
        raise Refused(wording.bridge_unreachable(url, _why(e)), 1) from None
    if answer.status_code in (401, 403):
        raise Refused(wording.bridge_token_refused(url, answer.status_code, _detail(answer)), 2)
    if answer.is_error:
        raise Refused(wording.bridge_unreachable(url, f"{endpoint(url)} answered {answer.status_code}"), 1)


def _detail(answer: httpx2.Response) -> str:
    try:
        return str(answer.json()["detail"])
    except (ValueError, KeyError, TypeError):
        return answer.reason_phrase


def _why(error: BaseException) -> str:
    return str(error) or type(error).__name__


async def _serve(bridge: Bridge, http: httpx2.AsyncClient, url: str) -> None:
    async with streamable_http_client(url, http_client=http) as (from_server, to_server):
        async with stdio_server() as (from_agent, to_agent), anyio.create_task_group() as tasks:
            tasks.start_soon(bridge.down, from_server, to_agent)
            await bridge.up(from_agent, to_server)
            with anyio.move_on_after(SETTLE):
                await bridge.all_answered()
            tasks.cancel_scope.cancel()
            await to_agent.aclose()  # ends the stdio transport's writer


class Answering(httpx2.AsyncBaseTransport):
    """HTTP to the server; once the bridge serves, a server it cannot reach (restarting, say)
    is answered for, as a JSON-RPC error the SDK's transport hands the agent for that call.
    The session outlives the outage: each request is self-contained (stateless HTTP)."""

    def __init__(self, bridge: Bridge) -> None:
        self.bridge = bridge
        self.http = httpx2.AsyncHTTPTransport()

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        try:
            return await self.http.handle_async_request(request)
        except httpx2.TransportError as e:
            if not self.bridge.serving:
                raise
            why = wording.bridge_unreachable(self.bridge.url, _why(e))
            log.warning("%s", why)
            error = {"jsonrpc": "2.0", "id": None, "error": {"code": UNREACHABLE, "message": why}}
            return httpx2.Response(503, json=error, request=request)

    async def aclose(self) -> None:
        await self.http.aclose()


@dataclass
class Bridge:
    """The messages between the agent (stdio) and the server (Streamable HTTP), and what the
    HTTP wire needs beside them: the protocol version in a header."""

    url: str  # DEPLOYBOT_URL, as the agent is told of it
    version: str = ""  # what initialize settled, for a handshake-era session
    refused: dict[RequestId, str] = field(default_factory=dict)  # why the server refused a request's POST
    serving: bool = False  # past the check at start, which says why itself
    initialize: RequestId | None = None
    owed: set[RequestId] = field(default_factory=set)  # requests the server has not answered yet
    quiet: anyio.Event = field(default_factory=anyio.Event)  # set while nothing is owed

    async def up(self, agent: Any, server: Any) -> None:
        """The agent's messages to the server, until it closes stdin."""
        async for item in agent:
            if isinstance(item, Exception):  # a line that is not JSON-RPC: nothing to answer it with
                log.warning("mcp bridge: not a JSON-RPC message from the agent: %s", item)
                continue
            message = item.message
            if isinstance(message, JSONRPCRequest):
                self.owe(message.id)
                if message.method == "initialize":
                    self.initialize = message.id
            await server.send(SessionMessage(message, ClientMessageMetadata(headers=self.headers(message))))

    async def down(self, server: Any, agent: Any) -> None:
        """The server's messages to the agent: answers, progress notifications, errors."""
        async for item in server:
            if isinstance(item, Exception):
                log.warning("mcp bridge: the server sent something that is not JSON-RPC: %s", item)
                continue
            message = item.message
            if isinstance(message, JSONRPCResponse | JSONRPCError):
                message = self.answered(message)
            await agent.send(SessionMessage(message))

    def owe(self, request: RequestId) -> None:
        self.owed.add(request)
        if self.quiet.is_set():
            self.quiet = anyio.Event()

    def answered(self, message: JSONRPCResponse | JSONRPCError) -> JSONRPCResponse | JSONRPCError:
        """`message`, the answer to a request; a refused token's error says why, as the server did."""
        if message.id == self.initialize and isinstance(message, JSONRPCResponse):
            self.version = str(message.result.get("protocolVersion", ""))
        self.owed.discard(message.id)
        if not self.owed:
            self.quiet.set()
        why = self.refused.pop(message.id, None) if message.id is not None else None
        if why is not None and isinstance(message, JSONRPCError):
            return JSONRPCError(jsonrpc="2.0", id=message.id, error=ErrorData(code=message.error.code, message=why))
        return message

    async def heard(self, response: httpx2.Response) -> None:
        """Each answer of the server: when it refuses the token (revoked since the bridge
        started), the SDK's transport says only "Server returned an error response" to the
        agent; this keeps the server's reason for that request, and says it on stderr."""
        if not self.serving or response.status_code not in (401, 403):
            return
        await response.aread()
        why = wording.bridge_token_refused(self.url, response.status_code, _detail(response))
        log.warning("refused: %s", why)
        try:
            request = json.loads(response.request.content)
        except ValueError:
            return
        if isinstance(request, dict) and "id" in request:
            self.refused[request["id"]] = why

    async def all_answered(self) -> None:
        if self.owed:
            await self.quiet.wait()

    def headers(self, message: JSONRPCMessage) -> dict[str, str]:
        """The headers the Streamable HTTP wire wants with `message`: the SDK's client session
        sets them on what it sends; the bridge sends what the agent's client made, so it reads
        them off the message. (No tool of deploybot's declares `Mcp-Param` headers.)"""
        params = message.params if isinstance(message, JSONRPCRequest | JSONRPCNotification) else None
        version = ((params or {}).get("_meta") or {}).get(PROTOCOL_VERSION_META_KEY)
        if not isinstance(version, str) or not isinstance(message, JSONRPCRequest | JSONRPCNotification):
            return {MCP_PROTOCOL_VERSION_HEADER: self.version} if self.version else {}
        # A self-contained request of the 2026 wire: its version, method and name ride in headers too.
        headers = {MCP_PROTOCOL_VERSION_HEADER: version, MCP_METHOD_HEADER: message.method}
        name = (params or {}).get(NAME_BEARING_METHODS.get(message.method, ""))
        if isinstance(name, str):
            headers[MCP_NAME_HEADER] = encode_header_value(name)
        return headers
