"""Issue 24, the rules and words of the core: a pending approval follows the rules in force
when it is decided and again right before its deploy (settings changed by a restart), a
finished thread is never cancelled, and the words people read say what happened once and
truly. Over the in-memory fakes; a "restart" is a new Bench with new settings over the same
store, history and deployer."""

from __future__ import annotations

from dataclasses import replace

import pytest

from bot.adapters.channels import cli
from bot.adapters.http.console import model
from bot.core import commands, notices, transcript, wording
from bot.core.events import (
    ApprovalRequested,
    ApprovalRulesChanged,
    Change,
    CommitSummary,
    DeployResult,
    DeployService,
    DoneForNow,
    Error,
    HumanResponse,
)
from bot.core.outcomes import outcome
from bot.core.promotion import Order, Promotion
from bot.core.thread import ApprovalRules, Thread
from bot.core.views import thread_json
from bot.runtime.ports import DeployOutcome
from bot.runtime.service import WrongState
from tests.core.test_lifecycle import DEPLOY, PEOPLE, Bench, bench, of, policy
from tests.memory_parts import NOW, Parts

ANYONE_ONE = {"approvers": ("*",), "required": 1}  # what open mode asks: one approval, anyone's
TEAM_TWO = {"approvers": ("bob", "carol"), "required": 2}  # the settings after the restart


def restarted(before: Bench, **settings: object) -> Bench:
    """The same stores and deployer, under new settings (a restart after editing them)."""
    parts = Parts(policy=policy(**settings), clock=before.parts.clock, deployer=before.parts.deployer)  # type: ignore[arg-type]
    parts.store, parts.environments = before.parts.store, before.parts.environments
    return Bench(parts)


def request_of(thread: Thread) -> ApprovalRequested:
    return next(thread.of(ApprovalRequested))


async def approve(b: Bench, thread: Thread, user: str) -> Thread:
    """A decision recorded by the service, without running the thread."""
    request = request_of(thread)
    return await b.service.respond(thread.id, "", PEOPLE.by_name(user), approval_id=request.approval_id, approve=True)


# --- a pending approval follows the rules in force --------------------------------------------


async def test_an_approval_asked_under_weaker_rules_waits_for_what_the_rules_need_now():
    before = bench(**ANYONE_ONE)
    thread = await before.say(DEPLOY)
    request = request_of(thread)
    assert (request.required, request.approvers) == (1, ["*"])  # what applied when it was asked
    after = restarted(before, **TEAM_TWO)

    thread = await after.decide(thread, "bob")  # one approval was the decision before the restart
    assert thread.status() == "waiting_for_approval" and after.parts.deployer.requests == []
    changed, decision = thread.events[-2:]
    assert isinstance(changed, ApprovalRulesChanged) and isinstance(decision, HumanResponse)
    assert (changed.required, changed.approvers) == (2, ["bob", "carol"])
    # What applied to bob's decision is in the thread; the request still says what it was asked under.
    position = thread.events.index(decision)
    assert thread.approval_rules(request.approval_id, position) == ApprovalRules(2, ("bob", "carol"))
    assert thread.approval_rules(request.approval_id, position - 1) == ApprovalRules(1, ("*",))
    assert request_of(thread).required == 1 and thread_json(thread)["pending_approval"]["required_now"] == 2
    said = notices.notice(thread, changed)
    assert said is not None and "now needs 2 approvals, from bob or carol (1 so far)" in said.text
    assert "now needs 2 approvals" in transcript.markdown(thread)

    thread = await after.decide(thread, "carol")
    assert after.deployed() == [thread.id] and thread.status() == "done"
    assert len(of(thread, ApprovalRulesChanged)) == 1  # recorded once: carol's decision followed it


async def test_approvals_from_people_no_longer_allowed_do_not_count():
    before = bench(approvers=("bob", "carol", "dave"), required=2)
    thread = await before.say(DEPLOY)
    thread = await before.decide(thread, "dave")  # dave's counted then: 1 of 2
    assert [a.user for a in thread.approvals_for(request_of(thread).approval_id)] == ["dave"]
    after = restarted(before, **TEAM_TWO)

    thread = await after.decide(thread, "bob")
    request = request_of(thread)
    assert thread.status() == "waiting_for_approval" and after.parts.deployer.requests == []
    assert [a.person for a in thread.approvals_for(request.approval_id)] == ["bob"]  # dave's no longer counts
    assert model.approvals(thread, PEOPLE.by_name("carol"), after.parts.policy, after.now)[0].progress == (
        "1 of 2: approved by bob"
    )
    thread = await after.decide(thread, "carol")
    assert after.deployed() == [thread.id]


async def test_an_approval_decided_before_a_restart_is_checked_again_right_before_the_deploy():
    before = bench(**ANYONE_ONE)
    thread = await before.say(DEPLOY)
    thread = await approve(before, thread, "bob")  # decided, but no run took it before the restart
    assert thread.decision_for(request_of(thread).approval_id) is not None
    after = restarted(before, **TEAM_TWO)

    thread = await after.run(thread.id)
    assert after.parts.deployer.requests == [] and thread.status() == "waiting_for_approval"
    assert isinstance(thread.events[-1], ApprovalRulesChanged) and thread.required(request_of(thread).approval_id) == 2
    thread = await after.decide(thread, "carol")
    assert after.deployed() == [thread.id]


async def test_unchanged_rules_record_nothing_more():
    b = bench(**TEAM_TWO)
    thread = await b.say(DEPLOY)
    assert request_of(thread).approvers == ["bob", "carol"]
    thread = await b.decide(thread, "bob")
    thread = await b.decide(thread, "carol")
    assert b.deployed() == [thread.id] and of(thread, ApprovalRulesChanged) == []


# --- a finished thread is never cancelled -------------------------------------------------------


@pytest.mark.parametrize(("approve_it", "ending"), [(True, "deployed"), (False, "rejected")])
async def test_a_finished_thread_cannot_be_cancelled_and_keeps_its_outcome(approve_it, ending):
    b = bench()
    thread = await b.say(DEPLOY)
    thread = await b.decide(thread, "bob", approve=approve_it)
    assert thread.status() == "done" and outcome(thread).words == ending
    with pytest.raises(WrongState) as refused:
        await b.service.cancel(thread.id, PEOPLE.by_name("bob"))
    assert refused.value.message == f"this thread is finished ({ending}); nothing to cancel"
    assert (await b.load(thread)).events == thread.events  # nothing recorded


# --- words --------------------------------------------------------------------------------------


async def test_a_rejection_without_feedback_or_model_says_neither():
    b = bench()  # no model
    thread = await b.say(DEPLOY)
    thread = await b.decide(thread, "bob", approve=False)
    assert thread.events[-1].message == "Not deployed: bob rejected it."  # type: ignore[union-attr]
    console = wording.rejected_notice(gave_feedback=False, model=False)
    assert "re-plans" not in console and "feedback" not in console
    assert "feedback" not in wording.rejected_notice(gave_feedback=False, model=True)
    assert wording.rejected_notice(gave_feedback=True, model=True) == "Rejected: the model re-plans from your feedback."


def test_a_rollback_proposal_says_what_it_rolls_back_from_and_to():
    step = DeployService(service="api", tag="v1.0.3", environment="production", rollback_of="t-s",
                         rollback_from="v1.1.0", reason=wording.rollback_reason("v1.0.3", "v1.1.0"))
    line = transcript.plain(step)
    assert line == "deploybot proposes: roll back api in production from v1.1.0 to v1.0.3"
    assert "roll back to" not in transcript.markdown(Thread("t", (step,)))


def test_the_transcript_runs_a_commit_heading_into_its_first_commit():
    change = Change(from_tag="v1.1.0", from_commit="b" * 40, to_commit="a" * 40, behind=1,
                    commits=[CommitSummary(sha="cc9da67" + "0" * 33, subject="fix")])
    request = ApprovalRequested(step_id="s", thread_id="t", args_hash="h", service="api", tag="v1.0.3",
                                commit="a" * 40, environment="production", requested_by="alice",
                                expires_at=NOW, change=change)
    line = transcript.plain(request)
    assert "commits removed: cc9da67 fix" in line and ":;" not in line


async def test_nothing_to_roll_back_to_is_said_once(capsys):
    b = bench()
    await b.say("deploy backend v1.2.2 to staging")  # the only deploy there: nothing earlier
    printer = cli.PrintNotifier()
    b.runner.notifier = printer
    thread = await b.service.launch(commands.rollback_text("backend", "staging"), PEOPLE.by_name("alice"))
    thread = await b.run(thread.id)
    said = wording.nothing_to_roll_back("backend", "staging")
    assert thread.status() == "done" and sum(getattr(e, "text", getattr(e, "message", "")) == said
                                            for e in thread.events) == 2  # the result and the closing word
    assert transcript.markdown(thread).count("There is nothing to roll") == 1
    assert [i.words for i in model.timeline(thread, ())].count(said) == 1
    assert capsys.readouterr().out.count("There is nothing to roll") == 1


async def test_the_terminal_asks_only_someone_who_may_decide(capsys):
    b = bench()

    async def run(thread_id: str) -> Thread | None:
        return await b.runner.run(thread_id)

    term = cli.Terminal(b.service, run)
    assert await cli.chat(term, DEPLOY, "alice") == 0  # alice asked; bob and carol approve production
    out = capsys.readouterr().out
    assert "Approve" not in out and "[y" not in out
    assert "Waiting for approval from bob or carol; you cannot decide it: alice is not an approver" in out


async def test_a_refusal_is_said_once_on_a_page_and_reads_refused():
    """The promotion order stops a deploy: the refusal is on the page once (not again as the
    bot's closing "Stopped: ..."), as "refused", while chat still gets the closing word."""
    order = replace(policy(), promotion=Promotion(Order(("staging", "production"))))
    b = Bench(Parts(policy=order))
    thread = await b.service.launch("deploy backend v1.2.3 to production", PEOPLE.by_name("alice"))
    thread = await b.run(thread.id)
    refusal = next(thread.of(Error)).message
    assert refusal.startswith("v1.2.3 (ccccccc) has not been deployed to staging")
    words = [i.words for i in model.timeline(thread, ())]
    assert sum(refusal in w for w in words) == 1 and f"refused (promotion): {refusal}" in words, words
    assert transcript.markdown(thread).count(refusal) == 1
    closing = next(thread.of(DoneForNow))
    assert closing.message == wording.stopped(refusal)  # what chat is told


async def test_a_deploy_s_result_is_said_once_on_a_page_and_chat_gets_the_closing_word():
    b = bench()
    b.parts.deployer.script(DeployOutcome(ok=False, exit_code=2, output="disk full"))
    thread = await b.say("deploy backend v1.2.2 to staging")
    assert "disk full" in list(thread.of(DoneForNow))[-1].message
    closing = list(thread.of(DoneForNow))[-1]
    result = list(thread.of(DeployResult))[-1]
    assert closing.message == transcript.closing_word(result)
    items = [i.event for i in model.timeline(thread, ())]
    assert result in items and closing not in items  # the page says it once, as the result
    assert transcript.markdown(thread).count(closing.message) == 0
