"""Email: requests and replies in over HTTP (raw RFC 822), approvals and updates out by SMTP.

Inbound mail arrives as one raw message per POST, the form inbound-mail services deliver.
Approval replies carry a signed token (plus-addressed Reply-To, with a copy in the body)
bound to the approval, the approver's address and an expiry, because a From header alone
proves nothing. Sends run in the background with retries; one that keeps failing is
recorded on the thread.
"""

from __future__ import annotations

import asyncio
import base64
import hmac
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from email.message import EmailMessage

import aiosmtplib
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from bot.channels import email_parse as parse
from bot.channels import email_render as render
from bot.clock import utcnow
from bot.events import ApprovalRequested, DeliveryFailed, Event, new_id
from bot.policy import Policy
from bot.ports import Inbox
from bot.retry import retrying
from bot.service import Refused, ThreadService
from bot.stores import keys as names
from bot.thread import Origin, Thread

log = logging.getLogger(__name__)
SEEN_TTL = 30 * 24 * 3600  # a replayed Message-ID is refused for a month


@dataclass
class Smtp:
    host: str
    port: int
    username: str | None = None
    password: str | None = None
    tls: str = "starttls"  # none | starttls | tls
    backoff: Sequence[float] = (1, 2, 4, 8, 16)

    async def send(self, msg: EmailMessage) -> None:
        """Deliver, retrying connection failures and 4xx answers; raise the last error."""
        async for attempt in retrying(
            self.backoff, (aiosmtplib.SMTPException, OSError), f"SMTP send to {msg['To']}", log,
            give_up=_permanent,
        ):
            with attempt:
                await aiosmtplib.send(
                    msg, hostname=self.host, port=self.port, username=self.username,
                    password=self.password, use_tls=self.tls == "tls",
                    start_tls=True if self.tls == "starttls" else False, timeout=15,
                )


def _permanent(e: BaseException) -> bool:
    """A 5xx answer: the server will say the same again (unknown recipient, refused)."""
    return isinstance(e, aiosmtplib.SMTPResponseException) and e.code >= 500


@dataclass
class EmailChannel:
    service: ThreadService
    inbox: Inbox
    kick: Callable[[str], Awaitable[None]]
    smtp: Smtp
    sender: str  # EMAIL_FROM
    inbound_secret: str
    reply_secret: str
    allowed: frozenset[str]  # addresses and @domains that may start threads
    policy: Policy  # who may approve: the entries with an "@" are addresses to ask
    max_bytes: int = 1_000_000
    _sending: set[asyncio.Task[None]] = field(default_factory=set)

    # --- inbound ------------------------------------------------------------------------

    async def endpoint(self, request: Request) -> Response:
        if not self._authorized(request):
            return JSONResponse({"detail": "wrong or missing inbound secret"}, status_code=401)
        if int(request.headers.get("content-length") or 0) > self.max_bytes:
            return JSONResponse({"detail": f"larger than {self.max_bytes} bytes"}, status_code=413)
        raw = await request.body()
        if len(raw) > self.max_bytes:
            return JSONResponse({"detail": f"larger than {self.max_bytes} bytes"}, status_code=413)
        try:
            mail = parse.parse(raw)
        except parse.MalformedEmail as e:
            log.warning("email: refused a malformed message (%d bytes): %s", len(raw), e)
            return JSONResponse({"detail": f"malformed email: {e}"}, status_code=400)
        status, detail = await self.receive(mail)
        return JSONResponse({"status": status, "detail": detail})

    def _authorized(self, request: Request) -> bool:
        offered = request.query_params.get("secret") or ""
        auth = request.headers.get("authorization", "")
        if auth.startswith("Bearer "):
            offered = auth[7:]
        elif auth.startswith("Basic "):
            try:
                offered = base64.b64decode(auth[6:]).decode().partition(":")[2]
            except ValueError:
                return False
        return hmac.compare_digest(offered.encode(), self.inbound_secret.encode())

    async def receive(self, mail: parse.Inbound) -> tuple[str, str]:
        fresh, _, _ = await self.inbox.receive(names.EMAIL_INBOUND, mail.message_id, SEEN_TTL, None)
        if not fresh:
            return await self._refuse(mail, f"message {mail.message_id} was already received")
        try:
            return await self._handle(mail)
        except Exception:
            # A retry must not look like a replay.
            await self.inbox.forget(names.EMAIL_INBOUND, mail.message_id)
            raise

    async def _handle(self, mail: parse.Inbound) -> tuple[str, str]:
        if mail.token:
            return await self._decide(mail, mail.token)
        thread_id = await self._thread_of(mail)
        if not self._is_allowed(mail.sender):
            log.warning("email: ignored a message from %s, who is not an allowed sender", mail.sender)
            return "ignored", "not an allowed sender"
        if thread_id is None:
            return await self._start(mail)
        thread = await self.service.get(thread_id)
        if thread.pending_approval() and parse.decision(mail.text)[0]:
            return await self._refuse(mail, "an approval needs the approval code: reply to the approval email itself")
        try:
            await self.service.respond(thread_id, mail.text, mail.sender, channel="email")
        except Refused as e:
            return await self._refuse(mail, e.message, thread)
        await self.inbox.link(names.email_message(mail.message_id), thread_id)
        await self.kick(thread_id)
        return "accepted", thread_id

    async def _start(self, mail: parse.Inbound) -> tuple[str, str]:
        origin = Origin(
            channel="email", email_from=mail.sender, email_subject=mail.subject, email_root=mail.message_id,
        )
        thread = await self.service.launch(mail.text or mail.subject, mail.sender, "email", origin, new_id())
        await self.inbox.link(names.email_message(mail.message_id), thread.id)
        await self.kick(thread.id)
        return "accepted", thread.id

    async def _decide(self, mail: parse.Inbound, token: str) -> tuple[str, str]:
        try:
            approval_id = parse.check_token(self.reply_secret, token, mail.sender, utcnow())
        except parse.TokenError as e:
            return await self._refuse(mail, str(e))
        thread_id = await self.inbox.lookup(names.email_approval(approval_id))
        if thread_id is None:
            return await self._refuse(mail, "the approval code does not belong to any deploy")
        approve, feedback = parse.decision(mail.text)
        try:
            await self.service.respond(thread_id, feedback, mail.sender, approval_id, approve, "email")
        except Refused as e:
            return await self._refuse(mail, e.message, await self.service.get(thread_id))
        await self.inbox.link(names.email_message(mail.message_id), thread_id)
        await self.kick(thread_id)
        return "accepted", thread_id

    async def _thread_of(self, mail: parse.Inbound) -> str | None:
        for ref in mail.references:
            if thread_id := await self.inbox.lookup(names.email_message(ref)):
                return thread_id
        return None

    async def _refuse(self, mail: parse.Inbound, why: str, thread: Thread | None = None) -> tuple[str, str]:
        """Nothing is appended; an allowed sender is told why, anyone else only logged."""
        log.warning("email: refused %s from %s: %s", mail.message_id, mail.sender, why)
        if self._is_allowed(mail.sender) or self._is_approver(mail.sender):
            note = render.message(
                self.sender, mail.sender, render.reply_subject(mail.subject),
                f"I did not act on your message: {why}.", in_reply_to=mail.message_id,
            )
            self._spawn(thread, note)
        return "refused", why

    def _is_allowed(self, address: str) -> bool:
        return address in self.allowed or f"@{address.rpartition('@')[2]}" in self.allowed

    def _is_approver(self, address: str) -> bool:
        return self.policy.is_named_approver(address)

    # --- outbound -----------------------------------------------------------------------

    async def publish(self, thread: Thread, new: Sequence[Event]) -> None:
        for event in new:
            if isinstance(event, ApprovalRequested):
                await self._ask_approvers(thread, event)
            if thread.origin.channel == "email" and (text := render.text_for(thread, event)):
                await self._reply(thread, text)

    async def _reply(self, thread: Thread, text: str) -> None:
        origin = thread.origin
        msg = render.message(
            self.sender, origin.email_from or "", render.reply_subject(origin.email_subject or ""),
            text, in_reply_to=origin.email_root,
        )
        await self.inbox.link(names.email_message(msg["Message-ID"]), thread.id)
        self._spawn(thread, msg)

    async def _ask_approvers(self, thread: Thread, request: ApprovalRequested) -> None:
        people = {p for p in self.policy.approvers_for(request.environment) if "@" in p}
        if not people:
            return
        await self.inbox.link(names.email_approval(request.approval_id), thread.id)
        local, _, domain = self.sender.partition("@")
        from_email = thread.origin.channel == "email"
        subject = (
            render.reply_subject(thread.origin.email_subject or "") if from_email
            else f"Approve deploy: {request.service} {request.tag} to {request.environment}?"
        )
        for person in sorted(people):
            token = parse.make_token(self.reply_secret, request.approval_id, person, request.expires_at)
            msg = render.message(
                self.sender, person, subject, render.approval_text(request, token),
                reply_to=f"{local}+{token}@{domain}",
                in_reply_to=thread.origin.email_root if from_email else None,
            )
            await self.inbox.link(names.email_message(msg["Message-ID"]), thread.id)
            self._spawn(thread, msg)

    def _spawn(self, thread: Thread | None, msg: EmailMessage) -> None:
        task = asyncio.create_task(self._deliver(thread, msg))
        self._sending.add(task)
        task.add_done_callback(self._sending.discard)

    async def _deliver(self, thread: Thread | None, msg: EmailMessage) -> None:
        try:
            await self.smtp.send(msg)
        except Exception as e:  # the thread keeps its events; the failure is recorded beside them
            log.error("email to %s could not be delivered: %s", msg["To"], e)
            if thread is not None:
                await self._record_failure(thread, str(msg["To"]), f"{type(e).__name__}: {e}")

    async def _record_failure(self, thread: Thread, to: str, reason: str) -> None:
        await self.service.record(thread.id, [DeliveryFailed(channel="email", to=to, reason=reason[:300])])

    async def drain(self) -> None:
        while self._sending:
            await asyncio.gather(*list(self._sending), return_exceptions=True)
