"""One answer per cell: the actor x action table of docs/people-and-approvals.md#who-may-do-what
asked through every channel that can express each cell (the HTTP API, the web console, Slack,
email, MCP, the CLI; GitHub's webhook and a schedule for the two actors only they bring), and
every answer held to the authority's (tests/authority_table.answered): allowed where it allows,
and where it refuses, its sentence, escaped for where the channel says it.

One real setup for all of it: a real Redis, the web app served over real HTTP, the Slack Web
API stand-in and signed Slack requests, a real SMTP server for what the bot mails and raw mail
posted to /email/inbound, MCP over /mcp with the agent's token, personal tokens, signed-in
console sessions, the CLI's commands run in this process; deploybot.toml holds the table's
people, built from the same names. Situations are staged directly in the store.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections import defaultdict
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

import httpx
import pytest

from bot.core.events import new_id
from bot.core.freeze_windows import stop_the_line
from bot.core.people import CLI, SESSION, Identity
from bot.core.policy import lock_owner
from bot.core.triggers import SCHEDULE
from bot.runtime.ports import DeployRecord
from tests.adapters.channels import test_mcp as mcp_channel
from tests.adapters.channels.email import test_email as mail
from tests.adapters.channels.github import test_github_webhook as github
from tests.adapters.channels.slack import test_slack as base
from tests.authority_table import ACTIONS, ACTORS, CAROL, DIRECTORY, POLICY, Facts, answered, held
from tests.end_to_end.one_authority import (
    AGENT,
    APPROVE,
    BOB,
    DAVE,
    DECIDE,
    DECIDE_OWN,
    GITHUB,
    ONE_AT_A_TIME,
    OUTSIDER,
    REJECT,
    RESUME,
    SHARED,
    SKIP,
    SKIP_IT,
    STOP,
    STOP_IT,
    TAKE,
    TRIGGER,
    UNLOCK_OWN,
    VERIFY_NOW,
    Actor,
    Answer,
    World,
)
from tests.end_to_end.one_authority_channels import (
    CHANNELS,
    Api,
    Channel,
    Cli,
    Console,
    Email,
    GitHub,
    Mcp,
    Schedules,
    Slack,
    schedule,
)

pytestmark = [pytest.mark.redis, pytest.mark.network]

fake_slack, slack = base.fake_slack, base.slack
smtp_port, inbox = mail.smtp_port, mail.inbox
API_TOKEN = "shared-api-token-for-the-matrix"


def deploybot_toml() -> str:
    """The table's setup (tests/authority_table.py) as deploybot.toml: its people, its agent
    (its limits raised out of the way: the table asks of one request, and this test makes many)
    and its environments' rules; production after staging, so a promotion has an order; a
    trigger, so a GitHub release asks for production."""
    lines = ['promotion = ["staging", "production"]', ""]
    for person in DIRECTORY.people.values():
        lines += [f"[people.{person.name}]", f"slack = {json.dumps(person.ids['slack'][0])}",
                  f"email = {json.dumps(person.ids['email'][0])}", ""]
    for agent in DIRECTORY.agents.values():
        lines += [f"[agents.{agent.name}]", f"owner = {json.dumps(agent.owner)}",
                  f"environments = {json.dumps(list(agent.environments))}", "max_open = 1000",
                  "max_per_hour = 1000", ""]
    for environment in sorted(POLICY.environments):
        rules = POLICY.rules_for(environment)
        lines += [f"[environments.{environment}]", f"protected = {json.dumps(rules.protected)}",
                  f"approvers = {json.dumps(list(rules.approvers_as_written))}",
                  f"approver_must_differ = {json.dumps(rules.approver_must_differ)}", ""]
    lines += ["[[triggers]]", 'on = "release"', 'service = "backend"', 'environment = "production"',
              'notify = ["email:releases@example.com"]', ""]
    return "\n".join(lines)


@pytest.fixture
def settings(settings, fake_slack, smtp_port, inbox, tmp_path: Path):
    config = tmp_path / "deploybot.toml"
    config.write_text(deploybot_toml())
    return settings.model_copy(update={
        "deploybot_config": config, "api_token": API_TOKEN,
        "llm_base_url": None, "llm_model": None, "llm_api_key": None,  # exact commands only: nothing for a model
        "slack_bot_token": "xoxb-test-token", "slack_signing_secret": base.SECRET,
        "slack_api_url": fake_slack.base_url,
        "smtp_host": "127.0.0.1", "smtp_port": smtp_port, "smtp_tls": "none",
        "email_from": "deploybot@example.com", "inbound_email_secret": mail.SECRET,
        "email_reply_secret": "reply-secret", "email_trusted_authserv_ids": mail.TRUSTED,
        "email_mailbox_authenticated_domains": mail.MAILBOXES,
        "email_allowed_senders": "@example.com",  # dave, erin and an outsider at example.com write too
        "github_webhook_secret": github.SECRET,
    })


# --- what is asked, and what came back -------------------------------------------------------------


@dataclass(frozen=True)
class Asked:
    """One channel's answer for one cell, with who it saw and the situation it staged."""

    answer: Answer
    who: Identity
    facts: Facts

    def agrees(self, action: str, column: str) -> bool:
        table = answered(action, column)
        here = answered(action, column, self.who, self.facts)
        if (table is None) != (here is None):
            return False
        return self.answer.allowed if here is None else self.answer.says(here)


Answers = dict[tuple[str, str], dict[str, Asked]]


# --- the setup the cells share ------------------------------------------------------------------------


async def seed_history(app) -> None:
    """backend's deploys so far: v1.2.1 then v1.2.2 on production (a rollback puts v1.2.1 back),
    v1.2.3 on staging (what a promotion, and a deploy of v1.2.3, to production needs)."""
    backend = app.runner.deploying.deployers["backend"]
    now = app.service.clock()
    for minutes, environment, tag in ((30, "production", "v1.2.1"), (20, "production", "v1.2.2"),
                                      (10, "staging", "v1.2.3")):
        commit = await backend.resolve(tag)
        await app.environments.record(DeployRecord(
            environment, "backend", tag, commit, True, now - timedelta(minutes=minutes), "alice", "seed",
            f"seed-{environment}-{tag}"))


async def api_actors(app) -> dict[str, Actor]:
    actors = {}
    for column, holder in ((BOB, "bob"), (DAVE, "dave"), (AGENT, "agent:claude")):
        token_id, secret = await app.credentials.create(holder, "matrix")
        who = app.service.directory.by_token(holder, token_id)
        actors[column] = Actor(column, who, secret)
    actors[SHARED] = Actor(SHARED, ACTORS[SHARED], API_TOKEN)
    return actors


@contextlib.asynccontextmanager
async def signed_in(app, api: httpx.AsyncClient, people: list[str]):
    """A browser signed in to the console for each person (its cookie), with its CSRF token."""
    sessions: dict[str, tuple[httpx.AsyncClient, str]] = {}
    async with contextlib.AsyncExitStack() as stack:
        for person in people:
            browser = await stack.enter_async_context(httpx.AsyncClient(base_url=api.base_url))
            r = await browser.post("/auth/link", json={"code": await app.credentials.issue_link(person, 600)})
            assert r.status_code == 200, r.text
            csrf = (await browser.get("/auth/session")).json()["csrf_token"]
            sessions[person] = (browser, csrf)
        yield sessions


def console_actors(app) -> dict[str, Actor]:
    return {column: Actor(column, app.service.directory.by_name(name, via=SESSION), name)
            for column, name in ((BOB, "bob"), (DAVE, "dave"))}


def slack_actors(app) -> dict[str, Actor]:
    return {column: Actor(column, app.service.directory.by("slack", user), user)
            for column, user in ((BOB, "UBOB"), (DAVE, "UDAVE"), (OUTSIDER, "U0STRANGER"))}


def email_actors(app) -> dict[str, Actor]:
    return {column: Actor(column, app.service.directory.by("email", address), address)
            for column, address in ((BOB, "bob@example.com"), (DAVE, "dave@example.com"),
                                    (OUTSIDER, "stranger@example.com"))}


def cli_actors(app) -> dict[str, Actor]:
    return {column: Actor(column, app.service.directory.by_name(name, via=CLI), name)
            for column, name in ((BOB, "bob"), (DAVE, "dave"), (OUTSIDER, "stranger"))}


def lone_actor(column: str, who: Identity) -> dict[str, Actor]:
    return {column: Actor(column, who, who.evidence)}


# --- asking -------------------------------------------------------------------------------------------

AT_ONCE = 12  # cells asked at the same time (each waits on a run, mostly)


async def prepare(world: World, action: str, who: Identity, verb: str) -> Facts:
    """Production as a one-at-a-time cell needs it: unlocked and running, but for the lock an
    unlock lifts (theirs, or carol's) and the stop a resume lifts; the facts it is asked with."""
    app = world.app
    freezes = app.runner.deploying.freezes
    for lock in await app.environments.held("production", app.policy.catalog.names):
        await app.environments.release(lock.environment, lock.owner, lock.service)
    await freezes.lift("production")
    facts = Facts(at=world.now(), thread_id=new_id(), check_url=world.check_url)
    if verb == RESUME:
        await freezes.set(stop_the_line("production", reason="incident 4711", set_by="carol", since=facts.at))
    owner = lock_owner(who) if action == UNLOCK_OWN else CAROL if action == TAKE else None
    if owner is None:
        return facts
    assert await app.environments.acquire(held(owner, facts), ttl_ms=None) is None
    holder = await app.environments.holder("production")
    return Facts(at=holder.since, thread_id=facts.thread_id, check_url=world.check_url)


async def ask_everything(world: World, channels: list[Channel]) -> Answers:
    answers: Answers = defaultdict(dict)

    async def ask(channel: Channel, action: str, column: str, facts: Facts | None = None) -> None:
        actor = channel.actors[column]
        facts = facts or Facts(at=world.now(), thread_id=new_id(), check_url=world.check_url)
        answer = await channel.perform(action, actor, facts)
        answers[(action, column)][channel.name] = Asked(answer, actor.who, facts)

    room = asyncio.Semaphore(AT_ONCE)
    turns = {c.name: asyncio.Lock() for c in channels}

    async def in_turn(channel: Channel, action: str, column: str) -> None:
        async with turns[channel.name] if channel.serial else contextlib.nullcontext(), room:
            await ask(channel, action, column)

    await asyncio.gather(*(in_turn(c, action, column) for c in channels for action, column in c.cells()
                           if action not in ONE_AT_A_TIME))
    for channel in channels:
        for action, column in channel.cells():
            if action in ONE_AT_A_TIME:
                facts = await prepare(world, action, channel.actors[column].who, channel.verb(action))
                await ask(channel, action, column, facts)
    return answers


def disagreements(answers: Answers) -> list[str]:
    """A readable table of every cell some channel answered otherwise than the authority: the
    cell, what the authority says, and each channel's answer there (✗: it disagrees)."""
    lines = []
    for (action, column), by_channel in sorted(answers.items()):
        if all(asked.agrees(action, column) for asked in by_channel.values()):
            continue
        table = answered(action, column)
        said = "allowed" if table is None else f"{table!r} (in the table's names)"
        lines.append(f"- {action} / {column}: the authority says {said}")
        for name, asked in sorted(by_channel.items()):
            mark = "  " if asked.agrees(action, column) else "✗ "
            lines.append(f"    {mark}{name} (as {asked.who.label}): {asked.answer}")
    return lines


async def test_every_channel_gives_each_cell_the_authority_s_answer(app, api, settings, slack, fake_slack, inbox):
    assert {e: app.policy.rules_for(e) for e in POLICY.environments} == \
        {e: POLICY.rules_for(e) for e in POLICY.environments}, "the setup is not the table's"
    await seed_history(app)
    world = World(app, api, f"{str(api.base_url).rstrip('/')}/healthz")
    apis = await api_actors(app)
    async with signed_in(app, api, ["bob", "dave"]) as sessions, mcp_channel.http_agent(api, apis[AGENT].key) as agent:
        channels: list[Channel] = [
            Api(world, apis),
            Console(world, console_actors(app), sessions),
            Slack(world, slack_actors(app), slack, fake_slack),
            Email(world, email_actors(app), inbox),
            Mcp(world, {AGENT: apis[AGENT]}, agent),
            Cli(world, cli_actors(app), settings),
            GitHub(world, lone_actor(GITHUB, ACTORS[GITHUB])),
            Schedules(world, lone_actor(TRIGGER, Identity(None, SCHEDULE, schedule("").label))),
        ]
        answers = await ask_everything(world, channels)
    assert sum(len(by) for by in answers.values()) == sum(len(c.cells()) for c in channels)
    wrong = sum(not asked.agrees(*cell) for cell, by in answers.items() for asked in by.values())
    total = sum(len(by) for by in answers.values())
    assert not wrong, f"{wrong} of {total} answers are not the authority's:\n" + "\n".join(disagreements(answers))


def test_each_action_is_asked_on_two_channels_each_way_and_each_actor_on_one():
    """Every row on two channels at least (each can be expressed on two), each half of a row's
    "or" (approve or reject, skip or verify now, stop or resume) somewhere, every column on one."""
    on: dict[str, set[str]] = defaultdict(set)
    by: dict[str, set[str]] = defaultdict(set)
    verbs: dict[str, set[str]] = defaultdict(set)
    for channel in CHANNELS:
        for action, column in channel.cells():
            on[action].add(channel.name)
            by[column].add(channel.name)
            verbs[action].add(channel.verb(action))
    assert {a: sorted(c) for a, c in on.items() if len(c) < 2} == {}
    assert set(on) == set(ACTIONS) and set(by) == set(ACTORS)
    assert {a: sorted(v) for a, v in verbs.items() if len(v) > 1} == {
        DECIDE: [APPROVE, REJECT], DECIDE_OWN: [APPROVE, REJECT], SKIP: [SKIP_IT, VERIFY_NOW], STOP: [RESUME, STOP_IT]}
