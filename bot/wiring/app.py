"""Composition root: builds every part from Settings. Nothing else wires adapters."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any, Protocol, runtime_checkable

from redis.asyncio import Redis
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import OutOfMemoryError
from redis.exceptions import TimeoutError as RedisTimeoutError
from starlette.types import ASGIApp

from bot.adapters.http.limits import Limit, deploybot_limits
from bot.adapters.probes import HttpProbe
from bot.adapters.redis import connect
from bot.adapters.redis import embedded as embedded_redis
from bot.adapters.redis.credentials import RedisCredentials
from bot.adapters.redis.environments import RedisEnvironments
from bot.adapters.redis.freezes import RedisFreezes
from bot.adapters.redis.inbox import RedisInbox
from bot.adapters.redis.live_output import RedisLiveOutput
from bot.adapters.redis.outbox import RedisOutbox
from bot.adapters.redis.replicas import Replicas
from bot.adapters.redis.schedules import RedisScheduleMarks
from bot.adapters.redis.threads import RedisThreadStore
from bot.adapters.redis.timers import RedisDeployQueue, RedisTimers
from bot.adapters.redis.work import RedisWorkQueue
from bot.config.settings import Settings
from bot.core.events import Event
from bot.core.people import OPEN_MODE_NOTICE
from bot.core.policy import Policy
from bot.core.thread import Thread
from bot.runtime.clock import utcnow
from bot.runtime.delivery import Delivery
from bot.runtime.deploying import Deploying
from bot.runtime.gc import Collector
from bot.runtime.loop import Runner
from bot.runtime.ports import (
    Channel,
    DeployCounters,
    FreezeStore,
    Health,
    History,
    LiveOutput,
    Locks,
    NextStepModel,
    Notifier,
    Route,
)
from bot.runtime.scheduler import TICK_EVERY, Scheduler
from bot.runtime.service import ThreadService
from bot.runtime.skew import ClockCheck
from bot.runtime.verifying import Verifying
from bot.runtime.worker import Worker, worker_name
from bot.wiring.channels import Parts, around, body_limits, make_channels, people_kinds, raw_users
from bot.wiring.deployers import make_deployers
from bot.wiring.sign_in import public_base, session_secret, sign_in_linker, sign_in_mailer

log = logging.getLogger(__name__)
Chore = tuple[float, Callable[[], Awaitable[object]]]  # every so many seconds, this


class Fanout:
    """Every notifier hears every event; each decides whether the thread is its business."""

    def __init__(self, notifiers: Sequence[Notifier]) -> None:
        self.notifiers = list(notifiers)

    async def publish(self, thread: Thread, new: Sequence[Event]) -> None:
        for notifier in self.notifiers:
            try:
                await notifier.publish(thread, new)
            except Exception:  # one broken channel must not silence the others
                log.exception("thread %s: %s failed", thread.id, type(notifier).__name__)


@dataclass(frozen=True)
class App:
    """Every part, built once by `build`; each process takes what it needs (web.Parts,
    cli.Terminal, the worker)."""

    settings: Settings
    redis: Redis
    store: RedisThreadStore
    inbox: RedisInbox
    environments: RedisEnvironments
    queue: RedisWorkQueue
    service: ThreadService
    runner: Runner
    worker: Worker
    llm_configured: bool
    credentials: RedisCredentials | None = None  # personal API tokens, sign-in links, sessions
    collector: Collector | None = None  # retention (bot/runtime/gc.py): a worker chore, and `python -m bot gc`
    channels: Mapping[str, Channel] = field(default_factory=dict)  # those switched on, by kind (wiring/channels.py)
    live_output: LiveOutput | None = None  # running deploys' output as it comes (the console's live tail)
    _watching: list[asyncio.Task[None]] = field(default_factory=list)  # the web's clock check, the embedded Redis

    def adapter(self, kind: str) -> Any:
        """The object behind a channel that is on (EmailChannel, SlackChannel, ...), or None."""
        channel = self.channels.get(kind)
        return getattr(channel, "adapter", channel)

    async def sign_in_link(self, person: str) -> str:
        """A one-time sign-in link for `person` (good for 10 minutes): the URL to open."""
        assert self.credentials is not None
        return await sign_in_linker(self.settings, self.credentials)(person)

    # --- what the HTTP side needs (bot.adapters.http.api.Parts) ---------------------------------------

    @property
    def policy(self) -> Policy:
        return self.service.policy

    @property
    def locks(self) -> Locks:
        return self.environments

    @property
    def history(self) -> History:
        return self.environments

    @property
    def freezes(self) -> FreezeStore | None:
        """Stop-the-line freezes (the store the deploy path checks)."""
        return self.runner.deploying.freezes

    @cached_property
    def delivery(self) -> Delivery:
        """One per process: it keeps the commit times it has looked up."""
        deploying = self.runner.deploying
        return Delivery(self.environments, deploying.deployers, self.policy.environments, utcnow)

    @property
    def counters(self) -> DeployCounters:
        return self.environments

    @property
    def health(self) -> Health:
        return self.store

    @property
    def deploying(self) -> Deploying:
        return self.runner.deploying

    @property
    def api_token(self) -> str | None:
        token = self.settings.api_token
        return token.get_secret_value() if token else None

    @property
    def secrets(self) -> tuple[str, ...]:
        return self.settings.secrets()

    @property
    def stream_limits(self) -> tuple[int, int]:
        return self.settings.console_streams_per_person, self.settings.console_streams

    @property
    def routes(self) -> list[Route]:
        """The channels' HTTP endpoints (Slack's, email's, GitHub's webhook, when on)."""
        return [route for channel in self.channels.values() for route in channel.routes()]

    async def kick(self, thread_id: str) -> None:
        """Hand the thread to a worker: called after an event is recorded, before it is
        acknowledged, so acknowledged work is always in the queue."""
        await self.queue.push(thread_id)

    async def start(self, worker: bool = True, receive: bool = True) -> None:
        """Start the channels (taking inbound messages only if `receive`), and this
        process's worker unless worker processes run elsewhere."""
        for channel in self.channels.values():
            await channel.start(receive)
        if self.settings.redis.mode == "single" and self.settings.redis.url is None:
            # The embedded server is ours to keep up: started again if it dies.
            self._watching.append(asyncio.create_task(embedded_redis.watch(self.settings.data_dir)))
        if worker:
            self.worker.start()  # it measures the clock itself
        elif self.service.clock_check is not None:  # the web decides whether an approval expired
            self._watching.append(asyncio.create_task(self.service.clock_check.watch()))

    async def close(self) -> None:
        for task in self._watching:
            task.cancel()
        await self.worker.stop(self.settings.worker_grace)
        for channel in reversed(list(self.channels.values())):  # the last started stops first
            await channel.stop()
        for deployer in {id(d): d for d in self.runner.deploying.deployers.values()}.values():
            if isinstance(deployer, Closeable):
                await deployer.aclose()
        if self.runner.verifying is not None and isinstance(self.runner.verifying.probe, Closeable):
            await self.runner.verifying.probe.aclose()
        await self.redis.aclose()


@runtime_checkable
class Closeable(Protocol):
    async def aclose(self) -> None: ...


def redis_url(settings: Settings) -> str:
    """The single server's URL: REDIS_URL, or the embedded server's (started if need be)."""
    return settings.redis_url or embedded_redis.ensure_running(settings.data_dir)


def redis_client(settings: Settings, max_connections: int = 100) -> Redis:
    """The Redis client for these settings: one server, Sentinel or Cluster
    (bot/adapters/redis/connect.py). The embedded server is started only when nothing names a
    server: never with REDIS_SENTINELS or REDIS_CLUSTER."""
    target = settings.redis
    if target.mode == "single" and target.url is None:
        target = replace(target, url=redis_url(settings))
    return connect.client(target, max_connections)


def make_llm(settings: Settings) -> NextStepModel | None:
    llm = settings.llm
    if llm is None:
        return None
    from bot.adapters.llm import BamlModel  # loads the BAML runtime only when an LLM is configured

    return BamlModel(
        llm.provider, llm.model, llm.api_key.get_secret_value(), llm.base_url,
        secrets=settings.secrets(), log_level=settings.log_level, services=settings.policy().catalog.names,
        timeout=settings.llm_timeout,
    )


def redis_connections(settings: Settings, web: bool = False, worker: bool = True) -> int:
    """The Redis connections a process opens at most, for what it does. A worker: enough for
    every run at once (one command each, plus the renewals of a deploy; redis-py's default of
    100 failed a burst of 200 runs). A web process: REDIS_WEB_CONNECTIONS for its requests
    (sized for workers, 2,000 requests at once were 56 to 94 % "storage unavailable" while
    Redis was idle). `serve` with its worker: both. Past the limit a command waits for a free
    connection (bot/adapters/redis/connect.py: POOL_WAIT)."""
    return (settings.redis_web_connections if web else 0) + (2 * settings.worker_concurrency + 100 if worker else 0)


def build(settings: Settings, notifier: Notifier | None = None, connections: int | None = None) -> App:
    """Every part, from the settings. `notifier`: what this process shows events with instead
    of the log (the CLI's terminal). `connections`: the Redis connections it may open
    (redis_connections; unset: a worker's)."""
    # Reads of many threads take a bounded number of connections at once
    # (service.LOADS_AT_ONCE, the console reader's CONCURRENT_READS), whatever is stored.
    # Commands are resent on a broken connection (a Redis restart, a Sentinel failover) for
    # about 3 s: appends, thread creation and inbound dedupe recognise their own first send; a
    # resent stream read only delays its entries until they are reclaimed; the deploy history
    # may get an entry twice.
    redis = redis_client(settings, max_connections=connections or redis_connections(settings))
    target = settings.redis
    # Appends and thread creation WAIT for a replica when the master has one (not on a cluster).
    store = RedisThreadStore(redis, replicas=Replicas(redis, target.wait_ms) if target.waits else None)
    inbox, environments, credentials = RedisInbox(redis), RedisEnvironments(redis), RedisCredentials(redis)
    queue, timers, policy = RedisWorkQueue(redis), RedisTimers(redis), settings.policy(people_kinds())
    clock = utcnow  # one clock for every event recorded, by a run or by the service
    fanout = Fanout([])  # the channels' notifiers, once they are built (they record through the service)
    live_output = RedisLiveOutput(redis)
    deployers = make_deployers(settings, live_output)
    deploying = Deploying(
        deployers, environments, environments, policy, settings.secrets(),
        queue=RedisDeployQueue(redis), wake=queue.push, freezes=RedisFreezes(redis, clock=clock),
        deploy_lease_ms=int(settings.deploy_lease * 1000),
    )
    llm = make_llm(settings)
    name = worker_name()
    runner = Runner(
        name=name, store=store, deploying=deploying, llm=llm,  # a lease names the worker process that holds it
        context_budget=settings.context_budget, notifier=fanout, policy=policy, secrets=settings.secrets(),
        # A full Redis (maxmemory, noeviction) refuses writes as if it were away: a deploy's
        # result waits for room instead of being dropped.
        transient=(RedisConnectionError, RedisTimeoutError, OutOfMemoryError), clock=clock, timers=timers,
        verifying=Verifying(HttpProbe(), environments, environments, policy, deploying.wake_next),
    )
    clock_check = ClockCheck(connect.server_time(redis))  # the clocks compared: bot/runtime/skew.py
    service = ThreadService(store, policy, fanout, clock, raw_users=raw_users(), clock_check=clock_check)
    # The deployers are the deploy path's own: a channel in front of them (the GitHub gate) wraps them in place.
    channels = make_channels(Parts(settings, service, inbox, queue.push, credentials, policy, notifier,
                                   history=environments, deployers=deployers, outbox=RedisOutbox(redis)))
    fanout.notifiers += [n for channel in channels.values() if (n := channel.notifier()) is not None]
    collector = Collector(
        store, inbox, environments, queue, sorted(policy.environments), settings.thread_retention,
        settings.deploy_history_retention, settings.thread_compact_after or None, timers, clock,
    )
    chores = worker_chores(settings, redis, service, queue, timers, collector)
    worker = Worker(runner, queue, store, settings.worker_concurrency, name, chores=chores, clock=clock_check)
    return App(
        settings, redis, store, inbox, environments, queue, service, runner, worker,
        llm_configured=llm is not None, credentials=credentials, collector=collector, channels=channels,
        live_output=live_output,
    )


def worker_chores(
    settings: Settings, redis: Redis, service: ThreadService, queue: RedisWorkQueue, timers: RedisTimers,
    collector: Collector,
) -> tuple[Chore, ...]:
    """What workers do besides runs: start scheduled threads, fire timers, retention."""
    chores: list[Chore] = []
    if schedules := settings.schedules():
        scheduler = Scheduler(schedules, RedisScheduleMarks(redis), service, queue.push, service.clock)
        chores.append((TICK_EVERY, scheduler.tick))
    chores.append((TIMER_EVERY, fire_timers(timers, queue, service.clock)))
    chores.append((settings.gc_every, retention(collector, queue, settings.gc_every)))
    return tuple(chores)


TIMER_EVERY = 1.0  # seconds between looks for threads due (reminders, expiry, the queue)
TIMER_LEASE_MS = 30_000  # a due thread taken by a worker that died is due again after this


def fire_timers(timers: RedisTimers, queue: RedisWorkQueue, clock: Callable[[], Any]) -> Callable[[], Awaitable[None]]:
    """A worker chore: hand each thread that is due to a worker, like any other input. Its
    run decides what is due and records it (bot/core/control.py), so a timer that fires twice
    (a worker died after taking it) does nothing twice."""

    async def fire() -> None:
        for thread_id in await timers.due(clock(), TIMER_LEASE_MS, 100):
            await queue.push(thread_id)

    return fire


def retention(collector: Collector, queue: RedisWorkQueue, every: float) -> Callable[[], Awaitable[None]]:
    """A worker chore: a retention pass (bot/runtime/gc.py) by one worker at a time."""

    async def collect() -> None:
        if await queue.turn("gc", max(1, int(every))):
            await collector.chore()

    return collect


def http_app(app: App, worker: bool = True, fast_launch: bool = True) -> ASGIApp:
    """The HTTP server's application: body limits and credentials (API_TOKEN, personal
    tokens, session cookies) are checked before the app reads a body (bot.adapters.http.front_door),
    around the routes of bot.adapters.http.api. `fast_launch=False`: POST /threads through the
    framework's route every time (tests hold the two answers side by side)."""
    from bot.adapters.http.api import create_app
    from bot.adapters.http.api.fast_launch import FastLaunch
    from bot.adapters.http.auth import Auth
    from bot.adapters.http.front_door import HttpLimits
    from bot.adapters.http.sessions import Sessions

    settings = app.settings
    if settings.open_mode:
        log.warning("open mode: %s", OPEN_MODE_NOTICE)
    if settings.bind_host() != "127.0.0.1" and not settings.host_names():
        # Served beyond loopback with no name of its own: every request by another name is a 400.
        log.warning("http: only requests for 127.0.0.1, localhost or [::1] (Host header) are answered: "
                    "set PUBLIC_URL or ALLOWED_HOSTS to the names this server is reached by")
    credentials = app.credentials or RedisCredentials(app.redis)
    auth = Auth(
        app.api_token,
        open_mode=settings.open_mode,
        credentials=credentials,
        directory=app.service.directory,
        sessions=Sessions(lambda: session_secret(settings), settings.session_ttl),
        sign_in_link=sign_in_linker(settings, credentials),
        mail=sign_in_mailer(settings, app.adapter("email")),
        slack_login=app.adapter("slack") is not None,
        secure_cookies=public_base(settings).startswith("https://"),
    )
    web = around(list(app.channels.values()), create_app(app, worker=worker, sign_in=auth))  # agents at /mcp
    if fast_launch:
        web = FastLaunch(web, app)  # POST /threads, the plain case, without the framework's layers
    return HttpLimits(web, auth, limits=http_limits(settings), hosts=settings.host_names())


def http_limits(settings: Settings) -> list[Limit]:
    """The front door's table: the channels' paths with their own body limits, taking no
    credentials (each channel proves who is speaking itself) unless their kind asks for them
    (MCP: an agent's token); then the front door's own paths."""
    channels = body_limits(settings)
    taken = {limit.path for limit in channels}
    return channels + [limit for limit in deploybot_limits(None) if limit.path not in taken]


