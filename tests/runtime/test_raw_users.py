"""Which channels' events store the channel's own id of whoever spoke as `user` (as Slack's
and email's always did) is the registry's to say, not the service's: a new kind is told alike."""

from __future__ import annotations

from bot.core.identity import Identity
from bot.core.thread import Origin
from bot.runtime.service import ThreadService
from bot.wiring.channels import CHANNELS, raw_users
from tests.memory_parts import Parts


async def test_a_kind_the_service_is_told_of_stores_the_raw_id_as_user():
    parts = Parts()
    service = ThreadService(parts.store, parts.policy, None, parts.clock, raw_users=frozenset({"chat"}))
    thread = await service.launch("what's on staging?", Identity("bob", "chat", "u-1"), "chat", Origin(channel="chat"))
    said = thread.events[0]
    assert (said.user, said.person, said.via, said.evidence) == ("u-1", "bob", "chat", "u-1")
    other = await service.launch("hi", Identity("bob", "name", "bob"), "cli", Origin(channel="cli"))
    assert other.events[0].user == "bob"  # by name: the person's name, as before


def test_slack_and_email_store_the_raw_id_as_they_always_did():
    assert raw_users() == frozenset({"slack", "email"})
    assert all(kind.proof for kind in CHANNELS.values())
