"""Composition root: builds every part from Settings. Nothing else wires adapters."""

from __future__ import annotations

from dataclasses import dataclass

from redis.asyncio import Redis

from bot import embedded_redis
from bot.channels.log import LogNotifier
from bot.deployers.command import CommandDeployer
from bot.loop import Runner
from bot.ports import NextStepModel, Notifier
from bot.service import ThreadService
from bot.settings import Settings
from bot.stores.redis import RedisThreadStore
from bot.worker import InProcessWorker


@dataclass
class App:
    settings: Settings
    redis: Redis
    store: RedisThreadStore
    runner: Runner
    service: ThreadService
    worker: InProcessWorker

    async def close(self) -> None:
        await self.redis.aclose()


def redis_url(settings: Settings) -> str:
    return settings.redis_url or embedded_redis.ensure_running(settings.data_dir)


def make_llm(settings: Settings) -> NextStepModel | None:
    config = settings.llm()
    if config is None:
        return None
    from bot.llm import BamlModel  # loads the BAML runtime only when an LLM is configured

    return BamlModel(*config)


def build(settings: Settings, notifier: Notifier | None = None) -> App:
    redis = Redis.from_url(redis_url(settings))
    store = RedisThreadStore(redis)
    policy = settings.policy()
    runner = Runner(
        store=store,
        deployer=CommandDeployer(settings.git_repo, settings.deploy_command, settings.deploy_timeout),
        llm=make_llm(settings),
        notifier=notifier or LogNotifier(settings.secrets()),
        policy=policy,
        secrets=settings.secrets(),
    )
    service = ThreadService(store, policy)
    return App(settings, redis, store, runner, service, InProcessWorker(runner))
