"""Composition root: builds every part from Settings. Nothing else wires adapters."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Awaitable, Callable, Sequence

from redis.asyncio import Redis
from redis.asyncio.retry import Retry
from redis.backoff import ExponentialWithJitterBackoff
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from bot import embedded_redis
from bot.channels.log import LogNotifier
from bot.deployers.command import CommandDeployer
from bot.events import Event
from bot.loop import Runner
from bot.ports import Deployer, NextStepModel, Notifier
from bot.service import ThreadService
from bot.settings import Settings
from bot.stores.environments import RedisEnvironments
from bot.stores.redis import RedisThreadStore
from bot.thread import Thread
from bot.stores.work import RedisWorkQueue
from bot.worker import Worker, worker_name

log = logging.getLogger(__name__)
Kick = Callable[[str], Awaitable[None]]


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


@dataclass
class App:
    settings: Settings
    redis: Redis
    store: RedisThreadStore
    environments: RedisEnvironments
    runner: Runner
    service: ThreadService
    queue: RedisWorkQueue
    worker: Worker
    slack: Any = None  # bot.channels.slack.SlackChannel when SLACK_BOT_TOKEN is set
    email: Any = None  # bot.channels.email.EmailChannel when SMTP_HOST etc. are set

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
        if self.slack:
            await self.slack.stop()
        if hasattr(self.runner.deployer, "aclose"):
            await self.runner.deployer.aclose()
        await self.redis.aclose()


def redis_url(settings: Settings) -> str:
    return settings.redis_url or embedded_redis.ensure_running(settings.data_dir)


def make_llm(settings: Settings) -> NextStepModel | None:
    config = settings.llm()
    if config is None:
        return None
    from bot.llm import BamlModel  # loads the BAML runtime only when an LLM is configured

    return BamlModel(*config)


def make_deployer(settings: Settings) -> Deployer:
    github = settings.github()
    if github is not None:
        from bot.deployers.github import GitHubDeployer

        return GitHubDeployer(**github)  # type: ignore[arg-type]
    return CommandDeployer(
        settings.git_repo, settings.deploy_command, settings.deploy_timeout, settings.secrets()
    )


def make_email(settings: Settings, service: ThreadService, store: RedisThreadStore, kick: Kick) -> Any:
    from bot.channels.email import EmailChannel, Smtp
    from bot.policy import parse_approvers

    def words(text: str) -> frozenset[str]:
        return frozenset(w.strip().lower() for w in text.split(",") if w.strip())

    return EmailChannel(
        service=service,
        store=store,
        kick=kick,
        smtp=Smtp(settings.smtp_host or "", settings.smtp_port, settings.smtp_username,
                  settings.smtp_password, settings.smtp_tls),
        sender=settings.email_from or "",
        inbound_secret=settings.inbound_email_secret or "",
        reply_secret=settings.email_reply_secret or "",
        allowed=words(settings.email_allowed_senders),
        approvers=parse_approvers(settings.approver_emails.lower()),
        max_bytes=settings.email_max_bytes,
    )


def build(settings: Settings, notifier: Notifier | None = None) -> App:
    # Enough connections for every run at once (one command each, plus the renewals of a
    # deploy): redis-py's default of 100 failed a burst of 200 runs with "Too many
    # connections". Past the limit (a burst of web requests) a command is retried like a
    # broken connection. Commands are resent on a broken connection (a Redis restart) for
    # about 3 s: appends, thread creation and inbound dedupe recognise their own first send;
    # a resent stream read only delays its entries until they are reclaimed; the deploy
    # history may get an entry twice.
    redis = Redis.from_url(
        redis_url(settings), max_connections=2 * settings.worker_concurrency + 100,
        retry=Retry(ExponentialWithJitterBackoff(base=0.05, cap=1.0), 6),
        retry_on_error=[RedisConnectionError, RedisTimeoutError],
    )
    store = RedisThreadStore(redis)
    policy = settings.policy()
    notifiers: list[Notifier] = [notifier or LogNotifier(settings.secrets())]
    slack_web = None
    if settings.slack():
        from bot.channels import slack

        slack_web = slack.client(settings.slack_bot_token or "", settings.slack_api_url)
        notifiers.append(slack.SlackNotifier(slack_web, store))
    fanout = Fanout(notifiers)
    environments = RedisEnvironments(redis)
    name = worker_name()
    runner = Runner(
        name=name,  # a lease names the worker process that holds it
        store=store,
        deployer=make_deployer(settings),
        llm=make_llm(settings),
        notifier=fanout,
        policy=policy,
        locks=environments,
        history=environments,
        secrets=settings.secrets(),
        transient=(RedisConnectionError, RedisTimeoutError),
    )
    service = ThreadService(store, policy, fanout)
    queue = RedisWorkQueue(redis)
    worker = Worker(runner, queue, store, settings.worker_concurrency, name)
    app = App(settings, redis, store, environments, runner, service, queue, worker)
    if settings.email():
        app.email = make_email(settings, service, store, app.kick)
        fanout.notifiers.append(app.email)  # the runner and the service share this fanout
    if slack_web is not None:
        app.slack = slack.build(
            settings.slack_signing_secret or "", slack_web,
            service, store, app.kick, settings.slack_app_token,
        )
    return app
