"""MCP: AI agents (Claude Code, Cursor, any MCP client) ask for deploys; only people approve.

The Model Context Protocol with the official SDK (`mcp`), over Streamable HTTP at /mcp on the
web server, where the front door (bot/adapters/http/front_door.py) has already turned the bearer
token into an identity: anything but an agent's is refused here before a byte is read. An
agent whose client speaks only stdio runs `python -m bot mcp`, a bridge to this endpoint
holding only its token (bot/adapters/channels/mcp/bridge.py): no agent holds the store's
credentials, or it would be the operator.

An agent asks exactly as a person would in chat: `request_deploy` launches a thread with
the exact command ("deploy api v1.2.3 to production (why)"), so no model is needed and
every rule (approval, locks, freezes, the re-check) applies; people decide in Slack, email
or the console. Every request and cancel is recorded on the thread it touches (`ToolCalled`),
and an agent's first look at a thread (get_thread, wait_for_thread): looking again adds nothing.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.transport_security import TransportSecuritySettings
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from bot.core import agents, authority, commands, transcript, wording
from bot.core.agents import DeployedInfo, ServiceInfo, TagInfo, ThreadInfo
from bot.core.events import DeployService, ToolCalled
from bot.core.people import AGENT, Agent, Identity
from bot.core.thread import FINISHED, Origin, Thread
from bot.runtime import launch_once
from bot.runtime.ports import Deployer, History
from bot.runtime.service import Refused, ThreadService

log = logging.getLogger(__name__)

PATH = "/mcp"
CHANNEL = "mcp"
PROGRESS_EVERY = 2.0  # seconds between progress notifications while wait_for_thread waits (at most 5)
POLL_EVERY = 0.25  # seconds between looks at a thread someone waits on
SETTLE_WITHIN = 10.0  # request_deploy waits this long for the thread to reach its approval
MAX_WAIT = 600.0
KEY = "idempotency_key"  # the tools' argument: a retried request with it answers the first thread
UNAUTHORIZED = -32001  # the JSON-RPC error code of a refused token (the server-defined range)
INSTRUCTIONS = (
    "deploybot ships services only when a person approves. Use request_deploy (or request_rollback) to ask; "
    "it returns the thread id, its status and who may approve. wait_for_thread returns when the status "
    "settles (done, failed, cancelled, waiting_for_approval, waiting_for_human). A rejection's feedback is in "
    "`rejection`: re-plan from it. You cannot approve, lock or deploy anyway: people do."
)


@dataclass
class Tools:
    """What the tools need: the thread service and the parts it does not reach."""

    service: ThreadService
    history: History
    deployers: Mapping[str, Deployer]
    kick: Callable[[str], Awaitable[None]]
    secrets: tuple[str, ...] = ()

    def clock(self) -> datetime:
        return self.service.clock()

    # --- who is asking ---------------------------------------------------------------------

    async def who(self, ctx: Context | None) -> tuple[Identity, Agent]:
        """Whoever the front door found for this very request."""
        request = ctx.request_context.request if ctx is not None else None
        identity = getattr(request, "scope", {}).get("state", {}).get("identity")
        agent = self.service.directory.agent_of(identity.principal) if identity is not None else None
        if identity is None or identity.via != AGENT or agent is None:
            raise ToolError(wording.mcp_needs_agent_token())
        return identity, agent

    async def note(self, thread_id: str, tool: str, agent: Agent, detail: str = "") -> None:
        """Record the call on the thread it touches: the audit sees every request."""
        try:
            await self.service.record(thread_id, [self._called(tool, agent, detail)])
        except Refused as e:
            raise ToolError(e.message) from None

    async def note_read(self, thread_id: str, tool: str, agent: Agent, detail: str = "") -> None:
        """Record the agent's first look at the thread; a look again adds nothing, so an
        agent polling a thread does not grow it by an event a call."""
        try:
            await self.service.record_unless(
                thread_id, [self._called(tool, agent, detail)],
                lambda thread: agents.read_recorded(thread, agent.principal),
            )
        except Refused as e:
            raise ToolError(e.message) from None

    def _called(self, tool: str, agent: Agent, detail: str) -> ToolCalled:
        return ToolCalled(tool=tool, agent=agent.principal, detail=detail[:500])

    # --- reading -----------------------------------------------------------------------------

    async def list_services(self, ctx: Context | None) -> list[ServiceInfo]:
        await self.who(ctx)
        catalog = self.service.policy.catalog
        return [
            ServiceInfo(name=s.name, environments=sorted(s.environments or ()))
            for s in catalog.services.values()
        ]

    async def list_tags(self, service: str, ctx: Context | None) -> list[TagInfo]:
        await self.who(ctx)
        deployer = self.deployers.get(service)
        if deployer is None:
            raise ToolError(wording.agent_unknown_service(service, self.deployers))
        return [TagInfo(name=t.name, commit=t.commit) for t in (await deployer.list_tags())[:50]]

    async def whats_on(self, environment: str, ctx: Context | None) -> list[DeployedInfo]:
        await self.who(ctx)
        policy = self.service.policy
        if environment not in policy.environments:
            raise ToolError(wording.unknown_environment(environment, policy.environments))
        newest: dict[str, DeployedInfo] = {}
        for r in await self.history.recent(environment, 200):
            if r.ok and r.service not in newest:
                newest[r.service] = DeployedInfo(
                    service=r.service, tag=r.tag, commit=r.commit, deployed_at=r.at,
                    requested_by=r.requested_by, approved_by=r.approved_by or "",
                )
        return sorted(newest.values(), key=lambda d: d.service)

    async def load(self, thread_id: str) -> Thread:
        try:
            return await self.service.get(thread_id)
        except Refused as e:
            raise ToolError(e.message) from None

    async def thread(self, thread_id: str, with_transcript: bool = True) -> ThreadInfo:
        return self.info(await self.load(thread_id), with_transcript)

    def info(self, thread: Thread, with_transcript: bool = True) -> ThreadInfo:
        now = self.clock()
        text = transcript.markdown(thread, self.secrets, now) if with_transcript else ""
        return agents.thread_info(thread, self.service.policy, now, text)

    async def get_thread(self, thread_id: str, ctx: Context | None) -> ThreadInfo:
        _, agent = await self.who(ctx)
        await self.note_read(thread_id, "get_thread", agent)
        return await self.thread(thread_id)

    async def wait_for_thread(self, thread_id: str, timeout_s: float, ctx: Context | None) -> ThreadInfo:
        """Until the status settles somewhere new (a deploy's brief `running` is passed
        over), or `timeout_s`; a progress notification every PROGRESS_EVERY seconds. A thread
        that is finished (done, failed, cancelled) is answered at once: nothing will change."""
        _, agent = await self.who(ctx)
        await self.note_read(thread_id, "wait_for_thread", agent, f"timeout_s={timeout_s:g}")
        timeout_s = min(max(timeout_s, 0.0), MAX_WAIT)
        start = time.monotonic()
        first = (await self.thread(thread_id, False)).status
        if first in FINISHED:
            return await self.thread(thread_id)
        said = start
        while True:
            now_info = await self.thread(thread_id, False)
            waited = time.monotonic() - start
            if (now_info.status != first and now_info.status != "running") or waited >= timeout_s:
                return await self.thread(thread_id)
            if ctx is not None and time.monotonic() - said >= PROGRESS_EVERY:
                said = time.monotonic()
                await ctx.report_progress(waited, timeout_s, f"thread {thread_id} is {now_info.status}")
            await asyncio.sleep(POLL_EVERY)

    # --- asking ------------------------------------------------------------------------------

    async def request_deploy(
        self, service: str, tag: str, environment: str, reason: str, ctx: Context | None, key: str | None = None
    ) -> ThreadInfo:
        who, agent = await self.who(ctx)
        name = self.service.policy.catalog.find(service) or service
        # Checked as the deploy step will be, before a thread is started for it.
        invalid = self.service.policy.invalid_deploy(DeployService(service=name, tag=tag, environment=environment))
        return await self._launch(
            who, agent, environment, invalid, commands.deploy_text(name, tag, environment, reason),
            "request_deploy", reason, key,
        )

    async def request_rollback(
        self, service: str, environment: str, reason: str, ctx: Context | None, key: str | None = None
    ) -> ThreadInfo:
        who, agent = await self.who(ctx)
        policy = self.service.policy
        name = policy.catalog.find(service) or service
        invalid = policy.catalog.invalid(name, environment) if environment in policy.environments \
            else wording.unknown_environment(environment, policy.environments)
        return await self._launch(
            who, agent, environment, invalid, commands.rollback_text(name, environment), "request_rollback", reason,
            key,
        )

    async def _launch(
        self, who: Identity, agent: Agent, environment: str, invalid: str | None, text: str, tool: str, reason: str,
        key: str | None,
    ) -> ThreadInfo:
        # Asked of the authority before a thread is started for it; the agent's limits are
        # asked by the service's launch, so they hold by the API too.
        refused = invalid or authority.why_not(self.service.policy, who, authority.Ask(environment))
        if refused:
            raise ToolError(refused)
        origin = Origin(channel=CHANNEL, notify=agent.notify)
        try:
            thread, new = await self._start(text, who, origin, tool, key)
        except Refused as e:
            raise ToolError(e.message) from None
        if new:  # a retry of the request is the same request: recorded and handed over once
            await self.note(thread.id, tool, agent, reason)
            await self.kick(thread.id)
        deadline = time.monotonic() + SETTLE_WITHIN
        info = await self.thread(thread.id, False)
        while info.status == "running" and time.monotonic() < deadline:
            await asyncio.sleep(POLL_EVERY)
            info = await self.thread(thread.id, False)
        return await self.thread(thread.id)

    async def _start(
        self, text: str, who: Identity, origin: Origin, tool: str, key: str | None
    ) -> tuple[Thread, bool]:
        """(the thread, whether it is new). With the agent's `key`, a retried request (its
        answer lost to a timeout) answers the first thread (bot/runtime/launch_once.py)."""
        if key is None:
            return await self.service.launch(text, who, channel=CHANNEL, origin=origin, evidence=tool), True
        launch_once.key_of(key, KEY)  # Invalid (refused) when it is no key
        return await launch_once.launch_once(
            self.service, text, who, key, KEY, channel=CHANNEL, origin=origin, evidence=tool
        )

    async def cancel_thread(self, thread_id: str, ctx: Context | None) -> ThreadInfo:
        who, agent = await self.who(ctx)
        try:  # the authority decides whether this agent may (only a thread it started)
            await self.service.cancel(thread_id, who, f"cancelled by {agent.name} (cancel_thread)")
        except Refused as e:
            raise ToolError(e.message) from None
        await self.note(thread_id, "cancel_thread", agent)
        await self.kick(thread_id)
        return await self.thread(thread_id)


def server(tools: Tools) -> MCPServer:
    """The MCP server: its tools take and return the pydantic models of bot/core/agents.py, so
    their JSON Schemas are those models'."""
    mcp: MCPServer = MCPServer("deploybot", instructions=INSTRUCTIONS)

    @mcp.tool(description="The services deploybot deploys, and where each may go.")
    async def list_services(ctx: Context) -> list[ServiceInfo]:
        return await tools.list_services(ctx)

    @mcp.tool(description="A service's tags (newest first): what can be deployed.")
    async def list_tags(service: str, ctx: Context) -> list[TagInfo]:
        return await tools.list_tags(service, ctx)

    @mcp.tool(description="What is deployed on an environment now: each service's newest successful deploy.")
    async def whats_on(environment: str, ctx: Context) -> list[DeployedInfo]:
        return await tools.whats_on(environment, ctx)

    @mcp.tool(description="Ask for a deploy of SERVICE at TAG to ENVIRONMENT, saying why. Starts a thread as a "
                          "chat request would; returns its status, the approval it waits for and who may decide. "
                          f"{KEY}: any key of yours; a retry with the same key answers the first thread.")
    async def request_deploy(
        service: str, tag: str, environment: str, reason: str, ctx: Context, idempotency_key: str | None = None
    ) -> ThreadInfo:
        return await tools.request_deploy(service, tag, environment, reason, ctx, idempotency_key)

    @mcp.tool(description="Ask to roll SERVICE in ENVIRONMENT back to what was deployed before it, saying why. "
                          f"{KEY}: as for request_deploy.")
    async def request_rollback(
        service: str, environment: str, reason: str, ctx: Context, idempotency_key: str | None = None
    ) -> ThreadInfo:
        return await tools.request_rollback(service, environment, reason, ctx, idempotency_key)

    @mcp.tool(description="A thread's status, the approval it waits for and who may decide, its deploy result, "
                          "a rejection's feedback, and its transcript in markdown.")
    async def get_thread(thread_id: str, ctx: Context) -> ThreadInfo:
        return await tools.get_thread(thread_id, ctx)

    @mcp.tool(description="Wait until a thread's status settles somewhere new (approved and deployed, rejected, "
                          "failed, ...) or timeout_s passes; sends progress notifications while it waits.")
    async def wait_for_thread(thread_id: str, ctx: Context, timeout_s: float = 60.0) -> ThreadInfo:
        return await tools.wait_for_thread(thread_id, timeout_s, ctx)

    @mcp.tool(description="Cancel a thread this agent started.")
    async def cancel_thread(thread_id: str, ctx: Context) -> ThreadInfo:
        return await tools.cancel_thread(thread_id, ctx)

    @mcp.resource("deploybot://threads/{thread_id}", mime_type="text/markdown",
                  description="A thread's transcript in markdown.")
    async def thread_transcript(thread_id: str, ctx: Context) -> str:
        await tools.who(ctx)
        return (await tools.thread(thread_id)).transcript

    return mcp


class WithMcp:
    """ASGI, inside the front door (bot/adapters/http/front_door.HttpLimits, which has resolved who is
    asking): /mcp goes to the MCP server, for agents only (anyone else: 401, or 403 for a
    person, before a byte of the body is read); every other path to `app`. The lifespan
    runs the MCP session manager around `app`'s."""

    def __init__(self, app: ASGIApp, mcp: MCPServer) -> None:
        self.app = app
        # No session state is kept between requests (stateless): any server behind a load
        # balancer can answer an agent, whose threads are in Redis anyway. DNS rebinding
        # protection is for cookie-less local servers a browser could reach: every request
        # here carries an agent's bearer token, which a rebinding page does not have.
        self.mcp = mcp.streamable_http_app(
            streamable_http_path=PATH, stateless_http=True,
            transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
        )
        self.manager = mcp.session_manager

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            async with self.manager.run():
                await self.app(scope, receive, send)
            return
        if scope["type"] != "http" or not (scope["path"] == PATH or scope["path"].startswith(PATH + "/")):
            await self.app(scope, receive, send)
            return
        identity: Any = scope.get("state", {}).get("identity")
        if getattr(identity, "via", None) != AGENT:
            status = 403 if getattr(identity, "known", False) else 401
            response = JSONResponse(refusal(wording.mcp_needs_agent_token()), status_code=status,
                                    headers={"WWW-Authenticate": "Bearer", "Connection": "close"})
            await response(scope, receive, send)
            return
        await self.mcp(scope, receive, send)


def refusal(text: str) -> dict[str, Any]:
    """A refusal as the API words it (`detail`) and as a JSON-RPC error too: an MCP client
    shows that error's message for the call it made, rather than a bare "401"."""
    return {"detail": text, "jsonrpc": "2.0", "id": None, "error": {"code": UNAUTHORIZED, "message": text}}
