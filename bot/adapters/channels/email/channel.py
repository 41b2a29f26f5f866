"""Email: requests and replies in over HTTP (raw RFC 822), approvals and updates out by SMTP.

Inbound mail arrives as one raw message per POST, the form inbound-mail services deliver.
Approval emails go to the addresses of each approver the authority lets decide (the directory's
addresses of the people who may approve, and addresses APPROVER_EMAILS lists for nobody; with
approver_must_differ, never whoever asked).
Their replies carry a signed token (plus-addressed Reply-To, with a copy in the body) bound
to the approval, that address and an expiry, because a From header alone proves nothing: a
valid token proves the address, which is its person's (`directory.by_email`), so alice's
decision by email is alice's as much as her click in Slack. Without a valid token, mail from
an approver's address is recorded as feedback from an "unverified sender", who is nobody,
never as a decision, and only when the address is also an allowed sender (else it is
ignored). A reply without a token that would decide the pending approval (its sender may
decide it) is refused, whoever it claims to be from. Nothing is read or written for a
stranger's mail, nor for automatic mail (out-of-office replies, bounces), and every header
that becomes a key or a lookup is bounded. Sends run in the background with retries; one
that cannot be built, or keeps failing, is a log line and a delivery_failed event on the
thread.

A new email (or a reply without a token) is its From's person only when proven: the
receiving mail server's topmost Authentication-Results (an authserv-id of
EMAIL_TRUSTED_AUTHSERV_IDS saying DMARC pass for the From domain, or DKIM pass aligned with it:
`email_auth.proven_by`), for a domain of EMAIL_MAILBOX_AUTHENTICATED_DOMAINS (elsewhere a
verdict proves the domain, not the mailbox). An unproven new request is recorded as an
unverified sender's and waits (`waiting_for_sender`), with no powers, until the person it names
answers "Did you send this?", mailed to their stored address with a confirmation code signed as
such (it never decides an approval, nor confirms in a reply to another thread's mail), or it
expires. One such request waits per claimed sender, who is asked at most once per
CONFIRMATION_EVERY; any other is refused unanswered. An unproven reply is an unverified
sender's.

An approval goes on in each approval email's thread (its Message-ID is derived from the
approval and the address, so nothing is stored for it): reminders and, while it needs more
approvals, progress lines, each with its own approval code so a reply to it decides too; a
note when it expired. An escalation mails each of its people an approval email of their own.
A reply whose genuine approval code lapsed is told the request expired.
"""

from __future__ import annotations

import asyncio
import base64
import dataclasses
import functools
import hmac
import logging
import math
import re
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from email.message import EmailMessage

import aiosmtplib
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from bot.adapters.channels.deliveries import Deliveries
from bot.adapters.channels.email import parse, render, reply, tokens
from bot.adapters.channels.email.auth import proven_by
from bot.adapters.channels.email.decision import decision
from bot.adapters.redis import keys as names
from bot.core import authority, standing, wording
from bot.core.commands import is_approval
from bot.core.events import (
    ApprovalEscalated,
    ApprovalExpired,
    ApprovalReminded,
    ApprovalRequested,
    Event,
    HumanResponse,
    SenderConfirmationRequested,
    SenderConfirmed,
    UserMessage,
    new_id,
    principal_of,
)
from bot.core.people import ANYONE, EMAIL, Identity, describe, identity_for, normalize_email
from bot.core.policy import Policy
from bot.core.thread import Origin, Thread
from bot.core.triggers import email_targets
from bot.runtime.clock import utcnow
from bot.runtime.ports import Inbox
from bot.runtime.retry import retrying
from bot.runtime.service import Refused, ThreadService

log = logging.getLogger(__name__)
SEEN_TTL = 30 * 24 * 3600  # a replayed Message-ID is refused for a month
MAX_MESSAGE_ID = render.MAX_MESSAGE_ID  # characters; a longer one is refused (it would be a key)
MAX_ADDRESS = render.MAX_ADDRESS  # a longer From address is nobody we know
MAX_SUBJECT = 998  # kept of an inbound subject (it is stored with the thread)
SENT_TTL = 30 * 24 * 3600  # what a sent mail said is kept a month: replies are read against it
MAX_SENT_LOOKUPS = 3  # references looked up for the mail a reply answers (In-Reply-To first)
# Seconds: at most one "Did you send this?" to an address in this time. Anyone can write the
# address in a From, and each unproven request would mail it.
CONFIRMATION_EVERY = 10 * 60


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
    policy: Policy  # the rules the authority answers by: whose addresses to ask
    max_bytes: int = 1_000_000
    trusted_authserv_ids: frozenset[str] = frozenset()  # EMAIL_TRUSTED_AUTHSERV_IDS
    mailbox_authenticated_domains: frozenset[str] = frozenset()  # EMAIL_MAILBOX_AUTHENTICATED_DOMAINS
    _deliveries: Deliveries = field(init=False)

    def __post_init__(self) -> None:
        self._deliveries = Deliveries("email", self.service.record)

    # --- inbound ------------------------------------------------------------------------
    #
    # In this order: the inbound secret, the parse (in a thread: a big MIME message must not
    # hold up the event loop, which also serves Slack acknowledgements and lease renewals),
    # who sent it (an allowed sender, an approver, or a valid reply token), and only then
    # anything that reads or writes the store. A stranger's mail leaves nothing behind.

    async def endpoint(self, request: Request) -> Response:
        if not self._authorized(request):
            return JSONResponse({"detail": "wrong or missing inbound secret"}, status_code=401)
        if int(request.headers.get("content-length") or 0) > self.max_bytes:
            return JSONResponse({"detail": f"larger than {self.max_bytes} bytes"}, status_code=413)
        raw = await request.body()
        if len(raw) > self.max_bytes:
            return JSONResponse({"detail": f"larger than {self.max_bytes} bytes"}, status_code=413)
        try:
            mail = await asyncio.to_thread(parse.read, raw)
        except parse.MalformedEmail as e:
            log.warning("email: refused a malformed message (%d bytes): %s", len(raw), _short(str(e)))
            return JSONResponse({"detail": f"malformed email: {_short(str(e))}"}, status_code=400)
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
        mail = bounded(mail)
        if mail.automatic:
            # An out-of-office reply or a bounce is no feedback, and answering it could loop
            # (the bot mails the thread's starter on every event): nothing is stored or sent.
            log.info("email: ignored an automatic message from %s (%s)", _short(mail.sender), mail.automatic)
            return "ignored", f"an automatic message ({mail.automatic})"
        # Who sent it, before anything is read or written: a stranger is only logged.
        approval_id, token_error = self._check_token(mail)
        # A confirmation code ("Did you send this?") is signed as one: it never decides.
        confirmation, confirmation_error = self._confirmation(mail) if token_error else (None, None)
        token_error = None if confirmation else confirmation_error or token_error
        # A genuine approval code that only lapsed proves the address as well as a valid one
        # (someone an approval was escalated to is no approver): they are told it expired.
        lapsed = self._lapsed(mail) if token_error else None
        known = self._is_allowed(mail.sender) or self._is_approver(mail.sender)
        if len(mail.sender) > MAX_ADDRESS or not (approval_id or confirmation or lapsed or known):
            log.warning("email: ignored a message from %s, who is not an allowed sender: %s",
                        _short(mail.sender), token_error or "no valid approval code")
            return ("refused", token_error) if token_error else ("ignored", "not an allowed sender")
        if mail.token is None and not self._is_allowed(mail.sender):
            # An approver's address without an approval code: only replies to approval emails
            # are taken from it (a From header alone proves nothing).
            log.warning("email: ignored a message from %s without an approval code", mail.sender)
            return "ignored", "not an allowed sender"
        if mail.cut:
            log.info("email: cut oversize headers of %s: %s", _short(mail.message_id), "; ".join(mail.cut))
        if not mail.message_id or len(mail.message_id) > MAX_MESSAGE_ID:
            return await self._refuse(mail, f"its Message-ID is empty or longer than {MAX_MESSAGE_ID} characters")
        # A replay is caught before anything else is said about the message: each copy of a
        # refused one would otherwise be refused (and answered) as if it were new.
        fresh, _, _ = await self.inbox.receive(names.EMAIL_INBOUND, mail.message_id, SEEN_TTL, None)
        if not fresh:
            return await self._refuse(mail, f"message {mail.message_id} was already received")
        mail = await asyncio.to_thread(reply.reread, mail, await self._sent(mail, approval_id or lapsed))
        try:
            if mail.refusal:  # e.g. an approval from HTML-only mail, which can hide what it says
                return await self._refuse(mail, mail.refusal)
            if lapsed:
                return await self._too_late(mail, lapsed, token_error or "the approval code has expired")
            if confirmation:
                return await self._confirm(mail, confirmation)
            return await self._handle(mail, approval_id, token_error)
        except Exception:
            # A retry must not look like a replay.
            await self.inbox.forget(names.EMAIL_INBOUND, mail.message_id)
            raise

    async def _sent(self, mail: parse.Inbound, approval_id: str | None) -> reply.Sent | None:
        """What the bot said in the mail `mail` answers (by In-Reply-To/References, then the
        approval email its code is for), so its new text is found by it; None when none is
        kept (the reply is read by the language-independent rules alone)."""
        refs = list(mail.references[:MAX_SENT_LOOKUPS])
        if approval_id:
            refs.append(render.approval_message_id(approval_id, mail.sender, self.sender))
        try:
            for ref in refs:
                if sent := reply.Sent.loads(await self.inbox.lookup(names.email_sent(ref))):
                    return sent
        except Exception:  # read without it rather than not at all
            log.exception("email: could not look up the mail %s answers", _short(mail.message_id))
        return None

    def _check_token(self, mail: parse.Inbound) -> tuple[str | None, str | None]:
        """(approval id, None) for a valid reply token; (None, why) for an invalid one."""
        if not mail.token:
            return None, None
        try:
            return tokens.check_token(self.reply_secret, mail.token, mail.sender, utcnow()), None
        except tokens.TokenError as e:
            return None, str(e)

    def _confirmation(self, mail: parse.Inbound) -> tuple[str | None, str | None]:
        """(confirmation id, None) when `mail`'s token is a valid confirmation code (signed for
        this sender, not expired); (None, why) for a genuine one that expired; else (None, None)."""
        try:
            return tokens.check_token(
                self.reply_secret, mail.token or "", mail.sender, utcnow(), tokens.CONFIRMATION,
            ), None
        except tokens.TokenError as e:
            return None, str(e) if str(e).endswith("has expired") else None

    def _lapsed(self, mail: parse.Inbound) -> str | None:
        """The approval id of `mail`'s token when it is genuine (signed for this sender) and
        only past its expiry; else None."""
        if not mail.token:
            return None
        expires = mail.token.partition(".")[2].partition(".")[0]
        if not (expires.isascii() and expires.isdigit() and len(expires) <= 12):
            return None
        try:
            at = datetime.fromtimestamp(int(expires), UTC)
            return tokens.check_token(self.reply_secret, mail.token, mail.sender, at)
        except (tokens.TokenError, ValueError, OverflowError, OSError):
            return None

    async def _too_late(self, mail: parse.Inbound, approval_id: str, token_error: str) -> tuple[str, str]:
        """A reply with a lapsed approval code: the sender is told the request is closed (it
        expired, nothing was deployed; or who decided it), never recorded."""
        thread_id = await self.inbox.lookup(names.email_approval(approval_id))
        thread = None
        if thread_id is not None:
            try:
                thread = await self.service.get(thread_id)
            except Refused:
                thread = None
        why = closed(thread, approval_id) if thread is not None else None
        return await self._refuse(mail, why or token_error, thread, tell=True)

    async def _handle(self, mail: parse.Inbound, approval_id: str | None, token_error: str | None) -> tuple[str, str]:
        if approval_id:
            return await self._decide(mail, approval_id)
        if token_error:
            return await self._refuse(mail, token_error)
        thread_id = await self._thread_of(mail)
        if thread_id is None:
            return await self._start(mail)
        try:
            thread = await self.service.get(thread_id)
        except Refused as e:
            return await self._refuse(mail, e.message)
        pending = thread.pending_approval()
        if pending and decision(mail.text)[0]:
            return await self._refuse(mail, "an approval needs the approval code: reply to the approval email itself")
        # Without a valid reply token the From header is a claim, and anyone can write it: an
        # unproven sender is nobody (see `_proven`).
        who = self._sender(mail) if await self._proven(mail) else unverified_identity(mail.sender)
        open_approval = thread.pending_approval(self.service.clock())
        if open_approval and authority.why_not(self.policy, who, authority.Decide(thread, open_approval)) is None:
            # Feedback from someone who may decide is a rejection (anyone may, where the
            # approvers are "*"): a forged From must not reject it. Once the approval has
            # lapsed, a reply only closes what can no longer be approved (see the service).
            return await self._refuse(
                mail, "without the approval code a message cannot decide an approval: "
                "reply to the approval email itself", thread,
            )
        try:
            await self.service.respond(thread_id, mail.text, who, channel="email", evidence=evidence(mail))
        except Refused as e:
            return await self._refuse(mail, e.message, thread)
        await self.inbox.link(names.email_message(mail.message_id), thread_id, thread_id)
        await self.kick(thread_id)
        return "accepted", thread_id

    async def _start(self, mail: parse.Inbound) -> tuple[str, str]:
        if not (mail.text or mail.subject).strip():
            return await self._refuse(
                mail, "the email has neither a subject nor any new text: say what should be deployed",
            )
        origin = Origin(
            channel="email", email_from=mail.sender, email_subject=mail.subject, email_root=mail.message_id,
        )
        text = mail.text or mail.subject
        if not await self._proven(mail):
            return await self._start_unconfirmed(mail, origin, text)
        thread = await self.service.launch(text, self._sender(mail), "email", origin, new_id(), evidence(mail))
        return await self._started(mail, thread.id)

    async def _start_unconfirmed(self, mail: parse.Inbound, origin: Origin, text: str) -> tuple[str, str]:
        """Nothing proved the From: the request is recorded as an unverified sender's (no
        powers) and waits until the person it names confirms it from their mailbox. Anyone can
        write their address, so one request waits per address and it is asked at most once per
        CONFIRMATION_EVERY: any other is refused, stored nowhere, and answered to nobody (an
        answer would go to the address the limits protect)."""
        asked = self._confirmation_request(mail, text)
        address = normalize_email(asked.address)
        if why := await self._hold(address, asked.expires_at):
            log.warning("email: refused %s from %s, unanswered: %s", _short(mail.message_id), _short(mail.sender), why)
            return "refused", why
        try:
            thread = await self.service.launch(
                text, unverified_identity(mail.sender), "email", origin, new_id(), evidence(mail), then=[asked],
            )
        except BaseException:  # nothing waits, and nobody was asked
            await self._release(address, asked_too=True)
            raise
        return await self._started(mail, thread.id)

    async def _started(self, mail: parse.Inbound, thread_id: str) -> tuple[str, str]:
        await self.inbox.link(names.email_message(mail.message_id), thread_id, thread_id)
        await self.kick(thread_id)
        return "accepted", thread_id

    async def _hold(self, address: str, until: datetime) -> str | None:
        """Mark `address` as waiting on a confirmation until `until` and as asked now, in the
        Inbox (so every web process sees it); None when both were free, else why not (and
        nothing is held)."""
        waits = max(1, math.ceil((until - self.service.clock()).total_seconds()))
        free, _, _ = await self.inbox.receive(names.EMAIL_UNCONFIRMED, address, waits, None)
        if not free:
            return wording.sender_confirmation_waiting()
        askable, _, _ = await self.inbox.receive(names.EMAIL_CONFIRMATIONS_MAILED, address, CONFIRMATION_EVERY, None)
        if not askable:
            await self._release(address)
            return wording.sender_asked_recently(CONFIRMATION_EVERY // 60)
        return None

    async def _release(self, address: str, asked_too: bool = False) -> None:
        """`address` waits on no confirmation any more; with `asked_too`, it was not asked either."""
        await self.inbox.forget(names.EMAIL_UNCONFIRMED, address)
        if asked_too:
            await self.inbox.forget(names.EMAIL_CONFIRMATIONS_MAILED, address)

    async def _proven(self, mail: parse.Inbound) -> bool:
        """Whether the receiving mail server proved that `mail` comes from its From's mailbox:
        its verdict (an Authentication-Results header of EMAIL_TRUSTED_AUTHSERV_IDS) proves
        the domain, which is the mailbox only where the domain lets nobody send as another
        (EMAIL_MAILBOX_AUTHENTICATED_DOMAINS); elsewhere a colleague, a relay or a SaaS sender
        signs for the domain as well. Else the From is a claim: anyone who can send mail can
        write any address there. In a thread, as the MIME parse: the header parser is
        superlinear, and the event loop serves everyone."""
        if mail.sender.rpartition("@")[2] not in self.mailbox_authenticated_domains:
            return False
        server = await asyncio.to_thread(proven_by, mail.auth_results, mail.sender, self.trusted_authserv_ids)
        return server is not None

    def _confirmation_request(self, mail: parse.Inbound, text: str) -> SenderConfirmationRequested:
        """Ask the person the From names (at their stored address; an allowed sender who is
        no person at the address itself) whether they sent it."""
        who = self._sender(mail)
        person = self.service.directory.people.get(who.person) if who.person else None
        stored = [a for a in (person.emails if person else ()) if normalize_email(a) == mail.sender]
        return SenderConfirmationRequested(
            address=(stored or [mail.sender])[0], claimed=who.principal, text=text,
            expires_at=self.service.clock() + self.policy.approval_ttl,
        )

    async def _confirm(self, mail: parse.Inbound, confirmation_id: str) -> tuple[str, str]:
        """A reply to "Did you send this?" from the mailbox it went to: an approval word
        confirms, and the request goes on as the person; anything else confirms nothing. The
        code confirms only the request it was sent for: a reply to another thread's mail that
        carries it is refused (its YES was said about something else)."""
        thread_id = await self.inbox.lookup(names.email_confirmation(confirmation_id))
        if thread_id is None:
            return await self._refuse(mail, "the confirmation code does not belong to any request", tell=True)
        try:
            thread = await self.service.get(thread_id)
        except Refused as e:  # gone since (retention)
            return await self._refuse(mail, e.message, tell=True)
        replied_to = await self._thread_of(mail)
        if replied_to is not None and replied_to != thread_id:
            return await self._refuse(mail, wording.confirmation_for_another_request(), thread, tell=True)
        if not is_approval(mail.text):
            return await self._refuse(mail, wording.sender_not_confirmed(), thread, tell=True)
        try:
            await self.service.confirm_sender(
                thread_id, confirmation_id, self.service.directory.by_email(mail.sender), evidence(mail),
            )
        except Refused as e:
            return await self._refuse(mail, e.message, thread, tell=True)
        try:  # confirmed: nothing waits for them now (they are asked again once the window lapses)
            await self._release(mail.sender)
        except Exception:  # it lapses with the confirmation anyway
            log.exception("email: could not release the confirmation of %s", _short(mail.sender))
        await self.inbox.link(names.email_message(mail.message_id), thread_id, thread_id)
        await self.kick(thread_id)
        return "accepted", thread_id

    async def _decide(self, mail: parse.Inbound, approval_id: str) -> tuple[str, str]:
        # The token from the address the reply was sent to wins (the parser prefers it);
        # a code for another approval in the new text makes the message ambiguous.
        others = {code.partition(".")[0] for code in re.findall(rf"\b{tokens.TOKEN}\b", mail.text)} - {approval_id}
        if others:
            return await self._refuse(
                mail, "it carries the approval code of another deploy: reply to each approval email on its own",
            )
        thread_id = await self.inbox.lookup(names.email_approval(approval_id))
        if thread_id is None:
            return await self._refuse(mail, "the approval code does not belong to any deploy")
        replied_to = await self._thread_of(mail)
        if replied_to is not None and replied_to != thread_id:
            return await self._refuse(mail, "the approval code is for another deploy than the email you replied to")
        if not mail.text.strip():  # only the quoted approval email, or HTML that shows nothing
            return await self._refuse(
                mail, "the reply has no text of its own: reply approve, or say what should change",
            )
        approve, feedback = decision(mail.text)
        try:
            # The token proved the address: its person decides.
            await self.service.respond(
                thread_id, feedback, self._sender(mail), approval_id, approve, "email", evidence=evidence(mail),
            )
        except Refused as e:  # the valid code proves the address: they are told, whoever they are
            return await self._refuse(mail, e.message, await self.service.get(thread_id), tell=True)
        await self.inbox.link(names.email_message(mail.message_id), thread_id, thread_id)
        await self.kick(thread_id)
        return "accepted", thread_id

    async def _thread_of(self, mail: parse.Inbound) -> str | None:
        """The thread of the newest referenced message the bot knows, In-Reply-To first: at
        most parse.MAX_REFERENCES lookups (the parser keeps no more)."""
        for ref in mail.references:
            if thread_id := await self.inbox.lookup(names.email_message(ref)):
                return thread_id
        return None

    async def _refuse(
        self, mail: parse.Inbound, why: str, thread: Thread | None = None, tell: bool = False
    ) -> tuple[str, str]:
        """Nothing is appended; an allowed sender (or, with `tell`, one whose approval code
        proved the address) is told why, anyone else only logged."""
        log.warning("email: refused %s from %s: %s", _short(mail.message_id), _short(mail.sender), why)
        if tell or self._is_allowed(mail.sender) or self._is_approver(mail.sender):
            await self._send(thread, mail.sender, lambda: render.message(
                self.sender, mail.sender, render.reply_subject(mail.subject),
                f"I did not act on your message: {why}.", in_reply_to=mail.message_id,
            ), link=False)
        return "refused", why

    def _is_allowed(self, address: str) -> bool:
        return address in self.allowed or f"@{address.rpartition('@')[2]}" in self.allowed

    def _sender(self, mail: parse.Inbound) -> Identity:
        """The person whose address sent `mail` (unknown: `email:<address>`): who the From
        claims. Only a valid reply token, a trusted server's verdict (`_proven`) or a confirmed
        round trip proves it; never good for deciding without a token."""
        return self.service.directory.by_email(mail.sender)

    def _approver_addresses(self) -> frozenset[str]:
        return frozenset(
            address for environment in self.policy.environments
            for address in self._addresses(self.policy.rules_for(environment).approvers)
        )

    def _is_approver(self, address: str) -> bool:
        """Whether approval emails go to `address`, for any environment."""
        return normalize_email(address) in self._approver_addresses()

    # --- outbound -----------------------------------------------------------------------
    #
    # A mail that cannot be built or sent is a log line and a delivery_failed event on its
    # thread; it never stops the other mails of the same event.

    async def publish(self, thread: Thread, new: Sequence[Event]) -> None:
        for event in new:
            if isinstance(event, ApprovalRequested):
                await self._ask_approvers(thread, event)
            elif isinstance(event, SenderConfirmationRequested):
                await self._ask_sender(thread, event)
            else:
                await self._approval_thread(thread, event)
            if thread.origin.channel == "email":
                await self._reply(thread, event)
            for address in email_targets(thread.origin.notify):
                await self._notify(thread, event, address)

    def text_for(self, thread: Thread, event: Event) -> str | None:
        """What the requester (and a notify target) is told of `event` by email: a reminder
        names who may still decide; else render.text_for."""
        match event:
            case ApprovalReminded():
                request = thread.pending_approval()
                if request is None or request.approval_id != event.approval_id:
                    return None
                return wording.reminder(_what(request), self._deciders(thread, request), request.expires_at)
            case ApprovalEscalated():
                request = thread.approval(event.approval_id)
                return wording.escalated(_what(request), describe(event.to)) if request else None
            case SenderConfirmationRequested():
                return None  # the confirmation mail itself says it
            case SenderConfirmed():
                return wording.sender_confirmed()
        return render.text_for(thread, event)

    async def _notify(self, thread: Thread, event: Event, address: str) -> None:
        """A notify target's mail (a trigger's, a schedule's): the thread's first message,
        then its updates as a requester gets them, all in one mail thread."""
        first = next((e for e in thread.events if isinstance(e, UserMessage)), None)
        if isinstance(event, UserMessage):
            text = wording.started_by(event.channel, event.user, event.text) if event is first else None
        else:
            text = self.text_for(thread, event)
        if not text:
            return
        name = names.email_notify_root(thread.id, address)
        try:
            root = await self.inbox.lookup(name)
        except Exception:
            log.exception("thread %s: could not look up the mail thread of %s", thread.id, _short(address))
            root = None
        subject = f"deploybot: {first.text if first else thread.id}"
        if root:
            subject = render.reply_subject(subject)

        def build() -> EmailMessage:
            msg = render.message(self.sender, address, subject, text, in_reply_to=root)
            if root is None:
                built.append(str(msg["Message-ID"]))
            return msg

        built: list[str] = []
        await self._send(thread, address, build)
        if built:
            await self.inbox.link(name, built[0], thread.id)

    async def _reply(self, thread: Thread, event: Event) -> None:
        origin = thread.origin

        def build() -> EmailMessage | None:
            text = self.text_for(thread, event)
            if not text:
                return None
            return render.message(
                self.sender, origin.email_from or "", render.reply_subject(origin.email_subject or ""),
                text, in_reply_to=origin.email_root,
            )

        await self._send(thread, origin.email_from or "", build)

    async def _ask_sender(self, thread: Thread, asked: SenderConfirmationRequested) -> None:
        """"Did you send this?" to the address the request named, with a confirmation code
        (signed as one: it cannot decide an approval) in Reply-To and the body."""
        await self.inbox.link(names.email_confirmation(asked.confirmation_id), thread.id, thread.id)
        local, _, domain = self.sender.partition("@")

        def build() -> EmailMessage:
            token = tokens.make_token(
                self.reply_secret, asked.confirmation_id, asked.address, asked.expires_at, tokens.CONFIRMATION,
            )
            return render.message(
                self.sender, asked.address, render.reply_subject(thread.origin.email_subject or ""),
                render.confirmation_text(asked, token, CONFIRMATION_EVERY // 60), reply_to=f"{local}+{token}@{domain}",
                in_reply_to=thread.origin.email_root,
            )

        await self._send(thread, asked.address, build)

    async def _ask_approvers(self, thread: Thread, request: ApprovalRequested) -> None:
        """One email to each approver's address (a Slack-only approver gets none), each with
        a reply token bound to that address."""
        await self._ask(thread, request, self._approver_mail_addresses(thread, request))

    async def _ask(self, thread: Thread, request: ApprovalRequested, addresses: Iterable[str], intro: str = "") -> None:
        addresses = sorted(set(addresses))
        if not addresses:
            return
        await self.inbox.link(names.email_approval(request.approval_id), thread.id, thread.id)
        for address in addresses:
            await self._send(thread, address, functools.partial(self._approval_mail, thread, request, address, intro))

    def _approval_subject(self, thread: Thread, request: ApprovalRequested) -> str:
        if thread.origin.channel == "email":
            return render.reply_subject(thread.origin.email_subject or "")
        return f"Approve deploy: {request.service} {request.tag} to {request.environment}?"

    def _approval_mail(
        self, thread: Thread, request: ApprovalRequested, address: str, intro: str = ""
    ) -> EmailMessage:
        local, _, domain = self.sender.partition("@")
        from_email = thread.origin.channel == "email"
        token = tokens.make_token(self.reply_secret, request.approval_id, address, request.expires_at)
        return render.message(
            self.sender, address, self._approval_subject(thread, request), render.approval_text(request, token, intro),
            reply_to=f"{local}+{token}@{domain}",
            in_reply_to=thread.origin.email_root if from_email else None,
            own_id=render.approval_message_id(request.approval_id, address, self.sender),
        )

    # --- an approval over time, in each approver's approval email thread ------------------

    async def _approval_thread(self, thread: Thread, event: Event) -> None:
        """Follow-ups to whoever got an approval email: a reminder (those who may still
        decide), an escalation (an approval email of their own to each new person), each
        approval of several (a progress line) and its expiry (nothing was deployed)."""
        match event:
            case ApprovalReminded():
                request = thread.pending_approval()
                if request is None or request.approval_id != event.approval_id:
                    return
                stands = standing.of(thread, request, self.policy)
                text = wording.reminder(_what(request), describe(stands.deciders or ()), request.expires_at)
                await self._follow_up(thread, request, self._still_asked(thread, stands), text, decide=True)
            case ApprovalEscalated():
                found = standing.find(thread, event.approval_id)
                if found is None or found.closed:
                    return
                request = found.request
                asked = self._approver_mail_addresses(thread, request)
                new = [a for a in self._addresses(self._deciding(thread, request, event.to)) if a not in asked]
                await self._ask(thread, request, new, wording.escalated_to_you(_what(request), request.expires_at))
            case HumanResponse(approve=True) if event.approval_id:
                found = standing.find(thread, event.approval_id)
                if found is None or found.required <= 1 or found.decision is not None:
                    return
                text = render.progress_text(found)
                await self._follow_up(thread, found.request, self._still_asked(thread, found), text, decide=True)
            case ApprovalExpired():
                request = thread.approval(event.approval_id)
                if request is None:
                    return
                what = _what(request)
                text = f"{wording.approval_expired_notice(what, event.expires_at)}\n\n{wording.no_longer_asked(what)}"
                await self._follow_up(thread, request, self._asked(thread, request), text, decide=False)

    async def _follow_up(
        self, thread: Thread, request: ApprovalRequested, addresses: Iterable[str], text: str, decide: bool
    ) -> None:
        """A mail to each address in its approval email thread; with `decide`, its own
        approval code, so a reply to it decides as one to the approval email would."""
        local, _, domain = self.sender.partition("@")
        subject = render.reply_subject(self._approval_subject(thread, request))

        def build(address: str) -> EmailMessage:
            token = tokens.make_token(self.reply_secret, request.approval_id, address, request.expires_at)
            return render.message(
                self.sender, address, subject, render.follow_up_text(text, token) if decide else text,
                reply_to=f"{local}+{token}@{domain}" if decide else None,
                in_reply_to=render.approval_message_id(request.approval_id, address, self.sender),
            )

        for address in sorted(set(addresses)):
            await self._send(thread, address, functools.partial(build, address))

    def _approver_mail_addresses(self, thread: Thread, request: ApprovalRequested) -> list[str]:
        """The addresses of the environment's approvers who may decide on `request` (the
        authority's answer: with approver_must_differ, never whoever asked for it)."""
        return self._addresses(self._deciding(thread, request, self.policy.rules_for(request.environment).approvers))

    def _deciding(self, thread: Thread, request: ApprovalRequested, principals: Iterable[str]) -> list[str]:
        """Those of `principals` the authority lets decide on `request` (`*` is nobody's address)."""
        decide = authority.Decide(thread, request)
        return [p for p in principals
                if p != ANYONE and authority.why_not(self.policy, identity_for(p), decide) is None]

    def _addresses(self, principals: Iterable[str]) -> list[str]:
        """The addresses of people (principals): a person's own, or an `email:<address>`."""
        found: set[str] = set()
        for principal in principals:
            person = self.policy.directory.people.get(principal)
            if person is not None:
                found |= set(person.emails)
            elif principal.startswith(f"{EMAIL}:"):
                found.add(normalize_email(principal.removeprefix(f"{EMAIL}:")))
        return sorted(found)

    def _asked(self, thread: Thread, request: ApprovalRequested) -> list[str]:
        """Every address that got an approval email for `request`."""
        escalated_to = standing.of(thread, request).escalated_to
        escalated = self._addresses(self._deciding(thread, request, escalated_to))
        return sorted({*self._approver_mail_addresses(thread, request), *escalated})

    def _still_asked(self, thread: Thread, found: standing.Standing) -> list[str]:
        """The addresses asked whose person has not approved yet (one of several)."""
        approved = {principal_of(a) for a in found.given}
        directory = self.policy.directory
        return [a for a in self._asked(thread, found.request) if directory.by_email(a).principal not in approved]

    def _deciders(self, thread: Thread, request: ApprovalRequested) -> str:
        """Who may still decide on `request`, in words."""
        return describe(standing.of(thread, request, self.policy).deciders or ())

    async def _send(
        self, thread: Thread | None, to: str, build: Callable[[], EmailMessage | None], link: bool = True
    ) -> None:
        """Build one mail and hand it to a sending task; with `link`, replies to it find the
        thread. A mail that cannot be built is recorded as not delivered."""
        try:
            msg = build()
        except Exception as e:
            log.exception("email to %s could not be built", _short(to))
            if thread is not None:
                await self._failed(thread, to, f"could not build the email: {type(e).__name__}: {e}")
            return
        if msg is None:
            return
        if link and thread is not None:
            try:
                await self.inbox.link(names.email_message(str(msg["Message-ID"])), thread.id, thread.id)
            except Exception:  # still worth sending: a reply also names the thread's root or a token
                log.exception("thread %s: could not remember the email to %s", thread.id, _short(to))
            try:  # what it says, so a reply's new text is found by it
                await self.inbox.keep(names.email_sent(str(msg["Message-ID"])), reply.Sent.of(msg).dumps(), SENT_TTL)
            except Exception:  # a reply is still read, by the language-independent rules
                log.exception("thread %s: could not keep the text of the email to %s", thread.id, _short(to))
        self._spawn(thread, msg)

    def _spawn(self, thread: Thread | None, msg: EmailMessage) -> None:
        self._deliveries.spawn(self._deliver(thread, msg))

    async def _deliver(self, thread: Thread | None, msg: EmailMessage) -> None:
        try:
            await self.smtp.send(msg)
        except Exception as e:  # the thread keeps its events; the failure is recorded beside them
            log.error("email to %s could not be delivered: %s", msg["To"], e)
            if thread is not None:
                await self._failed(thread, str(msg["To"]), f"{type(e).__name__}: {e}")

    async def _failed(self, thread: Thread, to: str, reason: str) -> None:
        await self._deliveries.failed(thread.id, render.address(to), reason, f"an email to {_short(to)}")

    async def drain(self) -> None:
        await self._deliveries.drain()


def closed(thread: Thread, approval_id: str) -> str | None:
    """Why an approval can no longer be decided, for someone whose approval code lapsed:
    it was decided, or it expired (the code lapses when the request does)."""
    found = standing.find(thread, approval_id)
    if found is None:
        return None
    if found.decision is not None:
        return wording.already_decided(bool(found.decision.approve), found.decision.user, found.decision.at)
    return wording.expired_not_deployed(found.expiry.expires_at if found.expiry is not None else found.expires_at)


def _what(request: ApprovalRequested) -> str:
    return wording.what_to_deploy(request.service, request.tag, request.environment)


def bounded(mail: parse.Inbound) -> parse.Inbound:
    """`mail` with its Message-ID (it becomes a key) without control characters or
    whitespace (one longer than MAX_MESSAGE_ID is kept, and refused by the caller) and a
    bounded subject. The references are bounded and cleaned by the parser."""
    message_id = mail.message_id if len(mail.message_id) > MAX_MESSAGE_ID else parse.clean_id(mail.message_id)
    return dataclasses.replace(
        mail, message_id=message_id, subject=render.header(mail.subject[:MAX_SUBJECT * 2], MAX_SUBJECT),
    )


def unverified(address: str) -> str:
    """Who a message from `address` is recorded as when nothing but its From header says
    so: a name no approver entry can be (an address or a chat user id has no spaces)."""
    return f"unverified sender <{address}>"


def evidence(mail: parse.Inbound) -> str:
    """What an event records of the email it came by: the sender's address and its Message-ID."""
    return f"{mail.sender} {mail.message_id}"


def unverified_identity(address: str) -> Identity:
    """Nobody, whatever person the address is: its principal (`email:unverified sender
    <...>`) matches no person and no address an approver list names, only `*`."""
    return Identity(None, EMAIL, unverified(address))


def _short(text: str, limit: int = 120) -> str:
    """For log lines and answers: an input that may be huge, cut."""
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} characters)"
