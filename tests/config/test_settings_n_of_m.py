"""N-of-M approvals with approvers from the environment: one channel's list counts each
approver once (two Slack ids are two Slack accounts, two addresses two mailboxes); `*` and
lists that mix Slack ids with addresses (one human could count twice) are refused at start."""

from __future__ import annotations

import pytest

from bot.config.settings import Settings, config_problems
from bot.core.events import ApprovalRequested
from bot.core.people import Identity
from tests.config.settings_helpers import clean_environment  # noqa: F401 (clean_environment: autouse)
from tests.core.test_lifecycle import DEPLOY, Bench
from tests.memory_parts import Parts
from tests.people_kinds import KINDS


def from_environment(monkeypatch: pytest.MonkeyPatch, **variables: str) -> Settings:
    for name, value in variables.items():
        monkeypatch.setenv(name, value)
    return Settings(_env_file=None)


async def approve(b: Bench, thread_id: str, who: Identity):
    request = next((await b.service.get(thread_id)).of(ApprovalRequested))
    await b.service.respond(thread_id, "", who, approval_id=request.approval_id, approve=True)
    return await b.run(thread_id)


async def test_two_of_the_slack_ids_in_approvers_start_and_both_are_needed(monkeypatch):
    settings = from_environment(monkeypatch, APPROVERS="production:UBOB,UCAROL", REQUIRED_APPROVALS="production:2")
    b = Bench(Parts(policy=settings.policy(KINDS)))
    thread = await b.say(DEPLOY, user="anyone")
    assert next(thread.of(ApprovalRequested)).required == 2
    thread = await approve(b, thread.id, Identity(None, "slack", "UBOB"))
    assert thread.status() == "waiting_for_approval" and b.deployed() == []
    thread = await approve(b, thread.id, Identity(None, "slack", "UCAROL"))
    assert b.deployed() == [thread.id] and thread.status() == "done"


def test_two_of_the_addresses_in_approver_emails_start(monkeypatch):
    settings = from_environment(
        monkeypatch, APPROVER_EMAILS="production:bob@example.com,carol@example.com", REQUIRED_APPROVALS="production:2",
    )
    assert settings.policy(KINDS).timing_for("production").required == 2


@pytest.mark.parametrize("variables", [
    {"APPROVERS": "production:*"},
    {"APPROVER_EMAILS": "production:*"},
    {"APPROVERS": "production:UBOB,UCAROL", "APPROVER_EMAILS": "production:bob@example.com"},
    {"APPROVERS": "*:UBOB", "APPROVER_EMAILS": "production:carol@example.com"},
])
def test_anyone_or_a_mix_of_slack_ids_and_addresses_is_refused(monkeypatch, variables):
    with pytest.raises(ValueError) as refused:
        from_environment(monkeypatch, REQUIRED_APPROVALS="production:2", **variables)
    [problem] = config_problems(refused.value)
    assert "production needs 2 approvals from different people" in problem
    assert "one channel" in problem
