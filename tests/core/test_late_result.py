"""A deploy called "outcome unknown" whose real result lands afterwards (its worker was only
cut off from Redis for longer than its lease): the result answers the question the bot
asked, and the thread ends saying what really happened."""

from __future__ import annotations

import pytest

from bot.core import transcript, wording
from bot.core.control import Finish, Stop, next_action
from bot.core.events import (
    DeployBackend,
    DeployResult,
    DeployStarted,
    DoneForNow,
    Error,
    RequestMoreInformation,
    UserMessage,
)
from bot.core.policy import Policy
from bot.core.thread import Thread

POLICY = Policy()
STEP = DeployBackend(tag="v1.2.3", environment="staging")
WHAT = wording.what_to_deploy("backend", "v1.2.3", "staging")
ASKED = (
    UserMessage(text="deploy backend v1.2.3 to staging", user="alice"),
    STEP,
    DeployStarted(step_id=STEP.id, deploy_id="t1-d"),
    Error(kind="interrupted", step_id=STEP.id, message=wording.interrupted_deploy(WHAT, "t1-d")),
    RequestMoreInformation(source="bot", message=wording.interrupted_ask(WHAT, "t1-d")),
)


def result(ok: bool) -> DeployResult:
    return DeployResult(step_id=STEP.id, deploy_id="t1-d", service="backend", tag="v1.2.3", environment="staging",
                        ok=ok, exit_code=0 if ok else 1, output="")


def test_the_question_waits_for_a_person_while_no_result_came():
    asked = Thread("t1", ASKED)
    assert asked.status() == "waiting_for_human"
    assert next_action(asked, POLICY) == Stop("waiting_for_human")


@pytest.mark.parametrize("ok", [True, False])
def test_a_result_recorded_after_the_question_answers_it(ok):
    late = result(ok)
    answered = Thread("t1", (*ASKED, late))
    assert answered.status() == "running"
    said = wording.finished_after_all("t1-d", transcript.closing_word(late))
    assert next_action(answered, POLICY) == Finish(said)
    assert ("Deployed backend v1.2.3 to staging." if ok else "failed") in said
    ended = Thread("t1", (*answered.events, DoneForNow(source="bot", message=said)))
    assert ended.status() == "done" and next_action(ended, POLICY) == Stop("done")


def test_a_person_who_answered_first_is_not_talked_over():
    replied = Thread("t1", (*ASKED, UserMessage(text="it is fine, leave it", user="alice"), result(True)))
    assert not isinstance(next_action(replied, POLICY), Finish)
