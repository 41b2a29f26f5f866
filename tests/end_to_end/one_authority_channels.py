"""Each channel as tests/end_to_end/test_one_authority.py drives it: the cells of the doc's table
it can express, and for each, the action done as a person would do it there, with what the
channel answered read back as an `Answer`. Situations are staged directly in the store
(tests/end_to_end/one_authority.STAGED), in the channel's own kind of thread, so what is tested
is the channel's answer, not how the situation came about."""

from __future__ import annotations

import contextlib
import io
import json
import re
import sys
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, ClassVar

import httpx
from mcp.client import Client as McpClient

import bot.__main__ as cli_main
from bot.adapters.channels.email import names as email_names
from bot.adapters.channels.slack import blocks as slack_blocks
from bot.adapters.channels.slack import names as slack_names
from bot.adapters.channels.slack.web import EVENT_TTL
from bot.adapters.redis.schedules import RedisScheduleMarks
from bot.config.settings import Settings
from bot.core.events import new_id, principal_of
from bot.core.thread import Origin, Thread
from bot.core.triggers import Schedule
from bot.runtime.scheduler import Scheduler
from bot.testing.fake_slack import FakeSlack
from tests.adapters.channels.email import test_email as email_channel
from tests.adapters.channels.github import test_github_webhook as github_webhook
from tests.adapters.channels.slack import test_slack as slack_channel
from tests.authority_table import LOCK_REASON, Facts
from tests.end_to_end.one_authority import (
    AGENT,
    ALLOWED,
    ANYWAY,
    ANYWAY_REASON,
    ASK,
    BOB,
    CANCEL,
    CANCEL_LIVE,
    CANCEL_OWN,
    DAVE,
    DECIDE,
    DECIDE_OWN,
    FIRST_VERB,
    FORK,
    FORK_OWN,
    GITHUB,
    LOCK,
    OUTSIDER,
    PROMOTE,
    REJECT,
    REPLY,
    REPLY_OWN,
    RESUME,
    ROLL_BACK,
    SAID,
    SAY_ANYWAY,
    SAY_REPLY,
    SAY_RESUME,
    SAY_SKIP,
    SAY_VERIFY_NOW,
    SHARED,
    SKIP,
    STAGED,
    START,
    STOP,
    TAKE,
    TAKE_REASON,
    TRIGGER,
    UNLOCK_OWN,
    VERIFY_NOW,
    Actor,
    Answer,
    World,
    html,
    refusal,
    slack_escaped,
)
from tests.helpers import eventually

# What is said in a thread that is already there, for the cells said as a reply.
REPLIED = {REPLY: SAY_REPLY, REPLY_OWN: SAY_REPLY, ANYWAY: SAY_ANYWAY, SKIP: SAY_SKIP}


class Channel:
    """One channel: the table's columns it knows (`columns`), how it does each action it can
    express (`ways`: the action, and the name of the method doing it), where only some of its
    actors can express an action, which (`only`), and which half of a row's "or" it does
    (`verbs`: reject, verify now, resume; else approve, skip, stop). `serial`: its cells one at
    a time (one terminal; one MCP session)."""

    name: ClassVar[str]
    columns: ClassVar[tuple[str, ...]]
    ways: ClassVar[dict[str, str]]
    only: ClassVar[dict[str, tuple[str, ...]]] = {}
    verbs: ClassVar[dict[str, str]] = {}
    serial: ClassVar[bool] = False

    def __init__(self, world: World, actors: dict[str, Actor]) -> None:
        self.world = world
        self.actors = actors

    @classmethod
    def cells(cls) -> list[tuple[str, str]]:
        """(action, column) of every cell this channel expresses."""
        return [(action, column) for action in cls.ways for column in cls.only.get(action, cls.columns)]

    async def perform(self, action: str, actor: Actor, facts: Facts) -> Answer:
        return await getattr(self, self.ways[action])(action, actor, facts)  # type: ignore[no-any-return]

    @classmethod
    def verb(cls, action: str) -> str:
        return cls.verbs.get(action, FIRST_VERB.get(action, ""))

    def replied(self, action: str) -> str:
        """What is said for `action` in a thread that is already there."""
        return SAY_VERIFY_NOW if self.verb(action) == VERIFY_NOW else REPLIED[action]

    async def staged(self, action: str, actor: Actor, facts: Facts) -> Thread:
        """The situation of `action` in a thread of this channel's (by default, of no channel in
        particular: the API, the console, the CLI and MCP reach a thread by its id)."""
        return await self.world.stage(STAGED[action](actor.who, facts), Origin(channel="api"))


# --- the HTTP API --------------------------------------------------------------------------------


class Api(Channel):
    """The JSON API: personal tokens, the agent's token, and the shared token (with `user`, a
    label it proves nothing by). A refusal is a 403 whose JSON `detail` says why."""

    name = "API"
    columns = (BOB, DAVE, AGENT, SHARED)
    ways = {
        START: "say", ASK: "say", ROLL_BACK: "deploys", PROMOTE: "deploys",
        DECIDE: "decide", DECIDE_OWN: "decide", REPLY: "reply", REPLY_OWN: "reply",
        CANCEL_OWN: "cancel", CANCEL: "cancel", CANCEL_LIVE: "cancel", FORK_OWN: "fork", FORK: "fork",
        LOCK: "say", UNLOCK_OWN: "say", TAKE: "say", STOP: "say", ANYWAY: "reply", SKIP: "reply",
    }

    async def post(self, actor: Actor, path: str, body: dict[str, Any]) -> httpx.Response:
        if actor.column == SHARED:
            body = {**body, "user": actor.who.label}
        return await self.world.api.post(path, json=body, headers={"Authorization": f"Bearer {actor.key}"})

    @staticmethod
    def refused(r: httpx.Response) -> Answer | None:
        if r.is_success:
            return None
        detail = r.json().get("detail", r.text) if "json" in r.headers.get("content-type", "") else r.text
        return refusal(str(detail), wrong="" if r.status_code == 403 else f"HTTP {r.status_code}, not 403")

    async def launched(self, action: str, actor: Actor, r: httpx.Response) -> Answer:
        return self.refused(r) or await self.world.answer(r.json()["id"], action, actor.who)

    async def say(self, action: str, actor: Actor, facts: Facts) -> Answer:
        return await self.launched(action, actor, await self.post(actor, "/threads", {"message": SAID[action]}))

    async def deploys(self, action: str, actor: Actor, facts: Facts) -> Answer:
        path = "/deploys/rollback" if action == ROLL_BACK else "/deploys/promote"
        r = await self.post(actor, path, {"service": "backend", "environment": "production"})
        return await self.launched(action, actor, r)

    async def decide(self, action: str, actor: Actor, facts: Facts) -> Answer:
        thread = await self.staged(action, actor, facts)
        request = thread.pending_approval()
        assert request is not None
        r = await self.post(actor, f"/threads/{thread.id}/responses",
                            {"approval_id": request.approval_id, "approve": True})
        return self.refused(r) or await self.world.answer(thread.id, action, actor.who, thread.version)

    async def reply(self, action: str, actor: Actor, facts: Facts) -> Answer:
        thread = await self.staged(action, actor, facts)
        r = await self.post(actor, f"/threads/{thread.id}/responses", {"text": self.replied(action)})
        return self.refused(r) or await self.world.answer(thread.id, action, actor.who, thread.version)

    async def cancel(self, action: str, actor: Actor, facts: Facts) -> Answer:
        thread = await self.staged(action, actor, facts)
        r = await self.post(actor, f"/threads/{thread.id}/cancel", {})
        return self.refused(r) or await self.world.answer(thread.id, action, actor.who, thread.version)

    async def fork(self, action: str, actor: Actor, facts: Facts) -> Answer:
        thread = await self.staged(action, actor, facts)
        r = await self.post(actor, f"/threads/{thread.id}/fork", {"at": 1})
        return self.refused(r) or ALLOWED


# --- the web console -----------------------------------------------------------------------------


class Console(Channel):
    """The web console, signed in (a session cookie; each form carries its CSRF token). A
    refusal is a 403 page saying why, in HTML."""

    name = "console"
    columns = (BOB, DAVE)
    ways = {
        START: "deploy", ASK: "deploy", ROLL_BACK: "board_thread", PROMOTE: "board_thread",
        DECIDE: "decide", DECIDE_OWN: "decide", REPLY: "respond", REPLY_OWN: "respond",
        CANCEL_OWN: "cancel", CANCEL: "cancel", CANCEL_LIVE: "cancel", FORK_OWN: "fork", FORK: "fork",
        LOCK: "board", UNLOCK_OWN: "board", TAKE: "board", STOP: "board",
        ANYWAY: "end_of_thread", SKIP: "end_of_thread",
    }
    verbs = {DECIDE: REJECT, DECIDE_OWN: REJECT, SKIP: VERIFY_NOW, STOP: RESUME}
    BOARD = {LOCK: "lock", UNLOCK_OWN: "unlock", TAKE: "unlock", STOP: "resume"}  # the board's buttons

    def __init__(self, world: World, actors: dict[str, Actor], sessions: dict[str, tuple[httpx.AsyncClient, str]]):
        super().__init__(world, actors)
        self.sessions = sessions  # the person -> their signed-in browser and its CSRF token

    async def post(self, actor: Actor, path: str, fields: dict[str, str]) -> httpx.Response:
        browser, csrf = self.sessions[actor.key]
        return await browser.post(f"/console{path}", data={**fields, "csrf_token": csrf})

    @staticmethod
    def refused(r: httpx.Response) -> Answer | None:
        if r.status_code == 303:
            return None
        alert = re.search(r'<p class="error" role="alert">(.*?)</p>', r.text, re.S)
        return refusal(r.text, html, wrong="" if r.status_code == 403 else f"HTTP {r.status_code}, not 403",
                       shown=f"the page's alert: {alert[1]}" if alert else "")

    @staticmethod
    def redirected_to(r: httpx.Response) -> str:
        """The thread a form's answer shows (where it redirects)."""
        found = re.search(r"/console/threads/([^/?]+)", r.headers["location"])
        assert found, r.headers["location"]
        return found[1]

    async def deploy(self, action: str, actor: Actor, facts: Facts) -> Answer:
        environment = "staging" if action == START else "production"
        r = await self.post(actor, "/deploy", {"service": "backend", "environment": environment, "tag": "v1.2.3"})
        return self.refused(r) or await self.world.answer(self.redirected_to(r), action, actor.who)

    async def board_thread(self, action: str, actor: Actor, facts: Facts) -> Answer:
        button = "rollback" if action == ROLL_BACK else "promote"
        r = await self.post(actor, f"/environments/production/services/backend/{button}", {})
        return self.refused(r) or await self.world.answer(self.redirected_to(r), action, actor.who)

    async def board(self, action: str, actor: Actor, facts: Facts) -> Answer:
        """Lock, Unlock and Resume start a thread with the command and go back to the board: the
        answer is in the thread this person started from the console saying it."""
        reason = {LOCK: LOCK_REASON, TAKE: TAKE_REASON}.get(action, "")
        r = await self.post(actor, f"/environments/production/{self.BOARD[action]}", {"reason": reason})
        if (told := self.refused(r)) is not None:
            return told
        says = SAY_RESUME if action == STOP else SAID[action]
        [thread] = [t for t in await self.world.app.service.recent(None, 50)
                    if (first := t.first_message()) is not None and first.channel == "console"
                    and first.text == says and principal_of(first) == actor.who.principal]
        return await self.world.answer(thread.id, action, actor.who)

    async def decide(self, action: str, actor: Actor, facts: Facts) -> Answer:
        thread = await self.staged(action, actor, facts)
        request = thread.pending_approval()
        assert request is not None
        button, fields = ("reject", {"feedback": "not before the release"}) if self.verb(action) == REJECT \
            else ("approve", {})
        r = await self.post(actor, f"/approvals/{thread.id}/{request.approval_id}/{button}", fields)
        return self.refused(r) or await self.world.answer(thread.id, action, actor.who, thread.version)

    async def respond(self, action: str, actor: Actor, facts: Facts) -> Answer:
        thread = await self.staged(action, actor, facts)
        r = await self.post(actor, f"/threads/{thread.id}/respond", {"text": self.replied(action)})
        return self.refused(r) or await self.world.answer(thread.id, action, actor.who, thread.version)

    async def cancel(self, action: str, actor: Actor, facts: Facts) -> Answer:
        thread = await self.staged(action, actor, facts)
        r = await self.post(actor, f"/threads/{thread.id}/cancel", {})
        return self.refused(r) or await self.world.answer(thread.id, action, actor.who, thread.version)

    async def fork(self, action: str, actor: Actor, facts: Facts) -> Answer:
        thread = await self.staged(action, actor, facts)
        r = await self.post(actor, f"/threads/{thread.id}/fork", {"at": "1"})
        return self.refused(r) or (ALLOWED if self.redirected_to(r) != thread.id else refusal("forked into itself"))

    async def end_of_thread(self, action: str, actor: Actor, facts: Facts) -> Answer:
        """Deploy anyway (with its reason) and Verify now: a thread page's forms."""
        thread = await self.staged(action, actor, facts)
        form, fields = ("deploy-anyway", {"reason": ANYWAY_REASON}) if action == ANYWAY else ("verify-now", {})
        r = await self.post(actor, f"/threads/{thread.id}/{form}", fields)
        return self.refused(r) or await self.world.answer(thread.id, action, actor.who, thread.version)


# --- Slack ---------------------------------------------------------------------------------------


class Slack(Channel):
    """Signed Events API and interactivity requests, as Slack sends them; the bot's Web API
    calls caught by the stand-in. A refusal is an ephemeral note to whoever spoke or clicked,
    in the Slack thread, Slack-escaped."""

    name = "Slack"
    columns = (BOB, DAVE, OUTSIDER)
    ways = {
        START: "mention", ASK: "mention", ROLL_BACK: "mention", PROMOTE: "mention",
        DECIDE: "click", DECIDE_OWN: "click", REPLY: "reply", REPLY_OWN: "reply",
        LOCK: "mention", UNLOCK_OWN: "mention", TAKE: "mention", STOP: "mention", ANYWAY: "reply", SKIP: "reply",
    }
    verbs = {DECIDE: REJECT, DECIDE_OWN: REJECT, SKIP: VERIFY_NOW}

    def __init__(self, world: World, actors: dict[str, Actor], slack: slack_channel.Slack, fake: FakeSlack) -> None:
        super().__init__(world, actors)
        self.slack, self.fake = slack, fake

    async def staged(self, action: str, actor: Actor, facts: Facts) -> Thread:
        """In a Slack thread of its own, bound to it as a mention binds one; an approval's
        message posted there, buttons and all."""
        root = slack_channel.new_ts()
        scope = slack_names.slack_conversation(slack_channel.CHANNEL, root)
        await self.world.app.inbox.receive(scope, "staged", EVENT_TTL, facts.thread_id)
        origin = Origin(channel="slack", slack_channel=slack_channel.CHANNEL, slack_thread_ts=root)
        return await self.world.stage(STAGED[action](actor.who, facts), origin, tell=action in (DECIDE, DECIDE_OWN))

    def told(self, actor: Actor, root: str) -> Callable[[], Awaitable[Answer | None]]:
        async def ephemeral() -> Answer | None:
            notes = self.fake.matching("chat.postEphemeral", user=actor.key, thread_ts=root)
            return refusal(" ".join(n["text"] for n in notes), slack_escaped) if notes else None

        return ephemeral

    async def mention(self, action: str, actor: Actor, facts: Facts) -> Answer:
        r, ts = await self.slack.mention(SAID[action], user=actor.key)
        if r.status_code != 200:
            return refusal(r.text, wrong=f"HTTP {r.status_code}")
        thread_id = await eventually(lambda: slack_channel.bot_thread(self.world.app, ts))
        return await self.world.answer(thread_id, action, actor.who, refused=self.told(actor, ts))

    async def click(self, action: str, actor: Actor, facts: Facts) -> Answer:
        """Reject on the approval message: whoever may decide gets the form asking what should
        change, and their answer in it rejects; anyone else is told why not."""
        thread = await self.staged(action, actor, facts)
        root = thread.origin.at("slack", "thread_ts") or ""
        message = await slack_channel.approval_message(self.fake, root)
        await self.slack.click(slack_blocks.REJECT, message, actor.key)
        told = self.told(actor, root)

        async def told_or_asked() -> Answer | dict[str, Any] | None:
            if (answer := await told()) is not None:
                return answer
            opened = self.fake.matching("views.open", view=thread.id)
            return _json(opened[-1]["view"]) if opened else None

        found = await eventually(told_or_asked)
        if isinstance(found, Answer):
            return found
        await self.slack.submit_feedback(found, actor.key, "not before the release")
        return await self.world.answer(thread.id, action, actor.who, thread.version, told)

    async def reply(self, action: str, actor: Actor, facts: Facts) -> Answer:
        thread = await self.staged(action, actor, facts)
        root = thread.origin.at("slack", "thread_ts") or ""
        await self.slack.reply(self.replied(action), root, user=actor.key)
        return await self.world.answer(thread.id, action, actor.who, thread.version, self.told(actor, root))


# --- email ---------------------------------------------------------------------------------------


class Email(Channel):
    """Raw mail posted to /email/inbound, its From proven by the receiving server (DMARC pass),
    and what the bot mails caught by a real SMTP server. A refusal is a mail back saying why.

    Only bob can decide by email: an approval email (its code) goes only to those who may
    decide, so dave, an outsider and whoever asked never get one. An approver's reply without
    that code while an approval waits is refused whoever sent it (it would decide: by email
    only the code decides), so bob's plain reply in someone else's waiting thread is not asked."""

    name = "email"
    columns = (BOB, DAVE, OUTSIDER)
    ways = {
        START: "write", ASK: "write", ROLL_BACK: "write", PROMOTE: "write", DECIDE: "approve",
        REPLY: "reply", REPLY_OWN: "reply", LOCK: "write", UNLOCK_OWN: "write", TAKE: "write", STOP: "write",
        ANYWAY: "reply", SKIP: "reply",
    }
    only = {DECIDE: (BOB,), REPLY: (DAVE, OUTSIDER)}

    def __init__(self, world: World, actors: dict[str, Actor], inbox: email_channel.Inbox) -> None:
        super().__init__(world, actors)
        self.inbox = inbox

    async def send(self, actor: Actor, raw: bytes, message_id: str) -> Answer | None:
        """None once the mail was taken; else the refusal the bot mailed back."""
        r = await email_channel.post(self.world.api, raw)
        if r.status_code == 200 and r.json()["status"] == "accepted":
            return None
        if r.status_code != 200 or r.json()["status"] != "refused":
            return refusal(r.text, wrong=f"HTTP {r.status_code}, {r.text}")
        [answer] = await self.inbox.wait_for(to=actor.key, in_reply_to=message_id)
        return refusal(email_channel._field(answer, "body"))

    async def write(self, action: str, actor: Actor, facts: Facts) -> Answer:
        message_id = f"<{facts.thread_id}@mail.example.com>"
        raw = email_channel.raw_mail(SAID[action], sender=actor.key, message_id=message_id)
        told = await self.send(actor, raw, message_id)
        if told is not None:
            return told
        thread_id = await self.world.app.inbox.lookup(email_names.email_message(message_id))
        assert thread_id is not None
        return await self.world.answer(thread_id, action, actor.who)

    async def staged(self, action: str, actor: Actor, facts: Facts) -> Thread:
        """In a mail thread of its own: a reply to its first mail reaches it; an approval's
        emails mailed to whoever may decide."""
        root = f"<staged-{facts.thread_id}@mail.example.com>"
        situation = STAGED[action](actor.who, facts)
        starter = situation.events[0].evidence if situation.events[0].via == "email" else "erin@example.com"
        origin = Origin(channel="email", email_from=starter, email_subject="Deploy please", email_root=root)
        thread = await self.world.stage(situation, origin, tell=action == DECIDE)
        await self.world.app.inbox.link(email_names.email_message(root), thread.id, thread.id)
        return thread

    async def approve(self, action: str, actor: Actor, facts: Facts) -> Answer:
        thread = await self.staged(action, actor, facts)
        request = thread.pending_approval()
        assert request is not None
        [asked] = await self.inbox.wait_for(to=actor.key, body=f"approval code: {request.approval_id}.")
        raw = email_channel.gmail_reply(asked, "APPROVE", actor.key)
        told = await self.send(actor, raw, _message_id(raw))
        return told or await self.world.answer(thread.id, action, actor.who, thread.version)

    async def reply(self, action: str, actor: Actor, facts: Facts) -> Answer:
        thread = await self.staged(action, actor, facts)
        message_id = f"<{new_id()}@mail.example.com>"
        raw = email_channel.raw_mail(self.replied(action), sender=actor.key, subject="Re: Deploy please",
                                     in_reply_to=thread.origin.at("email", "root"), message_id=message_id)
        told = await self.send(actor, raw, message_id)
        return told or await self.world.answer(thread.id, action, actor.who, thread.version)


def _json(value: Any) -> dict[str, Any]:
    return json.loads(value) if isinstance(value, str) else value  # type: ignore[no-any-return]


def _message_id(raw: bytes) -> str:
    found = re.search(rb"Message-ID: (<[^>]+>)", raw)
    assert found
    return found[1].decode()


# --- MCP -----------------------------------------------------------------------------------------


class Mcp(Channel):
    """The agent's tools over /mcp (Streamable HTTP, the agent's token). A refusal is the
    tool's error. An agent can only ask (a deploy, a rollback) and cancel: nothing else of the
    table is a tool."""

    name = "MCP"
    columns = (AGENT,)
    ways = {START: "request", ASK: "request", ROLL_BACK: "request",
            CANCEL_OWN: "cancel", CANCEL: "cancel", CANCEL_LIVE: "cancel"}
    serial = True  # one MCP session

    def __init__(self, world: World, actors: dict[str, Actor], client: McpClient) -> None:
        super().__init__(world, actors)
        self.client = client

    async def call(self, tool: str, **arguments: Any) -> tuple[Answer | None, dict[str, Any]]:
        result = await self.client.call_tool(tool, arguments)
        if result.is_error:
            return refusal(" ".join(getattr(c, "text", "") for c in result.content)), {}
        return None, result.structured_content or {}

    async def request(self, action: str, actor: Actor, facts: Facts) -> Answer:
        if action == ROLL_BACK:
            told, info = await self.call("request_rollback", service="backend", environment="production",
                                         reason="it broke checkout")
        else:
            told, info = await self.call("request_deploy", service="backend", tag="v1.2.3",
                                         environment="staging" if action == START else "production",
                                         reason="ships the login fix")
        return told or await self.world.answer(info["thread_id"], action, actor.who)

    async def cancel(self, action: str, actor: Actor, facts: Facts) -> Answer:
        thread = await self.world.stage(STAGED[action](actor.who, facts), Origin(channel="mcp"))
        told, _ = await self.call("cancel_thread", thread_id=thread.id)
        return told or await self.world.answer(thread.id, action, actor.who, thread.version)


# --- the CLI -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Ran:
    code: int
    out: str
    err: str


class Cli(Channel):
    """`python -m bot ...` with `--user NAME`, run in this process (bot.__main__.terminal:
    what the command prints, and a refusal on stderr). The operator names anyone: a person of
    deploybot.toml, or a name it does not know (an outsider)."""

    name = "CLI"
    columns = (BOB, DAVE, OUTSIDER)
    ways = {
        START: "chat", ASK: "chat", ROLL_BACK: "command", PROMOTE: "command",
        DECIDE: "respond", DECIDE_OWN: "respond", REPLY: "respond", REPLY_OWN: "respond",
        CANCEL_OWN: "cancel", CANCEL: "cancel", CANCEL_LIVE: "cancel", FORK_OWN: "fork", FORK: "fork",
        LOCK: "command", UNLOCK_OWN: "command", TAKE: "command", STOP: "command", ANYWAY: "respond", SKIP: "respond",
    }
    COMMANDS = {
        ROLL_BACK: ("rollback", "backend", "production"), PROMOTE: ("promote", "backend", "production"),
        LOCK: ("lock", "production", "--reason", LOCK_REASON), UNLOCK_OWN: ("unlock", "production"),
        TAKE: ("unlock", "production", "--force", TAKE_REASON), STOP: ("unfreeze", "production"),
    }
    verbs = {SKIP: VERIFY_NOW, STOP: RESUME}
    serial = True  # one terminal: what it prints is read from this process's stdout and stderr

    def __init__(self, world: World, actors: dict[str, Actor], settings: Settings) -> None:
        super().__init__(world, actors)
        self.settings = settings

    async def run(self, actor: Actor, *argv: str) -> Ran:
        args = cli_main.parser().parse_args([*argv, "--user", actor.key])
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), _no_stdin():
            try:
                code = await cli_main.terminal(self.settings, args)
            except SystemExit as e:  # a refused answer to a prompt ends the command
                code = int(e.code or 0)
        return Ran(code, out.getvalue(), err.getvalue())

    @staticmethod
    def refused(ran: Ran) -> Answer | None:
        if "refused: " not in ran.err:
            return None
        return refusal(ran.err, wrong="" if ran.code != 0 else "exit code 0")

    async def started(self, action: str, actor: Actor, ran: Ran) -> Answer:
        told = self.refused(ran)
        if told is not None:
            return told
        found = re.search(r"^thread (\S+)", ran.out, re.M)
        assert found, ran
        return await self.world.answer(found[1], action, actor.who)

    async def chat(self, action: str, actor: Actor, facts: Facts) -> Answer:
        return await self.started(action, actor, await self.run(actor, "chat", SAID[action]))

    async def command(self, action: str, actor: Actor, facts: Facts) -> Answer:
        return await self.started(action, actor, await self.run(actor, *self.COMMANDS[action]))

    async def respond(self, action: str, actor: Actor, facts: Facts) -> Answer:
        thread = await self.staged(action, actor, facts)
        request = thread.pending_approval()
        if action in (DECIDE, DECIDE_OWN) and request is not None:
            said: tuple[str, ...] = ("--approve", "--approval-id", request.approval_id)
        else:
            said = (self.replied(action),)
        ran = await self.run(actor, "threads", "respond", thread.id, *said)
        return self.refused(ran) or await self.world.answer(thread.id, action, actor.who, thread.version)

    async def cancel(self, action: str, actor: Actor, facts: Facts) -> Answer:
        thread = await self.staged(action, actor, facts)
        ran = await self.run(actor, "threads", "cancel", thread.id)
        return self.refused(ran) or await self.world.answer(thread.id, action, actor.who, thread.version)

    async def fork(self, action: str, actor: Actor, facts: Facts) -> Answer:
        thread = await self.staged(action, actor, facts)
        ran = await self.run(actor, "threads", "fork", thread.id, "--at", "1")
        told = self.refused(ran)
        if told is not None:
            return told
        return ALLOWED if re.search(r"new thread (\S+)", ran.out) else refusal(ran.out, wrong="no new thread")


@contextlib.contextmanager
def _no_stdin() -> Iterator[None]:
    """A prompt reads the end of its input (nobody types here): the command says how to
    answer later and ends."""
    saved = sys.stdin
    sys.stdin = io.StringIO("")
    try:
        yield
    finally:
        sys.stdin = saved


# --- GitHub and schedules: the two actors no person's channel brings --------------------------------


class GitHub(Channel):
    """A signed `release` delivery to /github/webhook, matching deploybot.toml's [[triggers]]:
    a thread that asks, as its sender (a GitHub login nobody lists), to deploy the release's
    tag to production. A trigger asks and starts; it does nothing else of the table."""

    name = "GitHub"
    columns = (GITHUB,)
    ways = {START: "release", ASK: "release"}

    async def release(self, action: str, actor: Actor, facts: Facts) -> Answer:
        payload = github_webhook.release("v1.2.3", sender=actor.key)
        payload["release"]["id"] = facts.thread_id  # a delivery of its own: GitHub's body differs each time
        r = await github_webhook.deliver(self.world.api, "release", payload)
        if r.status_code != 200 or r.json().get("status") != "started":
            return refusal(r.text, wrong=f"HTTP {r.status_code}")
        [thread_id] = r.json()["threads"]
        return await self.world.answer(thread_id, action, actor.who)


class Schedules(Channel):
    """A [[schedules]] entry fired by the scheduler workers run (bot/runtime/scheduler.py),
    its clock moved on a minute so the occurrence is due now: a thread that says the
    schedule's message, as the schedule."""

    name = "schedule"
    columns = (TRIGGER,)
    ways = {START: "fire", ASK: "fire", ROLL_BACK: "fire", PROMOTE: "fire",
            LOCK: "fire", UNLOCK_OWN: "fire", TAKE: "fire", STOP: "fire"}

    async def fire(self, action: str, actor: Actor, facts: Facts) -> Answer:
        app = self.world.app
        now = [self.world.now()]
        scheduler = Scheduler([schedule(SAID[action])], RedisScheduleMarks(app.redis), app.service, app.kick,
                              lambda: now[0])
        assert await scheduler.tick() == []  # first seen now: its next occurrence is the one
        now[0] += timedelta(minutes=1)
        [thread_id] = await scheduler.tick()
        return await self.world.answer(thread_id, action, actor.who)


def schedule(message: str) -> Schedule:
    return Schedule(cron="* * * * *", timezone="UTC", message=message)


CHANNELS: tuple[type[Channel], ...] = (Api, Console, Slack, Email, Mcp, Cli, GitHub, Schedules)
