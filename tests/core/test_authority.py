"""The one authority (bot/core/authority.py): the table of docs/people-and-approvals.md is what it
answers, cell by cell; and the rules behind the cells that need more than one situation."""

from __future__ import annotations

import pytest

from bot.core import authority
from tests.authority_table import ACTIONS, ACTORS, POLICY, answered, asked_by, documented


def test_the_doc_s_table_has_every_actor_and_every_action():
    cells = documented()
    assert sorted({c.actor for c in cells}) == sorted(ACTORS)
    assert sorted({c.action for c in cells}) == sorted(ACTIONS)
    assert len(cells) == len(ACTORS) * len(ACTIONS)


@pytest.mark.parametrize("cell", documented(), ids=lambda c: f"{c.action} / {c.actor}")
def test_each_cell_of_the_doc_s_table_is_what_the_authority_answers(cell):
    refused = answered(cell.action, cell.actor)
    assert (refused is None) == cell.allowed, refused


def test_the_requester_under_approver_must_differ_is_never_among_who_may_decide():
    alice = POLICY.directory.by_name("alice")
    thread, request = asked_by(alice)
    assert authority.deciders(POLICY, thread, request) == ["bob"]
    thread, request = asked_by(POLICY.directory.by_name("dave"))
    assert authority.deciders(POLICY, thread, request) == ["alice", "bob"]
    agent = ACTORS["an agent (claude)"]
    thread, request = asked_by(agent)
    assert authority.deciders(POLICY, thread, request) == ["bob"]  # what an agent asks, its owner asked
