"""What came of a thread (bot.core.outcomes): every outcome from the events that make it, and
who and when, so three threads titled alike can be told apart. The API's status is untouched:
a rejected deploy's thread is "done" there, and "rejected" here."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from bot.core.events import (
    ApprovalExpired,
    ApprovalRequested,
    Cancelled,
    CommandResult,
    DeployQueued,
    DeployResult,
    DeployService,
    DeployStarted,
    DoneForNow,
    Error,
    HumanResponse,
    LockEnvironment,
    RequestMoreInformation,
    RollBack,
    SenderConfirmationExpired,
    SenderConfirmationRequested,
    UserMessage,
)
from bot.core.outcomes import WORDS, Outcome, about, outcome
from bot.core.thread import Thread

NOW = datetime(2026, 11, 27, 12, 0, tzinfo=UTC)


def at(minutes: int) -> datetime:
    return NOW - timedelta(minutes=60 - minutes)


ASKED = UserMessage(text="deploy backend v0.1.0 to production", user="U1", person="carol", via="slack", at=at(0))
STEP = DeployService(service="backend", tag="v0.1.0", environment="production", at=at(1))
REQUEST = ApprovalRequested(
    step_id=STEP.id, thread_id="t", args_hash="h", service="backend", tag="v0.1.0", commit="c" * 40,
    environment="production", requested_by="carol", expires_at=NOW + timedelta(hours=1), at=at(2),
)
ASKING = (ASKED, STEP, REQUEST)


def thread(*events: object) -> Thread:
    return Thread("t", tuple(events))  # type: ignore[arg-type]


def approve(person: str, minute: int) -> HumanResponse:
    return HumanResponse(user=person, person=person, via="session", approval_id=REQUEST.approval_id, approve=True,
                         at=at(minute))


def test_deployed_failed_and_rejected_say_who_and_when():
    started = DeployStarted(step_id=STEP.id, deploy_id="d1", at=at(4))
    ok = DeployResult(step_id=STEP.id, deploy_id="d1", service="backend", tag="v0.1.0", environment="production",
                      ok=True, approved_by="alice", at=at(5))
    said = DoneForNow(message="Deployed.", at=at(6))
    deployed = thread(*ASKING, approve("alice", 3), started, ok, said)
    assert deployed.status(NOW) == "done"
    assert outcome(deployed, NOW) == Outcome("deployed", "v0.1.0 to production", "alice", at(5))

    broke = ok.model_copy(update={"ok": False, "exit_code": 2})
    assert outcome(thread(*ASKING, approve("alice", 3), started, broke, said), NOW).kind == "failed"

    no = HumanResponse(user="U2", person="bob", via="slack", approval_id=REQUEST.approval_id, approve=False,
                       text="not today", at=at(7))
    rejected = thread(*ASKING, no, DoneForNow(message="Not deploying.", at=at(8)))
    assert rejected.status(NOW) == "done"  # the API's status: nothing left to do
    assert outcome(rejected, NOW) == Outcome("rejected", "v0.1.0 to production", "bob", at(7))
    assert outcome(rejected, NOW).words == "rejected"


def test_cancelled_expired_and_refused():
    stop = Cancelled(user="alice", person="alice", via="session", reason="wrong tag", at=at(9))
    assert outcome(thread(*ASKING, stop), NOW) == Outcome("cancelled", "wrong tag", "alice", at(9))

    lapsed = ApprovalExpired(approval_id=REQUEST.approval_id, step_id=STEP.id, expires_at=at(10), at=at(11))
    expired = thread(*ASKING, lapsed, DoneForNow(message="Expired.", at=at(12)))
    assert outcome(expired, NOW) == Outcome("expired", "v0.1.0 to production", at=at(11))

    frozen = Error(kind="frozen", step_id=STEP.id, message="production is frozen", at=at(3))
    assert outcome(thread(ASKED, STEP, frozen, DoneForNow(message="Frozen.", at=at(4))), NOW).kind == "refused"
    failing = Error(kind="checks", step_id=STEP.id, message="CI failed", at=at(3))
    assert outcome(thread(ASKED, STEP, failing, DoneForNow(message="CI.", at=at(4))), NOW).kind == "refused"
    # Nothing was deployed: the promotion order (a commit that never passed staging, or was
    # marked faulty there) and the re-check before the deploy refuse, they do not fail.
    unpromoted = Error(kind="promotion", step_id=STEP.id, message="not in staging yet", at=at(3))
    assert outcome(thread(ASKED, STEP, unpromoted, DoneForNow(message="No.", at=at(4))), NOW).kind == "refused"
    rechecked = Error(kind="recheck", step_id=STEP.id, message="the tag moved", at=at(3))
    assert outcome(thread(ASKED, STEP, rechecked, DoneForNow(message="No.", at=at(4))), NOW).kind == "refused"

    lock = LockEnvironment(environment="production", reason="mine", at=at(1))
    taken = CommandResult(step_id=lock.id, ok=False, text="production is locked by bob", at=at(2))
    said = DoneForNow(message="Not locked.", source="bot", at=at(3))
    assert outcome(thread(ASKED, lock, taken, said), NOW) == Outcome("refused", "production is locked by bob", at=at(2))
    done = CommandResult(step_id=lock.id, ok=True, text="locked", at=at(2))
    assert outcome(thread(ASKED, lock, done, said), NOW) == Outcome("done", at=at(3))

    asked = SenderConfirmationRequested(address="a@example.com", claimed="alice", text="deploy", expires_at=at(5),
                                        at=at(0))
    dropped = SenderConfirmationExpired(confirmation_id=asked.confirmation_id, expires_at=at(5), at=at(6))
    assert outcome(thread(asked, dropped), NOW) == Outcome("expired", "the sender never confirmed", at=at(6))


def test_waiting_and_running():
    assert outcome(thread(*ASKING), NOW) == Outcome("waiting", "for approval", at=at(2))
    # lapsed but not yet recorded: it waits for a reply (an approval would be refused)
    assert outcome(thread(*ASKING), REQUEST.expires_at + timedelta(seconds=1)).detail == "for a reply"
    queued = DeployQueued(step_id=STEP.id, position=1, behind="production is locked", at=at(4))
    assert outcome(thread(*ASKING, approve("alice", 3), queued), NOW).detail == "in line for a lock or a freeze"
    question = RequestMoreInformation(message="Which tag?", at=at(1))
    assert outcome(thread(ASKED, question), NOW) == Outcome("waiting", "for a reply", at=at(1))
    assert outcome(thread(ASKED), NOW) == Outcome("running", at=at(0))
    broke = Error(kind="internal", message="boom", at=at(1))
    assert outcome(thread(ASKED, broke), NOW).kind == "failed"


@pytest.mark.parametrize("kind", sorted(WORDS))
def test_every_outcome_reads_as_words_and_none_of_them_is_done(kind: str):
    words = Outcome(kind).words  # type: ignore[arg-type]
    assert words and words != "done"


def test_a_thread_is_about_its_last_deploy_step_and_before_one_about_nothing():
    assert about(thread(ASKED)) == ""
    assert about(thread(*ASKING)) == "backend v0.1.0 to production"
    back = RollBack(service="backend", environment="production", at=at(5))
    assert about(thread(*ASKING, back)) == "backend v0.1.0 to production"  # nothing put back yet
    again = DeployService(service="backend", tag="v0.0.9", environment="production", at=at(6))
    assert about(thread(*ASKING, back, again)) == "backend v0.0.9 to production"
