"""Composition root: builds every part from Settings. Nothing else wires adapters."""

from __future__ import annotations

import logging
import os
import secrets
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from redis.asyncio import Redis
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError
from starlette.types import ASGIApp

from bot.adapters.channels.log import LogNotifier
from bot.adapters.deployers.command import CommandDeployer
from bot.adapters.redis import connect
from bot.adapters.redis import embedded as embedded_redis
from bot.adapters.redis.credentials import RedisCredentials
from bot.adapters.redis.environments import RedisEnvironments
from bot.adapters.redis.freezes import RedisFreezes
from bot.adapters.redis.inbox import RedisInbox
from bot.adapters.redis.replicas import Replicas
from bot.adapters.redis.schedules import RedisScheduleMarks
from bot.adapters.redis.threads import RedisThreadStore
from bot.adapters.redis.timers import RedisDeployQueue, RedisTimers
from bot.adapters.redis.work import RedisWorkQueue
from bot.config.settings import ServiceSettings, Settings
from bot.core.events import Event
from bot.core.people import OPEN_MODE_NOTICE
from bot.core.policy import Policy
from bot.core.thread import Thread
from bot.runtime.clock import utcnow
from bot.runtime.deploying import Deploying
from bot.runtime.gc import Collector
from bot.runtime.loop import Runner
from bot.runtime.ports import Deployer, FreezeStore, Health, History, Locks, NextStepModel, Notifier
from bot.runtime.scheduler import TICK_EVERY, Scheduler
from bot.runtime.service import ThreadService
from bot.runtime.worker import Worker, worker_name

if TYPE_CHECKING:  # the channels are imported only when they are switched on
    from bot.adapters.channels.email import EmailChannel
    from bot.adapters.channels.github_deployments import GitHubDeployments
    from bot.adapters.channels.github_webhook import GitHubWebhook
    from bot.adapters.channels.outgoing_webhooks import WebhookNotifier
    from bot.adapters.channels.slack import SlackChannel

log = logging.getLogger(__name__)
Kick = Callable[[str], Awaitable[None]]
Endpoint = Callable[[Any], Awaitable[Any]]


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
    slack: SlackChannel | None = None
    email: EmailChannel | None = None
    credentials: RedisCredentials | None = None  # personal API tokens, sign-in links, sessions
    github: GitHubWebhook | None = None  # POST /github/webhook: [[triggers]]
    webhooks: WebhookNotifier | None = None  # NOTIFY_WEBHOOK_URL
    deployments: GitHubDeployments | None = None  # GitHub Deployments of the services on GitHub
    collector: Collector | None = None  # retention (bot/runtime/gc.py): a worker chore, and `python -m bot gc`

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

    @property
    def health(self) -> Health:
        return self.store

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
    def slack_endpoint(self) -> Endpoint | None:
        """Slack's HTTP endpoint; None with Slack off or in Socket Mode (no HTTP then)."""
        return self.slack.endpoint if self.slack and not self.slack.app_token else None

    @property
    def email_endpoint(self) -> Endpoint | None:
        return self.email.endpoint if self.email else None

    @property
    def github_endpoint(self) -> Endpoint | None:
        """GitHub's webhook endpoint; None without GITHUB_WEBHOOK_SECRET."""
        return self.github.endpoint if self.github else None

    async def kick(self, thread_id: str) -> None:
        """Hand the thread to a worker: called after an event is recorded, before it is
        acknowledged, so acknowledged work is always in the queue."""
        await self.queue.push(thread_id)

    async def start(self, worker: bool = True, receive: bool = True) -> None:
        """Start the channels (taking inbound messages only if `receive`), and this
        process's worker unless worker processes run elsewhere."""
        if self.slack:
            await self.slack.start(receive)
        if worker:
            self.worker.start()

    async def close(self) -> None:
        await self.worker.stop(self.settings.worker_grace)
        if self.email:
            await self.email.drain()
        if self.webhooks:
            await self.webhooks.aclose()
        if self.deployments:
            await self.deployments.aclose()
        if self.slack:
            await self.slack.stop()
        for deployer in {id(d): d for d in self.runner.deploying.deployers.values()}.values():
            if isinstance(deployer, Closeable):
                await deployer.aclose()
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
    )


def make_deployers(settings: Settings) -> dict[str, Deployer]:
    """A deployer per service. Without a catalog, backend and frontend share one (one
    repository, one GitHub client)."""
    github = settings.github
    if github is not None:  # DEPLOYER=github without a catalog
        from bot.adapters.deployers.github_actions import GitHubDeployer

        shared: Deployer = GitHubDeployer(
            github.token.get_secret_value(), github.repository, dict(github.workflows),
            github.api_url, github.ref, github.poll_seconds, commit_input=github.commit_input,
        )
        return {service.name: shared for service in settings.services()}
    deployers: dict[str, Deployer] = {}
    built: dict[tuple[object, ...], Deployer] = {}
    for service in settings.services():
        key = (service.deployer, service.repo, service.command, service.github, service.workflow)
        if key not in built:
            built[key] = _deployer(settings, service)
        deployer = built[key]
        if service.tag_prefix:
            from bot.adapters.deployers.prefixed import Prefixed

            deployer = Prefixed(deployer, service.tag_prefix)
        deployers[service.name] = deployer
    return deployers


def _deployer(settings: Settings, service: ServiceSettings) -> Deployer:
    if service.deployer == "github":
        from bot.adapters.deployers.github_actions import GitHubDeployer

        assert settings.github_token is not None and service.github and service.workflow  # checked at start
        return GitHubDeployer(
            settings.github_token.get_secret_value(), service.github, {service.name: service.workflow},
            settings.github_api_url, settings.github_ref, settings.github_poll_seconds,
            commit_input=settings.github_commit_input.strip(),
        )
    return CommandDeployer(service.repo, service.command, settings.deploy_timeout, settings.deploy_passthrough())


def make_email(settings: Settings, service: ThreadService, inbox: RedisInbox, kick: Kick) -> EmailChannel:
    from bot.adapters.channels.email import EmailChannel, Smtp

    email = settings.email
    assert email is not None, "make_email is called only when the email channel is on"
    password = email.smtp_password.get_secret_value() if email.smtp_password else None
    return EmailChannel(
        service=service,
        inbox=inbox,
        kick=kick,
        smtp=Smtp(email.smtp_host, email.smtp_port, email.smtp_username, password, email.smtp_tls),
        sender=email.sender,
        inbound_secret=email.inbound_secret.get_secret_value(),
        reply_secret=email.reply_secret.get_secret_value(),
        allowed=email.allowed_senders,
        policy=service.policy,  # who may approve: the same rules the service decides by
        max_bytes=email.max_bytes,
        trusted_authserv_ids=email.trusted_authserv_ids,
    )


def build(settings: Settings, notifier: Notifier | None = None) -> App:
    # Enough connections for every run at once (one command each, plus the renewals of a
    # deploy): redis-py's default of 100 failed a burst of 200 runs with "Too many
    # connections". Past the limit a command fails at once with MaxConnectionsError: redis-py
    # takes the connection before its retry policy starts, so nothing retries it. Reads of
    # many threads therefore take a bounded number at once (service.LOADS_AT_ONCE, the
    # console reader's CONCURRENT_READS), whatever is stored. Commands are resent on a
    # broken connection (a Redis restart, a Sentinel failover) for about 3 s: appends, thread
    # creation and inbound dedupe recognise their own first send; a resent stream read only
    # delays its entries until they are reclaimed; the deploy history may get an entry twice.
    redis = redis_client(settings, max_connections=2 * settings.worker_concurrency + 100)
    target = settings.redis
    # Appends and thread creation WAIT for a replica when the master has one (not on a cluster).
    replicas = Replicas(redis, target.wait_ms) if target.waits else None
    store = RedisThreadStore(redis, replicas=replicas)
    inbox = RedisInbox(redis)
    credentials = RedisCredentials(redis)
    policy = settings.policy()
    notifiers: list[Notifier] = [notifier or LogNotifier(settings.secrets())]
    slack_web = None
    slack_settings = settings.slack
    if slack_settings is not None:
        from bot.adapters.channels import slack

        slack_web = slack.client(slack_settings.bot_token.get_secret_value(), slack_settings.api_url)
        notifiers.append(slack.SlackNotifier(slack_web, inbox, policy))
    fanout = Fanout(notifiers)
    environments = RedisEnvironments(redis)
    queue = RedisWorkQueue(redis)
    name = worker_name()
    clock = utcnow  # one clock for every event recorded, by a run or by the service
    timers = RedisTimers(redis)
    deploying = Deploying(
        make_deployers(settings), environments, environments, policy, settings.secrets(),
        queue=RedisDeployQueue(redis), wake=queue.push, freezes=RedisFreezes(redis, clock=clock),
    )
    llm = make_llm(settings)
    runner = Runner(
        name=name,  # a lease names the worker process that holds it
        store=store,
        deploying=deploying,
        llm=llm,
        context_budget=settings.context_budget,
        notifier=fanout,
        policy=policy,
        secrets=settings.secrets(),
        transient=(RedisConnectionError, RedisTimeoutError),
        clock=clock,
        timers=timers,
    )
    service = ThreadService(store, policy, fanout, clock)
    webhooks = None
    if (hooks := settings.notify_webhook) is not None:
        from bot.adapters.channels.outgoing_webhooks import WebhookNotifier

        # Records a delivery that keeps failing through the service, so it joins the fan-out
        # once the service is built (like email).
        webhooks = WebhookNotifier(
            hooks.urls, hooks.secret.get_secret_value(), service.record, secrets=settings.secrets()
        )
        fanout.notifiers.append(webhooks)
    deployments = None
    legacy = settings.github.repository if settings.github else None  # DEPLOYER=github without a catalog
    on_github = {
        s.name: repo for s in settings.services() if (repo := s.github or (legacy if s.deployer == "github" else None))
    }
    if on_github and settings.github_token is not None:
        from bot.adapters.channels.github_deployments import GitHubDeployments

        # Like the webhooks: records a status that keeps failing through the service.
        deployments = GitHubDeployments(
            settings.github_token.get_secret_value(), on_github, service.record, inbox,
            api_url=settings.github_api_url, public_url=settings.public_url,
        )
        fanout.notifiers.append(deployments)
    chores: list[tuple[float, Callable[[], Awaitable[object]]]] = []
    if schedules := settings.schedules():
        scheduler = Scheduler(schedules, RedisScheduleMarks(redis), service, queue.push, clock)
        chores.append((TICK_EVERY, scheduler.tick))
    chores.append((TIMER_EVERY, fire_timers(timers, queue, clock)))
    collector = Collector(
        store, inbox, environments, queue, sorted(policy.environments), settings.thread_retention,
        settings.deploy_history_retention, settings.thread_compact_after or None, timers, clock,
    )
    chores.append((settings.gc_every, retention(collector, queue, settings.gc_every)))
    worker = Worker(runner, queue, store, settings.worker_concurrency, name, chores=tuple(chores))
    email = None
    if settings.email is not None:
        email = make_email(settings, service, inbox, queue.push)
        # The email channel records replies through the service and also hears every event
        # (to mail approvers), so it joins the fan-out the service publishes to once built.
        fanout.notifiers.append(email)
    slack_channel = None
    if slack_settings is not None and slack_web is not None:
        app_token = slack_settings.app_token.get_secret_value() if slack_settings.app_token else None
        slack_channel = slack.build(
            slack_settings.signing_secret.get_secret_value(), slack_web,
            service, inbox, queue.push, app_token, sign_in_link=sign_in_linker(settings, credentials),
        )
    github = None
    if settings.github_webhook_secret is not None:
        from bot.adapters.channels.github_webhook import GitHubWebhook

        github = GitHubWebhook(
            settings.github_webhook_secret.get_secret_value(), settings.triggers(), service, inbox, queue.push
        )
    return App(
        settings, redis, store, inbox, environments, queue, service, runner, worker,
        llm_configured=llm is not None, slack=slack_channel, email=email, credentials=credentials,
        github=github, webhooks=webhooks, deployments=deployments, collector=collector,
    )


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


def http_app(app: App, worker: bool = True) -> ASGIApp:
    """The HTTP server's application: body limits and credentials (API_TOKEN, personal
    tokens, session cookies) are checked before the app reads a body (bot.adapters.http.front_door),
    around the routes of bot.adapters.http.api."""
    from bot.adapters.http.api import create_app
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
        mail=sign_in_mailer(app),
        secure_cookies=public_base(settings).startswith("https://"),
    )
    email = settings.email
    return HttpLimits(create_app(app, worker=worker, sign_in=auth), auth, email.max_bytes if email else None,
                      hosts=settings.host_names())


# --- signing in -------------------------------------------------------------------------------

SESSION_SECRET_FILE = "session_secret"


def public_base(settings: Settings) -> str:
    """Where people reach this server: PUBLIC_URL, else the address it serves on."""
    if settings.public_url:
        return settings.public_url.rstrip("/")
    host = settings.bind_host()
    host = "localhost" if host in ("0.0.0.0", "::", "") else f"[{host}]" if ":" in host else host
    return f"http://{host}:{settings.port}"


def sign_in_linker(settings: Settings, credentials: RedisCredentials) -> Callable[[str], Awaitable[str]]:
    """person -> a one-time sign-in URL (`/auth/link?code=...`), good for 10 minutes: for
    `python -m bot login-link`, Slack's `@deploybot login` and POST /auth/email-link."""
    from bot.adapters.http.auth import LINK_TTL

    async def link(person: str) -> str:
        code = await credentials.issue_link(person, LINK_TTL)
        return f"{public_base(settings)}/auth/link?code={code}"

    return link


def sign_in_mailer(app: App) -> Callable[[str, str], Awaitable[None]] | None:
    """Mails a sign-in link through the email channel's SMTP; None without the channel."""
    channel, email = app.email, app.settings.email
    if channel is None or email is None:
        return None
    from email.message import EmailMessage
    from email.utils import make_msgid

    async def mail(address: str, url: str) -> None:
        msg = EmailMessage()
        msg["From"], msg["To"], msg["Subject"] = email.sender, address, "Your deploybot sign-in link"
        msg["Message-ID"] = make_msgid(domain=email.sender.rpartition("@")[2] or None)
        msg.set_content(
            f"Open this link to sign in to deploybot:\n\n{url}\n\n"
            "It works once, for 10 minutes. If you did not ask for it, ignore this email.\n"
        )
        await channel.smtp.send(msg)

    return mail


def session_secret(settings: Settings) -> bytes:
    """SESSION_SECRET, or (unset: local mode) a random one kept in DATA_DIR/session_secret,
    created on first use. Every server behind one address must share it: set SESSION_SECRET
    when there is more than one."""
    if settings.session_secret is not None:
        return settings.session_secret.get_secret_value().encode()
    path = settings.data_dir / SESSION_SECRET_FILE
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        # Written aside and linked into place: of two processes starting at once, one
        # secret wins and neither reads half a file.
        spare = path.with_name(f"{SESSION_SECRET_FILE}.{secrets.token_hex(4)}")
        fd = os.open(spare, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as out:
            out.write(secrets.token_hex(32))
        try:
            os.link(spare, path)
        except FileExistsError:
            pass
        finally:
            spare.unlink()
    return path.read_text().strip().encode()
