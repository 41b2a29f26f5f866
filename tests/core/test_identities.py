"""People through the service and a run: whoever speaks, by any channel, is one person; the
rules decide by that person (approving, approver_must_differ, locking, unlocking), fail
closed for someone unknown, and old threads still load and compare as before."""

from __future__ import annotations

import pytest

from bot.core.events import (
    ApprovalRequested,
    CommandResult,
    HumanResponse,
    ListGitTags,
    UserMessage,
    load,
    principal_of,
)
from bot.core.people import SERVICE, Identity
from bot.core.policy import Policy, lock_owner
from bot.core.thread import Thread
from bot.runtime.ports import Lock
from bot.runtime.service import Forbidden, ThreadService
from bot.wiring.channels import raw_users
from tests.memory_parts import NOW, PEOPLE, Parts, make_runner, team_policy, who
from tests.people_kinds import KINDS

ALICE_SLACK = PEOPLE.by("slack", "UALICE")
ALICE_EMAIL = PEOPLE.by("email", "Alice <alice@example.com>")
BOB_SLACK = PEOPLE.by("slack", "UBOB")
STRANGER = PEOPLE.by("slack", "U999")  # a Slack user deploybot.toml does not name
SENDER = PEOPLE.by("email", "eve@example.com")  # an address deploybot.toml does not name


@pytest.fixture
def parts() -> Parts:
    """alice is an approver of production too, and nobody approves their own deploy."""
    from bot.core.people import Written

    written = {
        "production": Written(approvers=("alice", "bob", "carol"), approver_must_differ=True),
        "staging": Written(approvers=("*",)),
        "development": Written(approvers=("*",)),
    }
    return Parts(policy=Policy.configured(directory=PEOPLE, written=written))


async def asked(parts: Parts, service: ThreadService, by: Identity, channel: str) -> Thread:
    """`by` asks for the newest backend on production; a run proposes it and waits."""
    from bot.core.events import DeployBackend

    thread = await service.launch("ship the newest backend to production", by, channel=channel)
    parts.model.script(ListGitTags(), DeployBackend(tag="v1.2.3", environment="production"))
    thread = await make_runner(parts).run(thread.id)
    assert thread.status() == "waiting_for_approval"
    return thread


async def command(parts: Parts, service: ThreadService, text: str, by: Identity, channel: str = "slack") -> str:
    """An exact command run to its result: what the bot answered."""
    thread = await service.launch(text, by, channel=channel)
    thread = await make_runner(parts).run(thread.id)
    result = next(e for e in thread.events if isinstance(e, CommandResult))
    return result.text


# --- who is recorded -----------------------------------------------------------------------


async def test_events_record_the_person_and_the_channel_s_evidence(parts, service):
    thread = await service.launch("hello", ALICE_SLACK, channel="slack")
    [said] = thread.events
    assert isinstance(said, UserMessage)
    assert (said.user, said.person, said.via, said.evidence) == ("UALICE", "alice", "slack", "UALICE")
    answered = await service.respond(
        thread.id, "staging please", ALICE_EMAIL, channel="email", evidence="alice@example.com <m1@example.com>",
    )
    reply = answered.events[-1]
    assert (reply.user, reply.person, reply.via) == ("alice@example.com", "alice", "email")
    assert reply.evidence == "alice@example.com <m1@example.com>"
    unknown = (await service.respond(thread.id, "me too", STRANGER, channel="slack")).events[-1]
    assert (unknown.user, unknown.person, principal_of(unknown)) == ("U999", None, "slack:U999")
    assert answered.requesters() == ["alice"]  # one person by two channels


async def test_old_threads_still_load_and_their_raw_users_are_principals():
    old = load('{"type": "user_message", "id": "e1", "at": "2026-01-01T00:00:00Z", "text": "hi", "user": "U1"}')
    assert isinstance(old, UserMessage) and (old.person, old.via, old.evidence) == (None, "", "")
    assert principal_of(old) == "U1" and Thread("t", (old,)).requesters() == ["U1"]
    instruction = Thread("t", (old,)).latest_instruction()
    assert instruction is not None and instruction.identity.principal == "legacy:U1"  # no powers


# --- approving -----------------------------------------------------------------------------


async def test_asking_by_slack_and_approving_by_email_is_still_approving_your_own_deploy(parts, service):
    thread = await asked(parts, service, ALICE_SLACK, "slack")
    request = thread.pending_approval()
    assert request is not None and request.requested_by == "alice" and request.requesters == ["alice"]
    for alice in (ALICE_EMAIL, ALICE_SLACK, who("alice")):
        with pytest.raises(Forbidden, match="alice asked for this deploy and cannot also approve it"):
            await service.respond(thread.id, "", alice, approval_id=request.approval_id, approve=True,
                                  channel=alice.via)
    assert (await service.get(thread.id)).events == thread.events  # nothing recorded
    decided = await service.respond(thread.id, "", BOB_SLACK, approval_id=request.approval_id, approve=True,
                                    channel="slack")
    decision = decided.events[-1]
    assert isinstance(decision, HumanResponse) and (decision.user, decision.person) == ("UBOB", "bob")


async def test_everyone_who_gave_instructions_by_any_channel_is_a_requester(parts, service):
    thread = await service.launch("what can we ship?", BOB_SLACK, channel="slack")
    await service.respond(thread.id, "the newest backend to production", ALICE_EMAIL, channel="email")
    from bot.core.events import DeployBackend

    parts.model.script(DeployBackend(tag="v1.2.3", environment="production"))
    thread = await make_runner(parts).run(thread.id)
    request = thread.pending_approval()
    assert isinstance(request, ApprovalRequested)
    assert request.requested_by == "alice" and request.requesters == ["alice", "bob"]
    with pytest.raises(Forbidden, match="bob asked for this deploy"):
        await service.respond(thread.id, "", PEOPLE.by("email", "bob@example.com"), approval_id=request.approval_id,
                              approve=True, channel="email")
    await service.respond(thread.id, "", who("carol"), approval_id=request.approval_id, approve=True)


@pytest.mark.parametrize("nobody", [STRANGER, SENDER, SERVICE, who("mallory")], ids=lambda i: i.principal)
async def test_someone_unknown_never_approves_where_approvers_are_named(parts, service, nobody):
    thread = await asked(parts, service, who("carol"), "cli")
    request = thread.pending_approval()
    assert request is not None
    with pytest.raises(Forbidden):
        await service.respond(thread.id, "", nobody, approval_id=request.approval_id, approve=True, channel=nobody.via)
    with pytest.raises(Forbidden):
        await service.check_decision(thread.id, request.approval_id, nobody)
    # Their free text is a reply, never a decision (nor a rejection).
    replied = (await service.respond(thread.id, "ship it?", nobody, channel=nobody.via)).events[-1]
    assert isinstance(replied, HumanResponse) and replied.approval_id is None and replied.approve is None


async def test_the_shared_api_token_may_start_threads_and_talk_but_never_decide(parts, service):
    thread = await asked(parts, service, SERVICE, "api")
    request = thread.pending_approval()
    assert request is not None and request.requested_by == "token:api"
    with pytest.raises(Forbidden, match="personal token"):
        await service.respond(thread.id, "", SERVICE, approval_id=request.approval_id, approve=True)


# --- locking -------------------------------------------------------------------------------


async def test_only_whoever_may_lock_locks_and_anyone_else_is_told_who_can():
    parts = Parts(policy=team_policy())  # bob and carol approve production
    service = ThreadService(parts.store, parts.policy, parts.notifier, parts.clock, raw_users=raw_users())
    told = await command(parts, service, "lock production: gotcha", ALICE_SLACK)
    assert told == "Not locked: alice may not lock production; bob or carol may."
    assert await command(parts, service, "lock production: gotcha", STRANGER) == (
        "Not locked: U999 may not lock production; bob or carol may."
    )
    assert await command(parts, service, "lock production: gotcha", SENDER, "email") == (
        "Not locked: eve@example.com may not lock production; bob or carol may."
    )
    assert await parts.environments.holder("production") is None
    locked = await command(parts, service, "lock production: release freeze", BOB_SLACK)
    assert locked.startswith("Locked production: release freeze")
    holder = await parts.environments.holder("production")
    assert holder is not None and holder.owner == "manual:bob" and "by bob since" in holder.describe()


async def test_whoever_locked_unlocks_by_any_channel_others_only_if_they_may_lock():
    from bot.core.people import Written

    written = {"production": Written(approvers=("bob", "carol"), may_lock=("alice", "bob"))}
    parts = Parts(policy=Policy.configured(directory=PEOPLE, written=written,
                                           listed={"slack": "staging:*;development:*"}, normalisers=KINDS))
    service = ThreadService(parts.store, parts.policy, parts.notifier, parts.clock, raw_users=raw_users())
    assert (await command(parts, service, "lock production: freeze", ALICE_SLACK)).startswith("Locked")
    refused = await command(parts, service, "unlock production", who("carol"), "cli")
    assert refused.startswith("Not unlocked: carol may not unlock production (locked by alice since ")
    assert refused.endswith('; whoever locked it may, and alice or bob may take it over: '
                            '"unlock production --force: REASON".')
    assert (await command(parts, service, "unlock production", ALICE_EMAIL, "email")).startswith("Unlocked")
    # bob may lock, so he may lift anyone's lock; a stranger may not even lift their own.
    await parts.environments.acquire(Lock("production", lock_owner(STRANGER), "old", NOW), ttl_ms=None)
    assert (await command(parts, service, "unlock production", STRANGER)).startswith("Not unlocked: U999")
    assert "give a reason" in await command(parts, service, "unlock production", BOB_SLACK)  # theirs
    taken = await command(parts, service, "unlock production --force: stale lock", BOB_SLACK)
    assert taken.startswith("Unlocked production, taking the lock held by slack:U999")


async def test_someone_told_how_to_take_over_a_lock_can_do_it_by_following_the_refusal():
    from bot.core.people import Written

    written = {"production": Written(approvers=("bob", "carol"), may_lock=("alice", "bob"))}
    parts = Parts(policy=Policy.configured(directory=PEOPLE, written=written,
                                           listed={"slack": "staging:*;development:*"}, normalisers=KINDS))
    service = ThreadService(parts.store, parts.policy, parts.notifier, parts.clock, raw_users=raw_users())
    await command(parts, service, "lock production: freeze", ALICE_SLACK)
    refused = await command(parts, service, "unlock production", who("carol"), "cli")
    said = refused.partition(": ")[2].split('"')[1]  # the command the refusal spells out
    assert said == "unlock production --force: REASON"
    taken = await command(parts, service, said.replace("REASON", "alice is away"), BOB_SLACK)
    assert taken.startswith("Unlocked production, taking the lock held by alice")
    assert await parts.environments.holder("production") is None


async def test_in_open_mode_anyone_locks_and_unlocks_as_before():
    parts = Parts(policy=Policy())
    service = ThreadService(parts.store, parts.policy, parts.notifier, parts.clock, raw_users=raw_users())
    opened = Policy().directory
    assert (await command(parts, service, "lock production: x", opened.by_name("zed"), "cli")).startswith("Locked")
    assert (await command(parts, service, "unlock production --force: done", STRANGER)).startswith("Unlocked")


# --- a raw user, read as its channel reads it ------------------------------------------------


async def test_a_raw_user_is_read_by_its_channel_and_a_bare_name_is_nobody_unless_open(parts, service):
    thread = await service.launch("hello", service.directory.by("slack", "UALICE"), channel="slack")
    assert thread.events[0].person == "alice"
    assert service.directory.by("email", "bob@example.com").person == "bob"
    assert service.unproven("ci-pipeline") == Identity(None, "api", "ci-pipeline")
    for person in ("bob", "bob@example.com", "UBOB"):  # a person is never named by what proves nothing
        with pytest.raises(Forbidden, match="use your personal token"):
            service.unproven(person)
    open_service = ThreadService(parts.store, Policy(), None, parts.clock, raw_users=raw_users())
    assert open_service.unproven("bob").person == "bob"
