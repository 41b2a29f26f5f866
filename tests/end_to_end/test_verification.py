"""Verifying deploys against a real Prometheus (Debian's /usr/bin/prometheus, scraping an
exporter this module controls every second) and a real HTTP endpoint, with real Redis, the
real deploy command and real workers firing timers: a healthy deploy verified after its bake
(resumed by another worker after the first one stops mid-bake), a bad one rolled back at once
(on_failure = "rollback") or a rollback proposed, and a Prometheus that is down failing the
check after its grace. And what a hostile or broken one sends (bot/testing/prometheus.py's
UnrulyPrometheus, a real server): an answer dripped a byte a second ends each round by its
deadline while the lock holds and a second deploy is refused, an answer of 40 MB is refused
unread, and NaN or ±Inf is no answer. Bakes of a few seconds; one Prometheus for the module."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from redis.asyncio import Redis

from bot.adapters.redis.work import RedisWorkQueue
from bot.config.settings import Settings
from bot.core.events import CheckObserved, DeployResult, Error, VerificationEnded, VerificationStarted
from bot.runtime.ports import DeployRecord, Observation
from bot.runtime.worker import Worker
from bot.testing.cluster import free_port
from bot.testing.prometheus import QUERY, Exporter, PrometheusServer, UnrulyPrometheus
from bot.wiring.app import App, build, fire_timers
from tests.helpers import eventually, ledger_lines, reply

pytestmark = [pytest.mark.prometheus, pytest.mark.redis, pytest.mark.network]

BAKE = 3  # seconds


@pytest.fixture(scope="module")
def exporter() -> Iterator[Exporter]:
    served = Exporter()
    yield served
    served.stop()


@pytest.fixture(scope="module")
def prometheus(exporter: Exporter) -> Iterator[PrometheusServer]:
    server = PrometheusServer(f"127.0.0.1:{exporter.port}")
    try:
        server.wait_for(lambda v: True)  # up, and has scraped once
        yield server
    finally:
        server.stop()


@pytest.fixture
def healthy(exporter: Exporter, prometheus: PrometheusServer) -> Exporter:
    exporter.ratio, exporter.health_status = 0.001, 200
    prometheus.wait_for(lambda v: v < 0.01)
    return exporter


def toml(prometheus_url: str, exporter_url: str) -> str:
    block = f"""
bake = "{BAKE}s"
interval = "1s"
grace = "1s"
[[services.backend.verify.ENV.prometheus]]
url = "{prometheus_url}"
query = "{QUERY}"
condition = "< 0.05"
[[services.backend.verify.ENV.http]]
url = "{exporter_url}/health"
status = 200
contains = "ok"
timeout = "1s"
"""
    down = f"http://127.0.0.1:{free_port()}"  # nothing listens there: Prometheus is down
    return f"""
[environments.staging]
[environments.production]
approvers = ["*"]
[services.backend]
[services.frontend]
[services.backend.verify.staging]
on_failure = "rollback"
{block.replace("ENV", "staging")}
[services.backend.verify.production]
{block.replace("ENV", "production")}
[services.frontend.verify.staging]
bake = "30s"
interval = "1s"
grace = "2s"
[[services.frontend.verify.staging.prometheus]]
url = "{down}"
query = "{QUERY}"
condition = "< 0.05"
"""


@pytest.fixture
async def app(settings: Settings, redis: Redis, tmp_path: Path, prometheus: PrometheusServer,
              exporter: Exporter, fake_llm) -> AsyncIterator[App]:
    config = tmp_path / "deploybot.toml"
    config.write_text(toml(prometheus.url, exporter.url))
    fake_llm.default = reply(intent="done_for_now", message="done")
    built = build(settings.model_copy(update={"deploybot_config": config}))
    yield built
    await built.close()


def worker(app: App, name: str) -> Worker:
    # Timers looked at every 0.2 s: a 1 s interval is kept without waiting on TIMER_EVERY.
    chores = ((0.2, fire_timers(app.runner.timers, app.queue, app.service.clock)),)  # type: ignore[arg-type]
    return Worker(app.runner, RedisWorkQueue(app.redis), app.store, 4, name, chores=chores)


@pytest.fixture
async def workers(app: App) -> AsyncIterator[list[Worker]]:
    started: list[Worker] = []
    yield started
    await asyncio.gather(*(w.stop(0) for w in started))


async def launch(app: App, text: str) -> str:
    thread = await app.service.launch(text, app.service.unproven("alice"), channel="api")
    await app.queue.push(thread.id)
    return thread.id


async def baseline(app: App, environment: str) -> None:
    """What ran before: v1.2.2, the target of a rollback."""
    commit = await app.runner.deploying.deployers["backend"].resolve("v1.2.2")
    assert commit
    await app.environments.record(DeployRecord(
        environment, "backend", "v1.2.2", commit, True, app.service.clock() - timedelta(days=1), None, "old", "old-1",
    ))


async def verifying(app: App, thread_id: str) -> VerificationStarted:
    async def started() -> VerificationStarted | None:
        thread = await app.store.load(thread_id)
        rounds = [e for e in thread.events if isinstance(e, CheckObserved)]
        return thread.verifying() if rounds else None
    return await eventually(started, within=20)


async def ended(app: App, thread_id: str, within: float = 20) -> VerificationEnded:
    async def found() -> VerificationEnded | None:
        return next((e for e in (await app.store.load(thread_id)).events if isinstance(e, VerificationEnded)), None)
    return await eventually(found, within=within)


async def test_a_healthy_deploy_is_verified_after_its_bake_even_when_its_worker_stops_mid_bake(
    app, workers, healthy, ledger,
):
    thread_id = await launch(app, "deploy backend v1.2.3 to staging")
    first = worker(app, "w1")
    workers.append(first)
    first.start()
    started = await verifying(app, thread_id)
    assert (await app.store.load(thread_id)).status() == "verifying"
    held = await app.environments.holder("staging", "backend")
    assert held is not None and held.owner == started.deploy_id  # nobody deploys over the bake
    await first.stop(grace=0)  # the worker goes away during the bake; the lock stays held
    workers.remove(first)
    assert (await app.environments.holder("staging", "backend")) is not None
    second = worker(app, "w2")
    workers.append(second)
    second.start()
    done = await ended(app, thread_id)
    thread = await app.store.load(thread_id)
    assert done.outcome == "verified" and done.at >= started.ends_at  # the bake as begun, not restarted
    assert [e.ends_at for e in thread.events if isinstance(e, VerificationStarted)] == [started.ends_at]
    rounds = [e for e in thread.events if isinstance(e, CheckObserved)]
    assert rounds and all(e.ok for e in rounds) and any(e.value == "0.001" for e in rounds)
    assert any(e.value == "HTTP 200" for e in rounds)
    async def released() -> bool:
        return await app.environments.holder("staging", "backend") is None
    await eventually(released)
    [record] = await app.environments.recent("staging", 1)
    assert record.deploy_id == started.deploy_id and record.verified_at == done.at and not record.faulty
    assert len(ledger_lines(ledger)) == 1


async def test_an_error_ratio_that_rises_fails_within_a_round_and_rolls_back_at_once(
    app, workers, healthy, prometheus, ledger,
):
    await baseline(app, "staging")
    thread_id = await launch(app, "deploy backend v1.2.3 to staging")
    workers.append(worker(app, "w1"))
    workers[0].start()
    started = await verifying(app, thread_id)
    healthy.ratio = 0.5  # the new version starts failing
    prometheus.wait_for(lambda v: v > 0.05)
    seen_at = app.service.clock()  # Prometheus answers the rise from here on
    failed = await ended(app, thread_id)
    assert (failed.outcome, failed.check, failed.value) == ("failed", QUERY, "0.5")
    thread = await app.store.load(thread_id)
    # Marked at the first round after Prometheus had it: at most one round (one in flight) passed since.
    passed_after = [e for e in thread.events if isinstance(e, CheckObserved) and e.check == QUERY and e.ok
                    and e.at > seen_at]
    assert len(passed_after) <= 1
    rollback = await eventually(lambda: _rollback(app, thread_id), within=20)
    assert rollback.ok and rollback.rollback_of == started.deploy_id and rollback.approved_by == "deploybot"
    assert rollback.tag == "v1.2.2" and "v1.2.2" in ledger_lines(ledger)[-1]
    records = {r.deploy_id: r for r in await app.environments.recent("staging", 5)}
    assert records[started.deploy_id].faulty and records[started.deploy_id].verified_at is None
    assert QUERY in records[rollback.deploy_id].proposal_reason and "0.5" in records[rollback.deploy_id].proposal_reason


async def _rollback(app: App, thread_id: str) -> DeployResult | None:
    thread = await app.store.load(thread_id)
    return next((e for e in thread.events if isinstance(e, DeployResult) and e.rollback_of), None)


async def test_a_failing_http_check_in_production_proposes_the_rollback_for_approval(app, workers, healthy, ledger):
    await baseline(app, "production")
    alice = app.service.unproven("alice")
    thread = await app.service.launch("deploy backend v1.2.3 to production", alice, channel="api")
    workers.append(worker(app, "w1"))
    workers[0].start()
    await app.queue.push(thread.id)
    pending = await eventually(lambda: _pending(app, thread.id), within=20)
    await app.service.respond(thread.id, "", app.service.directory.by_name("bob", via="cli"),
                              approval_id=pending.approval_id, approve=True)
    await app.queue.push(thread.id)
    started = await verifying(app, thread.id)
    healthy.health_status = 503
    failed = await ended(app, thread.id)
    assert failed.outcome == "failed" and failed.check.endswith("/health") and "503" in failed.value
    proposal = await eventually(lambda: _pending(app, thread.id), within=20)
    assert proposal.rollback_of == started.deploy_id and proposal.tag == "v1.2.2"
    assert (await app.store.load(thread.id)).status() == "waiting_for_approval"
    assert len(ledger_lines(ledger)) == 1  # nothing rolled back without an approval
    [record] = [r for r in await app.environments.recent("production", 5) if r.deploy_id == started.deploy_id]
    assert record.faulty


async def _pending(app: App, thread_id: str):
    return (await app.store.load(thread_id)).pending_approval()


async def test_a_prometheus_that_is_down_fails_the_check_after_its_grace_never_passing(app, workers, ledger):
    thread_id = await launch(app, "deploy frontend v1.2.3 to staging")
    workers.append(worker(app, "w1"))
    workers[0].start()
    started = await verifying(app, thread_id)
    failed = await ended(app, thread_id)
    thread = await app.store.load(thread_id)
    rounds = [e for e in thread.events if isinstance(e, CheckObserved)]
    assert rounds and all(e.ok is None for e in rounds)  # never a pass
    assert failed.outcome == "failed" and failed.value.startswith("no answer")
    assert failed.at - started.at >= timedelta(seconds=started.grace)  # not before the grace
    assert failed.at < started.ends_at  # and not only at the end of the 30 s bake



async def test_the_probe_against_the_real_prometheus_and_endpoint_never_passes_what_it_cannot_read(
    healthy, prometheus,
):
    from bot.adapters.probes import HttpProbe
    from bot.core.events import VerifyCheck

    probe = HttpProbe()

    def asked(query: str, condition: str = "< 0.05") -> VerifyCheck:
        return VerifyCheck(kind="prometheus", name=query, url=prometheus.url, query=query, condition=condition)

    try:
        assert await probe.observe(asked(QUERY)) == Observation(True, "0.001")
        assert await probe.observe(asked(QUERY, "> 0.5")) == Observation(False, "0.001")
        assert await probe.observe(asked("0.5")) == Observation(False, "0.5")  # a scalar answer
        empty = await probe.observe(asked("no_such_metric"))
        assert empty.ok is None and "no result" in empty.value
        bad = await probe.observe(asked("sum(("))  # not PromQL: the server says 400
        assert bad.ok is None and "HTTP 400" in bad.value
        nan = await probe.observe(asked("0/0 * vector(1)"))
        assert nan.ok is None
        health = VerifyCheck(kind="http", name="h", url=f"{healthy.url}/health", contains="ok", timeout=2)
        assert await probe.observe(health) == Observation(True, "HTTP 200")
        assert (await probe.observe(health.model_copy(update={"contains": "ready"}))).ok is False
        assert (await probe.observe(health.model_copy(update={"url": f"{healthy.url}/missing"}))).ok is False
        down = health.model_copy(update={"url": f"http://user:pw@127.0.0.1:{free_port()}/health?token=t"})
        seen = await probe.observe(down)
        assert seen.ok is None and "pw" not in seen.value and "token" not in seen.value
    finally:
        await probe.aclose()


async def test_infinities_and_nan_from_the_real_prometheus_are_no_answer_never_a_pass_nor_a_failure(prometheus):
    from bot.adapters.probes import HttpProbe
    from bot.core.events import VerifyCheck

    probe = HttpProbe()

    def asked(query: str, condition: str) -> VerifyCheck:
        return VerifyCheck(kind="prometheus", name=query, url=prometheus.url, query=query, condition=condition)

    # Each against a condition it would meet and one it would not, as a scalar and as a series.
    cases = [("-1/0", "< 0.01"), ("-1/0", "> 0.01"), ("vector(-1/0)", "< 0.01"),
             ("1/0", "> 1"), ("1/0", "< 1"), ("vector(1/0)", "> 1"),
             ("0/0", "!= 1"), ("vector(0/0)", "!= 1"),
             # One series healthy, one NaN: the check cannot be evaluated as a whole.
             ('vector(0.001) or label_replace(vector(0/0), "s", "nan", "", "")', "< 0.01")]
    try:
        for query, condition in cases:
            seen = await probe.observe(asked(query, condition))
            assert seen.ok is None and seen.value.startswith("no answer"), (query, condition, seen)
    finally:
        await probe.aclose()


async def test_an_answer_far_too_big_is_no_answer_and_is_not_read_whole():
    from bot.adapters.probes import HttpProbe
    from bot.core.events import VerifyCheck
    from bot.testing.prometheus import UnrulyPrometheus

    size = 40_000_000  # a valid, healthy answer: only its size is wrong
    server = UnrulyPrometheus(size=size)
    probe = HttpProbe()
    check = VerifyCheck(kind="prometheus", name=QUERY, url=server.url, query=QUERY, condition="< 0.05")
    try:
        seen = await probe.observe(check)
        assert seen.ok is None and seen.value.startswith("no answer"), seen
        assert "1 MB" in seen.value  # said plainly: the default cap
        assert await asyncio.to_thread(server.finished.wait, 30)
        # What the kernel's buffers held besides: far from the whole answer.
        assert server.sent < size / 2
    finally:
        await probe.aclose()
        server.stop()


DRIP_BAKE = 8  # seconds


@pytest.fixture
def dripping() -> Iterator[UnrulyPrometheus]:
    server = UnrulyPrometheus(drip_every=1.0, drip_for=60)
    yield server
    server.stop()


@pytest.fixture
async def dripping_app(settings: Settings, redis: Redis, tmp_path: Path, dripping: UnrulyPrometheus,
                       fake_llm) -> AsyncIterator[App]:
    config = tmp_path / "deploybot.toml"
    config.write_text(f"""
[environments.staging]
[services.backend]
[services.frontend]
[services.backend.verify.staging]
bake = "{DRIP_BAKE}s"
interval = "1s"
grace = "1m"
[[services.backend.verify.staging.prometheus]]
url = "{dripping.url}"
query = "{QUERY}"
condition = "< 0.05"
""")
    fake_llm.default = reply(intent="done_for_now", message="done")
    built = build(settings.model_copy(update={"deploybot_config": config}))
    assert built.runner.verifying is not None
    # The lock outlives a round by two intervals and a second, not a minute: a round that
    # hung on the drip would let it lapse within seconds.
    built.runner.verifying.lock_margin = 1
    yield built
    await built.close()


async def test_a_prometheus_that_drips_its_answer_ends_each_round_by_its_deadline_and_nobody_deploys_over_the_bake(
    dripping_app, dripping, workers, ledger,
):
    app = dripping_app
    first = await launch(app, "deploy backend v1.2.3 to staging")
    workers.append(worker(app, "w1"))
    workers[0].start()

    async def bake_started() -> VerificationStarted | None:
        return (await app.store.load(first)).verifying()
    started = await eventually(bake_started, within=20)
    await eventually(lambda: dripping.asked > 0)  # a round is in flight, answered a byte a second
    holders: set[str | None] = set()

    async def watch() -> None:
        # A holder read while the thread, read after it, is still verifying: held during the bake.
        while True:
            held = await app.environments.holder("staging", "backend")
            if verification_ended(await app.store.load(first)):
                return
            holders.add(held.owner if held else None)
            await asyncio.sleep(0.1)
    watching = asyncio.create_task(watch())
    try:
        # Past the lock's time to live since the bake began (two intervals and the margin):
        # a round waiting on the drip would have let it lapse by then.
        lapsed_by = started.at + timedelta(seconds=2 * started.interval + 1 + 1)
        await eventually(lambda: app.service.clock() > lapsed_by, within=30)
        second = await launch(app, "deploy backend v1.2.2 to staging")

        async def refused() -> Error | None:
            thread = await app.store.load(second)
            return next((e for e in thread.events if isinstance(e, Error | DeployResult)), None)  # type: ignore[return-value]
        outcome = await eventually(refused, within=20)
        assert isinstance(outcome, Error) and outcome.kind == "locked", outcome
        # The rounds ended by their deadline, each an unanswered check, and the bake ended on
        # time: long before the drip (a minute) would have.
        done = await ended(app, first, within=DRIP_BAKE + 20)
    finally:
        watching.cancel()
    assert holders == {started.deploy_id}  # held the whole bake, by the deploy being verified
    rounds = [e for e in (await app.store.load(first)).events if isinstance(e, CheckObserved)]
    assert len(rounds) >= 2 and all(e.ok is None and e.value.startswith("no answer") for e in rounds), rounds
    assert done.outcome == "failed" and done.value.startswith("no answer")  # never answered: never held
    assert len(ledger_lines(ledger)) == 1  # only the first deploy ran


def verification_ended(thread) -> bool:
    return any(isinstance(e, VerificationEnded) for e in thread.events)


async def test_the_lock_is_renewed_all_through_a_run_of_the_bake_not_only_when_it_begins(redis):
    """A round whose verdict takes three times the lock's time to live to record (a Redis slow
    to write, a replica that WAITs) still holds the lock when it is recorded."""
    from bot.adapters.redis.environments import RedisEnvironments
    from bot.core.control import CheckNow
    from bot.core.events import VerifyCheck
    from bot.core.thread import Thread
    from bot.runtime.ports import Lock
    from bot.runtime.verifying import Verifying
    from tests.memory_parts import team_policy

    locks = RedisEnvironments(redis)
    check = VerifyCheck(kind="http", name="health", url="http://app/health")
    now = datetime.now(UTC)
    started = VerificationStarted(step_id="s", deploy_id="t1-s", service="backend", environment="staging",
                                  tag="v1.2.3", ends_at=now + timedelta(minutes=1), interval=0.2, grace=1,
                                  checks=[check], at=now)
    assert await locks.acquire(Lock("staging", started.deploy_id, "deploying", now, "backend"), 1000) is None
    ttl = 2 * started.interval  # no margin: the lock lives two intervals past its latest renewal

    class Answers:
        async def observe(self, check: VerifyCheck) -> Observation:
            return Observation(True, "HTTP 200")

    class SlowJournal:
        held: Lock | None = None

        async def decide(self, thread: Thread, events):
            await asyncio.sleep(3 * ttl)
            self.held = await locks.holder("staging", "backend")
            return thread.extended(events)

        fact = decide

    async def nobody_waits(environment: str, service: str) -> None:
        pass

    verifying = Verifying(Answers(), locks, locks, team_policy(), nobody_waits, lock_margin=0)
    journal = SlowJournal()
    thread = await verifying.check(Thread("t1", (started,)), CheckNow(started), journal)
    assert [e.ok for e in thread.events if isinstance(e, CheckObserved)] == [True]
    assert journal.held is not None and journal.held.owner == started.deploy_id
