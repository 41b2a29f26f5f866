"""Verifying a deploy after it succeeded, over the in-memory fakes: the pure rules (durations,
conditions, which check fails when), and the runner's whole path: a bake that passes, a check
that fails (a rollback proposed, or run at once where on_failure = "rollback", past a
stop-the-line), an unanswerable check failing after its grace, a resume by another runner,
`verify now` and `skip verification`. Time is the WallClock, moved by hand."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import timedelta

import pytest

from bot.core import outcomes, verification
from bot.core.commands import verify_command
from bot.core.control import CheckNow, EndVerification, Stop, next_action, next_due
from bot.core.events import (
    Cancelled,
    CheckObserved,
    DeployResult,
    DeployService,
    DoneForNow,
    VerificationEnded,
    VerificationStarted,
    VerifyCheck,
)
from bot.core.freeze_windows import stop_the_line
from bot.core.notices import notice
from bot.core.thread import Thread
from bot.core.verification import VerifyPlan, holds, parse_condition, parse_duration
from bot.runtime.ports import DeployRecord, Observation
from bot.testing.memory import MemoryFreezes
from tests.memory_parts import NOW, TAGS, Parts, make_runner, team_policy, who

ERRORS = VerifyCheck(kind="prometheus", name="error ratio", url="http://prometheus:9090",
                     query="errors", condition="< 0.01")
HEALTH = VerifyCheck(kind="http", name="GET http://app/health", url="http://app/health")


def plan(on_failure: str = "propose") -> VerifyPlan:
    return VerifyPlan(timedelta(seconds=60), timedelta(seconds=10), timedelta(seconds=20), (ERRORS, HEALTH),
                      on_failure)  # type: ignore[arg-type]


@dataclass
class ScriptedProbe:
    """Answers each check with what the test set (its name -> Observation); counts the asks."""

    answers: dict[str, Observation] = field(default_factory=lambda: {
        ERRORS.name: Observation(True, "0.001"), HEALTH.name: Observation(True, "HTTP 200"),
    })
    asked: int = 0

    async def observe(self, check: VerifyCheck) -> Observation:
        self.asked += 1
        return self.answers[check.name]


# --- the pure rules ------------------------------------------------------------------------


def test_durations_and_conditions_as_deploybot_toml_writes_them():
    assert parse_duration("10m") == timedelta(minutes=10) and parse_duration("500ms") == timedelta(seconds=0.5)
    assert parse_duration("1.5s") == timedelta(seconds=1.5) and parse_duration("2h") == timedelta(hours=2)
    for bad in ("10", "ten minutes", "5d", "-1s", ""):
        with pytest.raises(ValueError, match="not a duration"):
            parse_duration(bad)
    assert parse_condition("< 0.01") == ("<", 0.01) and parse_condition(">=1e3") == (">=", 1000.0)
    for bad in ("0.01", "< x", "=< 1", "<"):
        with pytest.raises(ValueError, match="not a condition"):
            parse_condition(bad)
    assert holds("< 0.01", 0.001) and not holds("< 0.01", 0.5) and not holds("> 0", float("nan"))
    assert holds("!= 0", 1) and not holds("== 1", 2)
    # An infinity meets no condition either, whichever side of it the bound is.
    for condition in ("< 0.01", "> 0.01", "!= 0"):
        assert not holds(condition, float("-inf")) and not holds(condition, float("inf")), condition


def test_verify_now_and_skip_verification_are_exact_commands():
    assert verify_command("verify now") == ("verify_now", "")
    assert verify_command("<@U123> Verify now.") == ("verify_now", "")
    assert verify_command("skip verification: the dashboard is down, checked by hand") == (
        "skip", "the dashboard is down, checked by hand")
    for other in ("verify now?", "skip verification", "please verify now and then deploy", "skip it"):
        assert verify_command(other) is None


def bake(thread_id: str = "t1", at=NOW) -> VerificationStarted:
    return VerificationStarted(step_id="s", deploy_id=f"{thread_id}-s", service="backend", environment="staging",
                               tag="v1.2.3", ends_at=at + timedelta(seconds=60), interval=10, grace=20,
                               checks=[ERRORS, HEALTH], at=at)


def seen(check: VerifyCheck, ok: bool | None, seconds: float, value: str = "v") -> CheckObserved:
    return CheckObserved(deploy_id="t1-s", check=check.name, ok=ok, value=value, at=NOW + timedelta(seconds=seconds))


def test_the_state_of_a_bake_is_derived_from_its_events_and_the_clock_alone():
    policy = team_policy()
    started = bake()
    thread = Thread("t1", (started,))
    assert isinstance(next_action(thread, policy, NOW), CheckNow)  # the first round at once
    assert next_action(thread, policy) == Stop("verifying") and thread.status() == "verifying"
    thread = thread.extended([seen(ERRORS, True, 0), seen(HEALTH, True, 0)])
    assert next_action(thread, policy, NOW + timedelta(seconds=9)) == Stop("verifying")
    assert next_due(thread, policy, NOW + timedelta(seconds=3)) == NOW + timedelta(seconds=10)
    assert isinstance(next_action(thread, policy, NOW + timedelta(seconds=10)), CheckNow)
    # Unanswerable: failing only once the grace (20 s) has passed since it stopped answering.
    thread = thread.extended([seen(ERRORS, None, 10, "no answer"), seen(HEALTH, True, 10)])
    assert verification.failing(thread, started, NOW + timedelta(seconds=29)) is None
    assert verification.failing(thread, started, NOW + timedelta(seconds=30)) == verification.Failing(
        ERRORS.name, "no answer")
    # ... but at the end of the bake a check still inside its grace fails it.
    assert verification.failing(thread, started, NOW + timedelta(seconds=11), final=True) is not None
    # An answer outside the condition fails at once.
    thread = thread.extended([seen(ERRORS, False, 20, "0.5"), seen(HEALTH, True, 20)])
    action = next_action(thread, policy, NOW + timedelta(seconds=20))
    assert isinstance(action, EndVerification) and (action.ended.check, action.ended.value) == (ERRORS.name, "0.5")
    # The final round (at or after the end) with everything holding: verified.
    good = Thread("t1", (started, seen(ERRORS, True, 60), seen(HEALTH, True, 60)))
    action = next_action(good, policy, NOW + timedelta(seconds=61))
    assert isinstance(action, EndVerification) and action.ended.outcome == "verified"
    # Ended: the thread is no longer verifying.
    done = good.extended([VerificationEnded(deploy_id="t1-s", outcome="verified")])
    assert done.status() != "verifying" and verification.open_verification(done) is None


def test_a_deploy_is_verified_only_once_and_never_a_rollback_or_a_forks_copy():
    policy = team_policy().with_verify({("backend", "staging"): plan()})
    result = DeployResult(step_id="s", deploy_id="t1-s", service="backend", tag="v1.2.3", environment="staging",
                          ok=True)
    step = DeployService(id="s", service="backend", tag="v1.2.3", environment="staging")
    assert verification.to_verify(Thread("t1", (step, result)), policy.verify_plan) == result
    assert verification.to_verify(Thread("t2", (step, result)), policy.verify_plan) is None  # a fork's copy
    rollback = result.model_copy(update={"rollback_of": "t0-x"})
    assert verification.to_verify(Thread("t1", (step, rollback)), policy.verify_plan) is None
    assert verification.to_verify(Thread("t1", (step, result, bake())), policy.verify_plan) is None
    cancelled = Cancelled(user="alice")
    assert verification.to_verify(Thread("t1", (step, result, cancelled)), policy.verify_plan) is None
    other = result.model_copy(update={"environment": "production"})
    assert verification.to_verify(Thread("t1", (step.model_copy(update={"environment": "production"}), other)),
                                  policy.verify_plan) is None


# --- the runner --------------------------------------------------------------------------


def verified_parts(env: str = "staging", on_failure: str = "propose") -> Parts:
    parts = Parts(policy=team_policy().with_verify({("backend", env): plan(on_failure)}))
    # What ran before: the rollback's target.
    return parts


async def with_history(parts: Parts, env: str) -> None:
    await parts.environments.record(DeployRecord(
        env, "backend", "v1.2.2", TAGS["v1.2.2"], True, NOW - timedelta(days=1), None, "t0", "t0-old"))


async def start(parts: Parts, runner, env: str = "staging") -> Thread:
    from bot.runtime.service import ThreadService

    await with_history(parts, env)
    service = ThreadService(parts.store, parts.policy, None, parts.clock)
    thread = await service.launch(f"deploy backend v1.2.3 to {env}", who("alice"))
    thread = await runner.run(thread.id)
    if env == "production":
        pending = thread.pending_approval()
        assert pending is not None
        await service.respond(thread.id, "", who("bob"), approval_id=pending.approval_id, approve=True)
        thread = await runner.run(thread.id)
    return thread


async def test_a_healthy_deploy_is_verified_after_its_bake_holding_the_lock_until_then():
    parts, probe = verified_parts(), ScriptedProbe()
    runner = make_runner(parts, probe=probe)
    thread = await start(parts, runner)
    started = verification.open_verification(thread)
    assert thread.status() == "verifying" and started is not None and started.ends_at == NOW + timedelta(seconds=60)
    assert (await parts.environments.holder("staging", "backend")).owner == started.deploy_id
    assert probe.asked == 2  # the first round at once
    for _ in range(6):
        parts.clock.advance(seconds=10)
        thread = await runner.run(thread.id)
    assert thread.status() != "verifying" and probe.asked == 14
    [ended] = thread.of(VerificationEnded)
    assert ended.outcome == "verified" and ended.at == NOW + timedelta(seconds=60)
    assert await parts.environments.holder("staging", "backend") is None
    [record] = [r for r in await parts.environments.recent("staging", 5) if r.deploy_id == started.deploy_id]
    assert record.verified_at == ended.at and not record.faulty


async def test_a_failing_check_marks_the_deploy_faulty_and_proposes_a_rollback_for_approval():
    parts, probe = verified_parts("production"), ScriptedProbe()
    runner = make_runner(parts, probe=probe)
    thread = await start(parts, runner, "production")
    deploy_id = verification.open_verification(thread).deploy_id
    probe.answers[ERRORS.name] = Observation(False, "0.25")
    parts.clock.advance(seconds=10)
    thread = await runner.run(thread.id)
    [ended] = thread.of(VerificationEnded)
    assert (ended.outcome, ended.check, ended.value) == ("failed", ERRORS.name, "0.25")
    request = thread.pending_approval()
    assert request is not None and request.rollback_of == deploy_id and request.tag == "v1.2.2"
    assert thread.status() == "waiting_for_approval" and len(parts.deployer.requests) == 1
    [record] = [r for r in await parts.environments.recent("production", 5) if r.deploy_id == deploy_id]
    assert record.faulty and record.verified_at is None
    told = notice(thread, ended)  # what the channel the request came from is told
    assert told is not None and "FAILED" in told.text and "0.25" in told.text and ERRORS.name in told.text
    assert any("verification_ended" in types for _, types in parts.notifier.published)


async def test_on_failure_rollback_rolls_back_at_once_past_a_stop_the_line_and_records_why():
    parts, probe = verified_parts("production", "rollback"), ScriptedProbe()
    freezes = MemoryFreezes(parts.clock)
    runner = make_runner(parts, probe=probe, freezes=freezes)
    thread = await start(parts, runner, "production")
    deploy_id = verification.open_verification(thread).deploy_id
    await freezes.set(stop_the_line("production", reason="incident 12", set_by="carol", since=parts.clock()))
    probe.answers[HEALTH.name] = Observation(False, "HTTP 503, not 200")
    parts.clock.advance(seconds=10)
    thread = await runner.run(thread.id)
    results = list(thread.of(DeployResult))
    assert [(r.tag, r.ok, r.rollback_of) for r in results] == [("v1.2.3", True, None), ("v1.2.2", True, deploy_id)]
    rollback = results[-1]
    assert rollback.approved_by == "deploybot" and rollback.forced_by == "deploybot"
    assert "incident 12" in (rollback.force or "")
    assert [r.tag for r in parts.deployer.requests] == ["v1.2.3", "v1.2.2"]
    newest = (await parts.environments.recent("production", 1))[0]
    assert newest.rollback_of == deploy_id and "HTTP 503" in newest.proposal_reason and newest.proposed_by == "bot"
    # The thread reads as what happened, and the lock it leaves is the bot's, not alice's (who
    # asked for the deploy, not for the rollback) nor bob's (who approved the deploy).
    came = outcomes.outcome(thread)
    assert (came.kind, came.detail, came.by) == (
        "rolled_back", "v1.2.3 failed verification in production; rolled back to v1.2.2", "")
    lock = await parts.environments.holder("production", "backend")
    assert lock is not None and lock.owner == "manual:deploybot" and lock.by().startswith("by deploybot since")
    assert "by deploybot" in lock.reason


async def test_an_unanswerable_check_fails_after_its_grace_never_before_and_a_resume_goes_on_where_it_was():
    parts, probe = verified_parts(), ScriptedProbe()
    runner = make_runner(parts, probe=probe)
    thread = await start(parts, runner)
    probe.answers[ERRORS.name] = Observation(None, "no answer from http://prometheus:9090: ConnectError")
    parts.clock.advance(seconds=10)
    thread = await runner.run(thread.id)
    parts.clock.advance(seconds=10)
    thread = await runner.run(thread.id)
    assert thread.status() == "verifying"  # 10 s unanswered: inside the 20 s grace
    # Another runner (the first one's worker died) picks it up from the events alone.
    other = make_runner(parts, "another-runner", probe=probe)
    parts.clock.advance(seconds=10)
    thread = await other.run(thread.id)
    [ended] = thread.of(VerificationEnded)
    assert ended.outcome == "failed" and ended.value.startswith("no answer") and ended.at == NOW + timedelta(seconds=30)


async def test_verify_now_ends_the_bake_early_only_when_every_check_holds_and_only_for_approvers():
    from bot.runtime.service import ThreadService

    parts, probe = verified_parts("production"), ScriptedProbe()
    runner = make_runner(parts, probe=probe)
    service = ThreadService(parts.store, parts.policy, None, parts.clock)
    thread = await start(parts, runner, "production")
    await service.respond(thread.id, "verify now", who("mallory"))
    thread = await runner.run(thread.id)
    assert thread.status() == "verifying" and "mallory may not" in thread.events[-1].text
    probe.answers[HEALTH.name] = Observation(None, "no answer")
    await service.respond(thread.id, "verify now", who("bob"))
    thread = await runner.run(thread.id)
    assert thread.status() == "verifying" and "GET http://app/health does not hold" in thread.events[-1].text
    probe.answers[HEALTH.name] = Observation(True, "HTTP 200")
    await service.respond(thread.id, "verify now", who("carol"))
    parts.model.script(DoneForNow(message="verified"))
    thread = await runner.run(thread.id)
    [ended] = thread.of(VerificationEnded)
    assert (ended.outcome, ended.early, ended.by) == ("verified", True, "carol")
    assert await parts.environments.holder("production", "backend") is None
    record = next(r for r in await parts.environments.recent("production", 5) if r.tag == "v1.2.3")
    assert (record.verified_at, record.verified_by) == (ended.at, "carol")  # on the record, which outlives the thread


async def test_skip_verification_is_for_approvers_and_is_recorded_with_its_reason():
    from bot.runtime.service import ThreadService

    parts, probe = verified_parts("production"), ScriptedProbe()
    runner = make_runner(parts, probe=probe)
    service = ThreadService(parts.store, parts.policy, None, parts.clock)
    thread = await start(parts, runner, "production")
    await service.respond(thread.id, "skip verification: dashboards down", who("alice"))
    thread = await runner.run(thread.id)
    assert thread.status() == "verifying"
    await service.respond(thread.id, "skip verification: dashboards down, checked by hand", who("bob"))
    parts.model.script(DoneForNow(message="ok"))
    thread = await runner.run(thread.id)
    [ended] = thread.of(VerificationEnded)
    assert (ended.outcome, ended.by, ended.reason) == ("skipped", "bob", "dashboards down, checked by hand")
    assert await parts.environments.holder("production", "backend") is None
    record = next(r for r in await parts.environments.recent("production", 5) if r.tag == "v1.2.3")
    assert record.verified_at is None and not record.faulty  # skipped is not verified
    # Who skipped it and why, on the record, which outlives the thread
    assert (record.verification_skipped_at, record.verification_skipped_by, record.verification_skip_reason) == (
        ended.at, "bob", "dashboards down, checked by hand")


def test_plans_are_per_service_and_environment():
    policy = team_policy().with_verify({("backend", "staging"): plan()})
    assert policy.verify_plan("backend", "staging") == plan() and policy.verify_plan("backend", "production") is None
    assert replace(policy, verify={}).verify_plan("backend", "staging") is None


async def test_a_thread_cancelled_during_its_bake_lets_the_lock_go_with_no_verdict():
    from bot.runtime.service import ThreadService

    parts, probe = verified_parts(), ScriptedProbe()
    runner = make_runner(parts, probe=probe)
    thread = await start(parts, runner)
    assert await parts.environments.holder("staging", "backend") is not None
    await ThreadService(parts.store, parts.policy, None, parts.clock).cancel(thread.id, who("alice"), "not now")
    thread = await runner.run(thread.id)
    assert thread.status() == "cancelled" and list(thread.of(VerificationEnded)) == []
    assert await parts.environments.holder("staging", "backend") is None


def test_the_transcript_counts_the_checks_of_a_bake_in_words():
    from bot.core.transcript import line

    assert "(2 checks; on failure: propose)" in line(bake())
    assert "(1 check; on failure: propose)" in line(bake().model_copy(update={"checks": [HEALTH]}))
