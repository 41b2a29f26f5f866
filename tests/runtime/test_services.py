"""The service catalog's rules over the in-memory fakes (issue 13): what a rollback puts back,
locks per service beside the environment's, the CI gate (asked before the approval and again
right before running), and threads older than the catalog (`deploy_backend` steps) that still
load, render and resume. A MemoryDeployer per service; bob and carol approve production."""

from __future__ import annotations

import pytest

from bot.core import prompt, transcript
from bot.core.catalog import Catalog, Service
from bot.core.events import (
    ApprovalRequested,
    CommandResult,
    DeployBackend,
    DeployResult,
    DeployService,
    DeployStarted,
    Error,
    HumanResponse,
    UserMessage,
    load,
)
from bot.core.policy import Policy
from bot.core.thread import Origin, Thread
from bot.runtime.ports import Check, DeployOutcome, Lock
from bot.runtime.service import ThreadService
from bot.testing.memory import MemoryDeployer
from tests.memory_parts import NOW, TAGS, Parts, make_runner, team_policy, who

SHA = {f"v{n}": f"{n}" * 40 for n in range(1, 6)}  # v1 -> 111..., v5 -> 555...
CATALOG = Catalog.of([Service("api"), Service("worker"), Service("mobile")])


def tags(*names: str) -> dict[str, str]:
    """The tags, newest first, as MemoryDeployer takes them."""
    return {name: SHA[name] for name in reversed(names)}


class World:
    """The fast layer with a catalog: a deployer per service, a runner and the service."""

    def __init__(self, policy: Policy) -> None:
        self.parts = Parts(policy=policy)
        self.deployers = {
            "api": MemoryDeployer(tags("v1", "v2", "v3", "v4")),
            "worker": MemoryDeployer(tags("v1", "v2")),
            "mobile": MemoryDeployer(tags("v1", "v2")),
        }
        self.runner = make_runner(self.parts)
        self.runner.deploying.deployers = self.deployers
        self.service = ThreadService(self.parts.store, policy, None, self.parts.clock)

    @property
    def history(self):
        return self.parts.environments

    async def say(self, text: str, user: str = "alice", thread: Thread | None = None) -> Thread:
        if thread is None:
            thread = await self.service.launch(text, who(user))
        else:
            thread = await self.service.respond(thread.id, text, who(user))
        return await self.runner.run(thread.id)

    async def approve(self, thread: Thread, user: str = "bob") -> Thread:
        pending = thread.pending_approval()
        assert pending is not None, [e.type for e in thread.events]
        await self.service.respond(thread.id, "", who(user), approval_id=pending.approval_id, approve=True)
        return await self.runner.run(thread.id)

    async def deploy(self, service: str, tag: str, env: str = "production") -> DeployResult:
        """Deployed (and approved, where that is needed): its result."""
        thread = await self.say(f"deploy {service} {tag} to {env}")
        if thread.status() == "waiting_for_approval":
            thread = await self.approve(thread)
        result = next(e for e in thread.events if isinstance(e, DeployResult))
        assert result.ok, [e.type for e in thread.events]
        return result

    async def rollback(self, service: str = "api", env: str = "production", user: str = "alice") -> Thread:
        return await self.say(f"roll back {service} in {env}", user)

    def deploys(self, service: str) -> list[tuple[str, str, str]]:
        return [(r.service, r.tag, r.environment) for r in self.deployers[service].deploys]


def last_text(thread: Thread) -> str:
    return thread.events[-1].message  # type: ignore[union-attr]


def proposed(thread: Thread) -> DeployService:
    return next(e for e in thread.events if isinstance(e, DeployService))


@pytest.fixture
def world() -> World:
    return World(team_policy(catalog=CATALOG, required_checks=frozenset({"production"})))


# --- what a rollback puts back -------------------------------------------------------------


async def test_a_rollback_proposes_the_deploy_before_asks_then_marks_faulty_and_locks(world):
    first = await world.deploy("api", "v1")
    second = await world.deploy("api", "v2")
    asked = await world.rollback()
    step = proposed(asked)
    assert (step.tag, step.rollback_of, step.rollback_from) == ("v1", second.deploy_id, "v2")
    request = asked.pending_approval()
    assert request is not None and request.rollback_of == second.deploy_id and request.commit == SHA["v1"]
    assert request.change is not None and (request.change.ahead, request.change.behind) == (0, 1)
    assert [c.subject for c in request.change.commits] == ["release v2"]
    assert len(world.deployers["api"].deploys) == 2

    done = await world.approve(asked)
    result = next(e for e in done.events if isinstance(e, DeployResult))
    assert result.ok and result.rollback_of == second.deploy_id and result.commit == SHA["v1"]
    assert world.deploys("api")[-1] == ("api", "v1", "production")
    faulty = {r.deploy_id: r.faulty for r in await world.history.recent("production", 10, service="api")}
    assert faulty == {result.deploy_id: False, second.deploy_id: True, first.deploy_id: False}
    lock = await world.parts.environments.holder("production", "api")
    assert lock is not None and (lock.service, lock.owner, lock.reason) == (
        "api", "manual:alice", "rolled back from v2 by alice")
    assert await world.parts.environments.holder("production") is None  # the service's lock only


async def test_a_rollback_skips_faulty_deploys(world):
    await world.deploy("api", "v1")
    bad = await world.deploy("api", "v2")
    await world.deploy("api", "v3")
    await world.history.mark_faulty("production", bad.deploy_id)
    assert proposed(await world.rollback()).tag == "v1"


async def test_a_rollback_skips_deploys_of_the_commit_that_is_on_now(world):
    await world.deploy("api", "v1")
    await world.deploy("api", "v2")
    await world.deploy("api", "v2")
    assert proposed(await world.rollback()).tag == "v1"


async def test_a_rollback_skips_a_tag_that_moved_since_it_was_deployed(world):
    await world.deploy("api", "v1")
    await world.deploy("api", "v2")
    await world.deploy("api", "v3")
    world.deployers["api"].move_tag("v2", "9" * 40)
    assert proposed(await world.rollback()).tag == "v1"


async def test_a_failed_deploy_is_neither_what_is_on_nor_a_target(world):
    await world.deploy("api", "v1")
    await world.deploy("api", "v2")
    world.deployers["api"].script(DeployOutcome(ok=False, exit_code=1, output="boom"))
    failed = await world.approve(await world.say("deploy api v3 to production"))
    assert next(e for e in failed.events if isinstance(e, DeployResult)).ok is False
    step = proposed(await world.rollback())
    assert (step.tag, step.rollback_from) == ("v1", "v2")


async def test_a_rollback_with_no_target_says_so_and_deploys_nothing(world):
    await world.deploy("api", "v1")
    await world.deploy("api", "v1")
    nothing = await world.rollback()
    assert not any(isinstance(e, DeployService) for e in nothing.events)
    result = next(e for e in nothing.events if isinstance(e, CommandResult))
    assert result.ok is False and result.text.startswith("There is nothing to roll api in production back to")
    assert nothing.status() == "done" and last_text(nothing) == result.text
    assert len(world.deployers["api"].deploys) == 2


async def test_a_rollback_of_what_was_never_deployed_says_so(world):
    await world.deploy("api", "v1")  # another service's deploys are not worker's
    never = await world.rollback("worker")
    assert last_text(never) == (
        "worker has never been deployed to production by deploybot, so there is nothing to roll back.")
    assert world.deployers["worker"].deploys == []


async def test_a_rollback_of_a_rollback_is_refused(world):
    await world.deploy("api", "v1")
    await world.deploy("api", "v2")
    await world.approve(await world.rollback())
    again = await world.rollback(user="bob")
    assert not any(isinstance(e, DeployService) for e in again.events)
    assert "is itself a rollback; I do not roll back a rollback" in last_text(again)


async def test_a_rollback_in_an_unprotected_environment_runs_at_once_and_locks_there_only(world):
    await world.deploy("api", "v1", "staging")
    await world.deploy("api", "v2", "staging")
    done = await world.rollback(env="staging")
    assert not any(isinstance(e, ApprovalRequested) for e in done.events)
    assert world.deploys("api")[-1] == ("api", "v1", "staging")
    assert (await world.parts.environments.holder("staging", "api")).reason == "rolled back from v2 by alice"
    assert await world.parts.environments.holder("production", "api") is None


async def test_without_lock_after_rollback_nothing_is_locked():
    world = World(team_policy(catalog=CATALOG, no_lock_after_rollback=frozenset({"staging"})))
    await world.deploy("api", "v1", "staging")
    await world.deploy("api", "v2", "staging")
    await world.rollback(env="staging")
    assert world.deploys("api")[-1] == ("api", "v1", "staging")
    assert await world.parts.environments.held("staging", CATALOG.names) == []


# --- locks per service and the environment's -------------------------------------------------


async def test_a_services_lock_stops_that_service_only(world):
    locked = await world.say("lock api in production: incident 7", user="bob")
    assert last_text(locked).startswith("Locked api in production")

    blocked = await world.say("deploy api v2 to production")
    error = next(e for e in blocked.events if isinstance(e, Error))
    assert error.kind == "locked" and "api in production is locked by bob" in error.message
    assert blocked.pending_approval() is None
    assert (await world.say("deploy worker v2 to production")).status() == "waiting_for_approval"
    assert (await world.say("deploy api v2 to staging")).status() == "done"
    assert world.deploys("api") == [("api", "v2", "staging")]

    unlocked = await world.say("unlock api in production", user="bob")
    assert last_text(unlocked).startswith("Unlocked api in production")
    assert (await world.say("deploy api v2 to production")).status() == "waiting_for_approval"


async def test_the_environments_lock_stops_every_service_and_a_service_lock_cannot_hide_it(world):
    await world.say("lock production: release freeze", user="bob")
    for service in ("api", "worker"):
        blocked = await world.say(f"deploy {service} v2 to production")
        error = next(e for e in blocked.events if isinstance(e, Error))
        assert error.kind == "locked" and "production is locked by bob" in error.message
    # While the environment is locked by someone, nobody else takes a service's lock there.
    refused = await world.say("lock api in production: mine", user="carol")
    assert "Already locked: production is locked by bob" in last_text(refused)
    assert await world.parts.environments.held("production", CATALOG.names) == [
        await world.parts.environments.holder("production")]
    # Unlocking a service does not lift the environment's lock.
    assert "api in production" in last_text(await world.say("unlock api in production", user="bob"))
    assert (await world.parts.environments.holder("production")).reason == "release freeze"


async def test_a_deploy_in_progress_locks_its_service_not_the_others(world):
    await world.parts.environments.acquire(Lock("staging", "t-s", "deploying api v1", NOW, "api"), 60_000)
    assert (await world.say("deploy worker v2 to staging")).status() == "done"
    blocked = await world.say("deploy api v2 to staging")
    assert next(e for e in blocked.events if isinstance(e, Error)).kind == "locked"
    assert world.deploys("api") == [] and world.deploys("worker") == [("worker", "v2", "staging")]


# --- the CI gate -----------------------------------------------------------------------------


def green(world: World, tag: str = "v2") -> None:
    world.deployers["mobile"].ci[SHA[tag]] = [Check("build", "success"), Check("lint", "success")]


async def test_the_gate_blocks_failing_and_pending_checks_before_asking(world):
    world.deployers["mobile"].ci[SHA["v2"]] = [Check("build", "failure"), Check("e2e", "pending")]
    blocked = await world.say("deploy mobile v2 to production")
    error = next(e for e in blocked.events if isinstance(e, Error))
    assert error.kind == "checks" and "failing: build; still running: e2e" in error.message
    assert blocked.pending_approval() is None and world.deploys("mobile") == []


async def test_a_repository_without_ci_is_not_gated(world):
    asked = await world.say("deploy api v2 to production")  # MemoryDeployer: no checks for it
    assert asked.status() == "waiting_for_approval"


async def test_the_gate_is_asked_again_right_before_running(world):
    green(world)
    asked = await world.say("deploy mobile v2 to production")
    assert asked.status() == "waiting_for_approval"
    world.deployers["mobile"].ci[SHA["v2"]] = [Check("build", "success"), Check("lint", "failure")]
    done = await world.approve(asked)
    error = next(e for e in done.events if isinstance(e, Error))
    assert error.kind == "checks" and "failing: lint" in error.message
    assert not any(isinstance(e, DeployStarted) for e in done.events) and world.deploys("mobile") == []

    # An approver deploys anyway: asked again (forcing is not approving), then deployed.
    forced = await world.say("deploy anyway: lint is broken on main", user="bob", thread=done)
    request = forced.pending_approval()
    assert request is not None and (request.force, request.forced_by) == ("lint is broken on main", "bob")
    deployed = await world.approve(forced, user="carol")
    result = next(e for e in deployed.events if isinstance(e, DeployResult))
    assert result.ok and (result.force, result.forced_by, result.approved_by) == (
        "lint is broken on main", "bob", "carol")
    record = (await world.history.recent("production", 1, service="mobile"))[0]
    assert (record.force, record.forced_by) == ("lint is broken on main", "bob")
    assert world.deploys("mobile") == [("mobile", "v2", "production")]


async def test_an_approver_may_force_after_someone_elses_deploy_anyway_was_refused(world):
    world.deployers["mobile"].ci[SHA["v2"]] = [Check("build", "failure")]
    blocked = await world.say("deploy mobile v2 to production")
    refused = await world.say("deploy anyway: please", user="alice", thread=blocked)
    assert "alice may not deploy past the checks to production" in last_text(refused)
    forced = await world.say("deploy anyway: hotfix", user="bob", thread=refused)
    assert forced.pending_approval() is not None and forced.pending_approval().forced_by == "bob"


async def test_deploy_anyway_with_nothing_blocked_says_so(world):
    done = await world.say("deploy worker v2 to staging")
    again = await world.say("deploy anyway: because", user="bob", thread=done)
    assert last_text(again) == "There is no blocked deploy in this thread to deploy anyway."
    assert world.deploys("worker") == [("worker", "v2", "staging")]


# --- threads older than the catalog ----------------------------------------------------------


OLD_EVENTS = [  # as an older version stored them: no service field, no change, no force
    '{"type":"user_message","id":"e1","at":"2026-11-05T12:00:00Z","text":"deploy backend v1.2.3 to production",'
    '"user":"alice","channel":"api","person":"alice","via":"name","evidence":"alice"}',
    '{"type":"deploy_backend","id":"s1","at":"2026-11-05T12:00:00Z","tag":"v1.2.3","environment":"production",'
    '"reason":null,"source":"command"}',
    '{"type":"approval_requested","id":"e2","at":"2026-11-05T12:00:00Z","approval_id":"a1","step_id":"s1",'
    '"thread_id":"old","args_hash":"ARGS","service":"backend","tag":"v1.2.3","commit":"' + TAGS["v1.2.3"] + '",'
    '"environment":"production","requested_by":"alice","expires_at":"2026-11-05T13:00:00Z"}',
]


async def old_thread(parts: Parts) -> Thread:
    from bot.core.policy import args_hash

    events = [load(raw.replace("ARGS", args_hash("backend", "v1.2.3", "production"))) for raw in OLD_EVENTS]
    return await parts.store.create(Origin(channel="api"), events, thread_id="old")


async def test_an_old_thread_loads_renders_and_resumes(parts):
    thread = await old_thread(parts)
    assert isinstance(thread.events[1], DeployBackend) and thread.events[1].service == "backend"
    assert thread.status() == "waiting_for_approval"
    assert "proposes: deploy backend v1.2.3 to production" in transcript.markdown(thread)
    assert '<deploy_backend tag="v1.2.3" environment="production"' in prompt.render(thread)

    service = ThreadService(parts.store, parts.policy, None, parts.clock)
    await service.respond("old", "", who("bob"), approval_id="a1", approve=True)
    done = await make_runner(parts).run("old")
    result = next(e for e in done.events if isinstance(e, DeployResult))
    assert (result.service, result.tag, result.commit, result.ok) == ("backend", "v1.2.3", TAGS["v1.2.3"], True)
    assert result.rollback_of is None and result.force is None
    assert [(r.service, r.tag) for r in parts.deployer.deploys] == [("backend", "v1.2.3")]
    assert last_text(done) == "Deployed backend v1.2.3 to production."
    rendered = transcript.markdown(done)
    assert "deployed: backend v1.2.3 to production" in rendered and "rolled back" not in rendered
    assert "<deploy_result" in prompt.render(done)


async def test_an_old_thread_interrupted_mid_deploy_is_reported_not_repeated(parts):
    thread = await old_thread(parts)
    service = ThreadService(parts.store, parts.policy, None, parts.clock)
    thread = await service.respond("old", "", who("bob"), approval_id="a1", approve=True)
    started = DeployStarted(step_id="s1", deploy_id="old-s1", commit=TAGS["v1.2.3"], at=NOW)
    await parts.store.append(thread, [started])
    done = await make_runner(parts).run("old")
    error = next(e for e in done.events if isinstance(e, Error))
    assert error.kind == "interrupted" and "backend v1.2.3 to production" in error.message
    assert parts.deployer.deploys == []


async def test_an_old_thread_whose_service_left_the_catalog_is_refused_not_crashed():
    world = World(team_policy(catalog=CATALOG))
    await old_thread(world.parts)
    await world.service.respond("old", "", who("bob"), approval_id="a1", approve=True)
    done = await world.runner.run("old")
    error = next(e for e in done.events if isinstance(e, Error))
    assert error.kind == "validation" and "unknown service 'backend'" in error.message
    assert done.status() != "failed" and all(d.deploys == [] for d in world.deployers.values())


def test_a_new_deploy_step_renders_with_its_service_rollback_and_force():
    step = DeployService(service="api", tag="v1", environment="production", rollback_of="t-s", force="flaky CI",
                         forced_by="bob")
    thread = Thread("t", (UserMessage(text="roll back api in production", user="alice"), step,
                          HumanResponse(user="bob", text="ok")))
    assert "proposes: roll back api in production to v1" in transcript.markdown(thread)
    assert "deployed anyway by bob: flaky CI" in transcript.markdown(thread)
    rendered = prompt.render(thread)
    assert 'service="api"' in rendered and 'rollback_of="t-s"' in rendered and 'force="flaky CI"' in rendered
    assert load(step.model_dump_json()) == step


async def test_an_approved_rollback_whose_deploy_is_no_longer_on_is_not_run(world):
    """Someone deployed meanwhile: the rollback would replace a deploy it was never asked
    about, and mark one faulty that is not on any more."""
    await world.deploy("api", "v1")
    await world.deploy("api", "v2")
    asked = await world.rollback()
    newer = await world.deploy("api", "v3")
    done = await world.approve(asked)
    error = next(e for e in done.events if isinstance(e, Error))
    assert error.kind == "recheck" and "v3" in error.message
    assert world.deploys("api")[-1] == ("api", "v3", "production")
    assert not any(r.faulty for r in await world.history.recent("production", 10, service="api"))
    assert await world.parts.environments.holder("production", "api") is None
    assert (await world.history.recent("production", 1, service="api"))[0].deploy_id == newer.deploy_id


async def test_an_old_threads_finished_deploy_is_not_proposed_again(parts):
    """Stored before the catalog, a deploy to staging with its result and no summary yet (the
    process stopped there): the exact command now parses to a `deploy` step, which must not
    count as not taken yet, or it deploys a second time with nobody asking."""
    raw = OLD_EVENTS[0].replace("production", "staging")
    events = [
        load(raw),
        DeployBackend(id="s1", tag="v1.2.3", environment="staging", source="command", at=NOW),
        DeployStarted(step_id="s1", deploy_id="old-s1", commit=TAGS["v1.2.3"], at=NOW),
        DeployResult(step_id="s1", deploy_id="old-s1", service="backend", tag="v1.2.3", environment="staging",
                     commit=TAGS["v1.2.3"], ok=True, exit_code=0, at=NOW),
    ]
    await parts.store.create(Origin(channel="api"), events, thread_id="old")
    done = await make_runner(parts).run("old")
    assert [e.type for e in done.events[4:]] == ["done_for_now"]
    assert last_text(done) == "Deployed backend v1.2.3 to staging."
    assert parts.deployer.deploys == []
