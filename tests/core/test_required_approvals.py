"""Several approvals must come from several people."""

from __future__ import annotations

import pytest

from bot.core.people import Written
from bot.core.policy import Policy, PolicyError, Timing
from tests.core.test_lifecycle import PEOPLE
from tests.people_kinds import KINDS


def test_several_approvals_need_approvers_who_are_people():
    """Two approvals must be two people: a Slack id and an address could be one person (and
    `*` anyone twice), so such approvers with required_approvals > 1 are refused at start."""
    with pytest.raises(PolicyError, match="production needs 2 approvals from different people"):
        Policy.configured(listed={"slack": "production:UALICE2,UBOB", "email": "production:alice2@example.com"},
                          normalisers=KINDS,
                          timing={"production": Timing(required=2)})
    written = {"production": Written(approvers=("bob", "carol"))}
    people = Policy.configured(directory=PEOPLE, written=written, timing={"production": Timing(required=2)})
    assert people.timing_for("production").required == 2
