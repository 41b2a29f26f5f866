"""The reducer (bot.core.control.next_action) over many threads: whole lifecycles event by event,
and invariants over thousands of generated threads, valid or not. Pure: no I/O, no clock."""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

import pytest

from bot.core import events as ev
from bot.core.control import (
    AskApproval,
    Decide,
    Escalate,
    ExpireSenderConfirmation,
    Finish,
    Interrupted,
    PlanRollback,
    RunCommand,
    RunDeploy,
    RunTags,
    Stop,
    next_action,
)
from bot.core.events import (
    ApprovalExpired,
    ApprovalRequested,
    Cancelled,
    CommandResult,
    DeliveryFailed,
    DeployBackend,
    DeployFrontend,
    DeployQueued,
    DeployResult,
    DeployService,
    DeployStarted,
    DoneForNow,
    Error,
    GitTag,
    GitTagsResult,
    HumanResponse,
    ListGitTags,
    LockEnvironment,
    RequestMoreInformation,
    RollBack,
    SenderConfirmationExpired,
    SenderConfirmationRequested,
    SenderConfirmed,
    ShowDeploys,
    UnlockEnvironment,
    UserMessage,
)
from bot.core.policy import Policy, args_hash
from bot.core.thread import STATUSES, Thread

NOW = datetime(2026, 11, 5, 12, 0, tzinfo=UTC)
POLICY = Policy(max_steps=5, max_errors=3)
THREAD = "t1"


def request_for(step, thread_id: str = THREAD) -> ApprovalRequested:
    return ApprovalRequested(
        step_id=step.id, thread_id=thread_id, args_hash=args_hash(step.service, step.tag, step.environment),
        service=step.service, tag=step.tag, commit="c" * 40, environment=step.environment,
        requested_by="alice", expires_at=NOW + timedelta(hours=1),
    )


def started_for(step, thread_id: str = THREAD) -> DeployStarted:
    return DeployStarted(step_id=step.id, deploy_id=f"{thread_id}-{step.id}", commit="c" * 40)


def result_for(step, ok: bool = True) -> DeployResult:
    return DeployResult(step_id=step.id, deploy_id=f"{THREAD}-{step.id}", service=step.service, tag=step.tag,
                        environment=step.environment, commit="c" * 40, ok=ok)


def kind(action) -> str:
    return f"Stop({action.status})" if isinstance(action, Stop) else type(action).__name__


def walk(*story: tuple[object, str]) -> None:
    """Grow a thread one event at a time; after each, the reducer must answer as written."""
    events: list = []
    for event, expected in story:
        events.append(event)
        thread = Thread(THREAD, tuple(events))
        assert kind(next_action(thread, POLICY)) == expected, (len(events), event.type, thread.status())


# --- whole lifecycles ----------------------------------------------------------------


def test_a_protected_deploy_from_request_to_result():
    step = DeployBackend(tag="v1.2.3", environment="production")
    request = request_for(step)
    walk(
        (UserMessage(text="ship it", user="alice"), "Decide"),
        (ListGitTags(), "RunTags"),
        (GitTagsResult(step_id="x", tags=[]), "RunTags"),  # a result for another step closes nothing
        (Error(kind="deployer", step_id=None, message="flaky"), "RunTags"),
        (ev.GitTagsResult(step_id="-", tags=[GitTag(name="v1.2.3", commit="c" * 40)]), "RunTags"),
        (step, "AskApproval"),
        (request, "Stop(waiting_for_approval)"),
        (HumanResponse(text="any news?", user="alice"), "Stop(waiting_for_approval)"),
        (DeliveryFailed(channel="slack", to="bob", reason="down"), "Stop(waiting_for_approval)"),
        (HumanResponse(user="bob", approval_id=request.approval_id, approve=True), "RunDeploy"),
        # Only the first decision counts.
        (HumanResponse(user="carol", approval_id=request.approval_id, approve=False), "RunDeploy"),
        (started_for(step), "Interrupted"),
        (result_for(step), "Decide"),
        (DoneForNow(message="deployed"), "Stop(done)"),
        (UserMessage(text="and frontend?", user="alice"), "Decide"),
    )


def test_a_rejection_replans_and_an_unprotected_deploy_runs_at_once():
    step = DeployBackend(tag="v1.2.3", environment="production")
    request = request_for(step)
    again = DeployFrontend(tag="v1.2.2", environment="staging")
    walk(
        (UserMessage(text="ship it", user="alice"), "Decide"),
        (step, "AskApproval"),
        (request, "Stop(waiting_for_approval)"),
        (HumanResponse(text="no", user="bob", approval_id=request.approval_id, approve=False), "Decide"),
        (again, "RunDeploy"),
        (Error(kind="locked", step_id=again.id, message="locked"), "Decide"),
        (RequestMoreInformation(message="It is locked. Wait?"), "Stop(waiting_for_human)"),
        (HumanResponse(text="yes", user="alice"), "Decide"),
        (Cancelled(user="alice"), "Stop(cancelled)"),
        (UserMessage(text="hello?", user="alice"), "Stop(cancelled)"),
    )


def test_commands_errors_and_the_step_budget():
    lock = LockEnvironment(environment="staging", reason="freeze")
    walk(
        (UserMessage(text="lock staging", user="alice"), "Decide"),
        (lock, "RunCommand"),
        (CommandResult(step_id=lock.id, ok=True, text="Locked"), "Decide"),
        (Error(kind="llm", message="garbage"), "Decide"),
        (Error(kind="llm", message="garbage"), "Decide"),
        (Error(kind="llm", message="garbage"), "Escalate"),
        (RequestMoreInformation(message="stuck", source="bot"), "Stop(waiting_for_human)"),
        (HumanResponse(text="try again", user="alice"), "Decide"),
        *[pair for step in (ListGitTags(), ListGitTags())
          for pair in ((step, "RunTags"), (GitTagsResult(step_id=step.id, tags=[]), "Decide"))],
        (ShowDeploys(environment="staging"), "RunCommand"),
        (CommandResult(step_id="other", ok=True, text="?"), "RunCommand"),
        (CommandResult(step_id="?", ok=True, text="?"), "RunCommand"),
    )
    walk(
        (UserMessage(text="hello", user="alice"), "Decide"),
        (Error(kind="internal", message="a bug"), "Stop(failed)"),
        (DeliveryFailed(channel="slack", to="C1", reason="down"), "Stop(failed)"),
        (HumanResponse(text="fixed it, go on", user="alice"), "Decide"),
    )


def test_the_step_budget_escalates_after_max_steps_since_a_human():
    events: list = [UserMessage(text="go", user="alice")]
    for _ in range(POLICY.max_steps):
        assert next_action(Thread(THREAD, tuple(events)), POLICY) == Decide()
        step = ListGitTags()
        events += [step, GitTagsResult(step_id=step.id, tags=[])]
    assert isinstance(next_action(Thread(THREAD, tuple(events)), POLICY), Escalate)
    events.append(HumanResponse(text="keep going", user="alice"))
    assert next_action(Thread(THREAD, tuple(events)), POLICY) == Decide()


@pytest.mark.parametrize("environment,expected", [("production", AskApproval), ("staging", RunDeploy)])
def test_which_deploys_need_approval_is_the_policys_call(environment, expected):
    step = DeployBackend(tag="v1", environment=environment)
    assert type(next_action(Thread(THREAD, (UserMessage(text="go", user="a"), step)), POLICY)) is expected


# --- invariants over generated threads ---------------------------------------------

ENVIRONMENTS = ("production", "staging", "development", "nowhere")


def cleared(thread: Thread, step) -> bool:
    if not POLICY.needs_approval(step.environment):
        return True
    request = thread.approval_for(step.id)
    decision = thread.decision_for(request.approval_id) if request else None
    return bool(decision and decision.approve)


@dataclass
class _Draw:
    """The draws of one generated thread: each rule adds events when it can (and then says so),
    consuming random numbers only when it acts, so the threads stay as they were drawn."""

    rng: random.Random
    sender: random.Random  # its own draws: the sender confirmations left the other threads as they were
    events: list = field(default_factory=list)
    steps: list = field(default_factory=list)
    deploys: list = field(default_factory=list)
    approvals: list = field(default_factory=list)

    def step(self) -> bool:
        rng = self.rng
        step = rng.choice([
            lambda: ListGitTags(),
            lambda: DeployBackend(tag="v1", environment=rng.choice(ENVIRONMENTS)),
            lambda: DeployFrontend(tag="v2", environment=rng.choice(ENVIRONMENTS)),
            lambda: RequestMoreInformation(message="?"),
            lambda: DoneForNow(message="done"),
            lambda: LockEnvironment(environment="staging"),
            lambda: UnlockEnvironment(environment="staging"),
            lambda: ShowDeploys(environment="production"),
            lambda: DeployService(service="api", tag="v3", environment=rng.choice(ENVIRONMENTS)),
            lambda: RollBack(service="api", environment="production"),
        ])()
        self.steps.append(step)
        if isinstance(step, (DeployBackend, DeployFrontend, DeployService)):
            self.deploys.append(step)
        self.events.append(step)
        return True

    def ask(self) -> bool:
        # Approvals are asked for protected deploys only (as long as the policy holds).
        protected = [d for d in self.deploys if POLICY.needs_approval(d.environment)]
        if not protected:
            return False
        request = request_for(self.rng.choice(protected), self.rng.choice([THREAD, THREAD, "elsewhere"]))
        self.approvals.append(request)
        self.events.append(request)
        return True

    def decide(self) -> bool:
        if not self.approvals:
            return False
        rng, chosen = self.rng, self.rng.choice(self.approvals)
        if rng.random() < 0.1:
            self.events.append(ApprovalExpired(approval_id=chosen.approval_id, step_id=chosen.step_id,
                                               expires_at=chosen.expires_at))
        else:
            self.events.append(HumanResponse(text="", user=rng.choice(["bob", "carol"]),
                                             approval_id=chosen.approval_id, approve=rng.random() < 0.6))
        return True

    def start(self) -> bool:
        # A deploy starts only once the policy lets it: unprotected, or approved; or it meets a
        # lock and waits in line.
        ready = [d for d in self.deploys if cleared(Thread(THREAD, tuple(self.events)), d)]
        if not ready:
            return False
        chosen = self.rng.choice(ready)
        if self.rng.random() < 0.25:
            self.events.append(DeployQueued(step_id=chosen.id, position=self.rng.randint(1, 3), behind="locked"))
        else:
            self.events.append(started_for(chosen, self.rng.choice([THREAD, THREAD, "elsewhere"])))
        return True

    def outcome(self) -> bool:
        if not self.steps:
            return False
        rng, step = self.rng, self.rng.choice(self.steps)
        outcomes = [
            GitTagsResult(step_id=step.id, tags=[]),
            CommandResult(step_id=step.id, ok=True, text="ok"),
            Error(kind=rng.choice(["validation", "deployer", "locked", "recheck"]), step_id=step.id, message="no"),
        ]
        if step in self.deploys:
            outcomes.append(result_for(step, ok=rng.random() < 0.8))
        self.events.append(rng.choice(outcomes))
        return True

    def chatter(self) -> bool:
        self.events.append(self.rng.choice([
            lambda: UserMessage(text="more", user="alice"),
            lambda: HumanResponse(text="answer", user="alice"),
            lambda: Error(kind="llm", message="garbage"),
            lambda: DeliveryFailed(channel="email", to="a@x", reason="bounced"),
        ])())
        return True

    def bug(self) -> bool:
        self.events.append(Error(kind="internal", message="a bug"))
        return True

    def cancel(self) -> bool:
        self.events.append(Cancelled(user="alice"))
        return True

    def confirm(self) -> bool:
        asked = next((e for e in self.events if isinstance(e, SenderConfirmationRequested)), None)
        if asked is None:
            return False
        if self.sender.random() < 0.5:
            self.events += [SenderConfirmed(confirmation_id=asked.confirmation_id),
                            UserMessage(text="go", user="alice", person="alice")]
        else:
            self.events.append(SenderConfirmationExpired(confirmation_id=asked.confirmation_id,
                                                         expires_at=asked.expires_at))
        return True


# Each draw: the first rule whose share the roll is under and that can act, acts.
RULES = ((0.3, _Draw.step), (0.45, _Draw.ask), (0.58, _Draw.decide), (0.66, _Draw.start), (0.74, _Draw.outcome),
         (0.84, _Draw.chatter), (0.86, _Draw.bug), (0.87, _Draw.cancel), (0.9, _Draw.confirm))


def generated(seed: int) -> Thread:
    """A thread of up to 14 events, drawn so that results, approvals and decisions usually
    refer to earlier steps, but not always in a sensible order."""
    draw = _Draw(random.Random(seed), random.Random(-seed - 1), [UserMessage(text="go", user="alice")])
    if draw.sender.random() < 0.1:  # by email, from a sender nothing proved: it waits for them to confirm
        draw.events.append(SenderConfirmationRequested(address="alice@x", claimed="alice", text="go",
                                                       expires_at=datetime(2030, 1, 1, tzinfo=UTC)))
    for _ in range(draw.rng.randrange(0, 14)):
        roll = draw.rng.random()
        next((True for limit, rule in RULES if roll < limit and rule(draw)), None)
    return Thread(THREAD, tuple(draw.events))


THREADS = [generated(seed) for seed in range(3000)]


def test_the_generator_covers_every_action_and_status():
    actions = {type(next_action(t, POLICY)) for t in THREADS}
    assert actions == {
        Stop, Decide, RunTags, RunCommand, PlanRollback, AskApproval, RunDeploy, Interrupted, Escalate, Finish}
    # A deploy's verification is drawn by tests/runtime/test_verifying.py, not here.
    assert {t.status() for t in THREADS} == set(STATUSES) - {"verifying"}


def expired_since_a_person_wrote(thread: Thread) -> list[tuple[str, str, str]]:
    """The deploys (service, tag, environment) whose approval expired since anyone wrote."""
    lapsed = []
    for e in reversed(thread.events):
        if isinstance(e, (UserMessage, HumanResponse)):
            break
        if isinstance(e, ApprovalExpired) and (request := thread.approval(e.approval_id)):
            lapsed.append((request.service, request.tag, request.environment))
    return lapsed


def test_a_deploy_whose_approval_expired_is_never_asked_again_until_a_person_writes():
    finished = 0
    for t in THREADS:
        action = next_action(t, POLICY)
        if isinstance(action, AskApproval):
            step = action.step
            assert (step.service, step.tag, step.environment) not in expired_since_a_person_wrote(t)
        if isinstance(action, Finish):
            finished += 1
            assert "expired" in action.message
    assert finished


def test_the_same_thread_gets_the_same_answer_even_after_a_round_trip_through_storage():
    for t in THREADS:
        reloaded = Thread(t.id, tuple(ev.load(ev.dump(e)) for e in t.events), t.origin)
        assert next_action(t, POLICY) == next_action(reloaded, POLICY)


def test_a_protected_deploy_runs_only_with_the_first_decision_on_its_own_request_being_yes():
    for t in THREADS:
        action = next_action(t, POLICY)
        if type(action) is RunDeploy and POLICY.needs_approval(action.step.environment):
            assert action.request is not None and action.request.step_id == action.step.id
            assert action.decision is not None and action.decision.approve is True
            assert action.decision == t.decision_for(action.request.approval_id)
            assert t.events.index(action.request) < t.events.index(action.decision)


def test_a_started_deploy_is_never_run_again():
    for t in THREADS:
        action = next_action(t, POLICY)
        if isinstance(action, (RunDeploy, AskApproval)) and not isinstance(action, Interrupted):
            assert t.started(action.step.id) is None
        if isinstance(action, Interrupted):
            assert action.started == t.started(action.step.id) is not None


def test_an_open_step_is_the_last_one_and_has_no_outcome():
    for t in THREADS:
        action = next_action(t, POLICY)
        if isinstance(action, (RunTags, RunCommand, AskApproval, RunDeploy, Interrupted)):
            assert t.last_step()[1] == action.step and t.outcome(action.step) is None


def test_a_stop_says_the_threads_status_and_only_running_threads_go_on():
    for t in THREADS:
        action = next_action(t, POLICY)
        if isinstance(action, Stop):
            assert action.status == t.status()
        elif t.status() == "failed":
            # The one exception, as the reducer stands: a bug while a step was open leaves the
            # thread "failed", yet the open step is what runs on the next kick.
            assert isinstance(action, (RunTags, RunCommand, PlanRollback, AskApproval, RunDeploy, Interrupted)), action
            assert t.outcome(t.last_step()[1]) is None
        elif t.status() == "waiting_for_lock":
            # A deploy waiting in line is tried again whenever its thread runs (woken when a
            # lock is released, or by its timer): it starts, or it stays in line.
            assert isinstance(action, RunDeploy), action
        else:
            assert t.status() == "running", (t.status(), action)


def test_nothing_happens_in_a_cancelled_thread_and_nobody_is_asked_while_approval_waits():
    for t in THREADS:
        action = next_action(t, POLICY)
        if t.cancelled():
            assert action == Stop("cancelled")
        if t.pending_approval() is not None:
            assert not isinstance(action, (Decide, Escalate))


def test_nothing_runs_for_a_sender_not_confirmed():
    for t in THREADS:
        action = next_action(t, POLICY)
        if t.waiting_for_sender() is not None and not t.cancelled():
            assert action == Stop("waiting_for_sender")
            expired = next_action(t, POLICY, t.waiting_for_sender().expires_at + timedelta(seconds=1))
            assert isinstance(expired, ExpireSenderConfirmation)
        if t.unconfirmed() and not t.cancelled():
            assert action == Stop("done")


def test_escalation_only_past_a_limit():
    for t in THREADS:
        if isinstance(next_action(t, POLICY), Escalate):
            assert t.consecutive_errors() >= POLICY.max_errors or t.steps_since_human() >= POLICY.max_steps
