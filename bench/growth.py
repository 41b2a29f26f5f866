"""Growth: does what the bot does all day cost the same with 100,000 finished threads stored as
with 1,000? (issue: retention and costs that follow active work)

For each size, the database is flushed and filled, pipelined, with that many finished
threads (half trivial API threads, half Slack production deploys with an email approver, each
with its conversation and reference keys: what the channels store), built from the event
classes and written with the thread store's own scripts; plus a handful of active ones (five
waiting for approval, two waiting for a human, three left running) and 200 deploys in each
environment's history. Then, in-process against real Redis:

- sweep: the worker's periodic look for threads left mid-run (Worker.recover), warm;
- startup recovery: the same from a freshly built app (new client, cold connections);
- GET /threads?status=waiting_for_approval, through the served ASGI app (httpx, no network);
- the console's board (/console/), warm (its threads cached, as an open tab sees it);
- Redis memory per finished thread (used_memory over the threads written), and, at 1,000,
  after compacting every one of them (THREAD_COMPACT_AFTER), with MEMORY USAGE of one
  thread's keys of each kind.

Each time is a median of many rounds, with a PING round trip sampled alternately in the same
rounds; the 100k / 1k ratio is printed raw and over PING (the machine's noise moves both).
Goal: every ratio within 1.2.

    python bench/growth.py               # starts its own Redis (valkey) in a temp dir
    REDIS_URL=redis://... python bench/growth.py   # FLUSHES that database
    python bench/growth.py --quick       # 100 and 1,000 threads: seconds, to see that it still runs
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from datetime import timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import httpx  # noqa: E402

from bot.adapters.redis import embedded as embedded_redis  # noqa: E402
from bot.adapters.redis import keys as names  # noqa: E402
from bot.adapters.redis import scripts, thread_scripts  # noqa: E402
from bot.config.settings import Settings  # noqa: E402
from bot.core import events as ev  # noqa: E402
from bot.core.events import (  # noqa: E402
    ApprovalReminded,
    ApprovalRequested,
    Change,
    CommitSummary,
    DeployResult,
    DeployService,
    DeployStarted,
    DoneForNow,
    Event,
    GitTag,
    GitTagsResult,
    HumanResponse,
    ListGitTags,
    UserMessage,
    new_id,
)
from bot.core.policy import args_hash  # noqa: E402
from bot.core.thread import Origin, Thread  # noqa: E402
from bot.runtime.clock import utcnow  # noqa: E402
from bot.runtime.ports import DeployRecord  # noqa: E402
from bot.runtime.worker import Worker  # noqa: E402
from bot.wiring.app import App, build, http_app  # noqa: E402

SIZES = tuple(int(n) for n in os.environ.get("GROWTH_SIZES", "1000,100000").split(","))
TEMPLATES = 500  # distinct threads of each kind; the rest reuse their events under new ids
PIPELINE = 500
TAGS = [GitTag(name=f"v1.{i}.0", commit=f"{i:040x}", date="2026-11-20T10:00:00Z") for i in range(10)]


def trivial(i: int, at) -> tuple[Origin, list[Event]]:
    """A question over the API, answered."""
    events = [UserMessage(text=f"what is on staging? #{i}", user=f"user{i % 40}", person=f"user{i % 40}",
                          via="token", evidence=f"tok{i % 40}"),
              DoneForNow(message=f"staging runs backend v1.{i % 10}.0, deployed 2 h ago by user{i % 40}.")]
    return Origin(channel="api"), [e.model_copy(update={"at": at + timedelta(seconds=k)}) for k, e in enumerate(events)]


def slack_deploy(thread_id: str, i: int, at) -> tuple[Origin, list[Event]]:
    """A production deploy asked in Slack, approved by email, deployed and summed up."""
    who = f"U0{i % 90:08d}"
    step = DeployService(service="backend", tag="v1.9.0", environment="production",
                         reason="the newest tag; staging has run it for a day")
    change = Change(from_tag="v1.8.0", from_commit=TAGS[8].commit, to_commit=TAGS[9].commit, ahead=3,
                    commits=[CommitSummary(sha=f"{k:040x}", subject=f"fix the thing #{k}", author="dev")
                             for k in range(3)])
    request = ApprovalRequested(
        step_id=step.id, thread_id=thread_id, args_hash=args_hash("backend", "v1.9.0", "production"),
        service="backend", tag="v1.9.0", commit=TAGS[9].commit, environment="production",
        requested_by=f"person{i % 90}", requesters=[f"person{i % 90}"], expires_at=at + timedelta(hours=1),
        change=change,
    )
    deploy_id = f"{thread_id}-{step.id}"
    events = [
        UserMessage(text=f"deploy the latest backend to production please, ticket OPS-{i}", user=who,
                    channel="slack", person=f"person{i % 90}", via="slack", evidence=who),
        ListGitTags(service="backend"), GitTagsResult(step_id="x", tags=TAGS, service="backend"), step, request,
        ApprovalReminded(approval_id=request.approval_id, count=1),
        HumanResponse(text="approved", user="carol@example.com", channel="email", approval_id=request.approval_id,
                      approve=True, person="carol", via="email",
                      evidence=f"carol@example.com <reply-{i}@mail.example.com>"),
        DeployStarted(step_id=step.id, deploy_id=deploy_id, commit=TAGS[9].commit),
        DeployResult(step_id=step.id, deploy_id=deploy_id, service="backend", tag="v1.9.0", environment="production",
                     commit=TAGS[9].commit, ok=True, exit_code=0, approved_by="carol",
                     output="".join(f"step {k}: ok\n" for k in range(12))),
        DoneForNow(message="Deployed backend v1.9.0 to production."),
    ]
    origin = Origin(channel="slack", slack_channel="C0PROD", slack_thread_ts=f"1764000000.{i:06d}")
    return origin, [e.model_copy(update={"at": at + timedelta(seconds=k)}) for k, e in enumerate(events)]


class Seeder:
    """Writes threads with the store's own scripts (create, index), a pipeline at a time, and
    the channels' Inbox keys beside them."""

    def __init__(self, app: App) -> None:
        self.app, self.keys = app, app.store.keys
        start = utcnow() - timedelta(days=2)
        self.templates: list[tuple[str, Origin, Thread, list[str]]] = []
        for i in range(TEMPLATES):
            for kind in ("api", "slack"):
                tid = new_id()
                origin, events = trivial(i, start) if kind == "api" else slack_deploy(tid, i, start)
                thread = Thread(tid, tuple(events), origin)
                assert thread.status() == "done"
                self.templates.append((kind, origin, thread, [ev.dump(e) for e in events]))

    async def load_scripts(self) -> None:
        for source in (thread_scripts.CREATE, thread_scripts.INDEX):
            await self.app.redis.script_load(source)

    async def finished(self, n: int) -> None:
        keys = self.keys
        index_keys = self.app.store._index_keys()
        for first in range(0, n, PIPELINE):
            now = time.time()
            async with self.app.redis.pipeline(transaction=False) as pipe:
                for i in range(first, min(n, first + PIPELINE)):
                    kind, origin, template, dumped = self.templates[i % len(self.templates)]
                    tid = new_id()
                    pipe.evalsha(scripts.sha(thread_scripts.CREATE), 3, keys.meta(tid), keys.events(tid),
                                 keys.packed(tid), now, origin.dump(), *dumped)
                    pipe.zadd(keys.recent(), {tid: now}, nx=True)
                    pipe.evalsha(scripts.sha(thread_scripts.INDEX), len(index_keys), *index_keys,
                                 *thread_scripts.index_args(tid, template.version, "done", now))
                    if kind == "slack":
                        assert origin.slack_channel and origin.slack_thread_ts
                        scope = names.slack_conversation(origin.slack_channel, origin.slack_thread_ts + tid[:4])
                        request = next(e for e in template.events if isinstance(e, ApprovalRequested))
                        bound = {
                            keys.conversation(scope): tid,
                            keys.ref(names.slack_approval_message(request.approval_id + tid)): "1764000001.000100",
                            keys.ref(names.email_approval(request.approval_id + tid)): tid,
                            keys.ref(names.email_message(f"<approval-{tid}@deploybot>")): tid,
                        }
                        for key, value in bound.items():
                            pipe.set(key, value)
                        pipe.hset(keys.names(tid), mapping=bound)
                await pipe.execute()

    async def active(self) -> None:
        store, start = self.app.store, utcnow()
        for i in range(5):
            tid = new_id()
            origin, events = slack_deploy(tid, i, start)
            await store.create(origin, events[:5], tid)  # waiting for approval
        for i in range(2):
            await store.create(Origin(), [UserMessage(text=f"deploy something #{i}", user="bob"),
                                          ev.RequestMoreInformation(message="which service?")])
        for i in range(3):
            await store.create(Origin(), [UserMessage(text=f"list tags #{i}", user="bob")])  # left running
        for env in sorted(self.app.policy.environments):
            for n in range(200):
                await self.app.environments.record(DeployRecord(
                    environment=env, service=("backend", "frontend")[n % 2], tag=f"v1.{n % 10}.0",
                    commit=TAGS[n % 10].commit, ok=n % 7 != 0, at=start - timedelta(minutes=n), approved_by="alice",
                    thread_id="gone", deploy_id=f"gone-{env}-{n}",
                ))


async def used_memory(app: App) -> int:
    return int((await app.redis.info("memory"))["used_memory"])


async def timed(what: Callable[[], Awaitable[object]], ping: Callable[[], Awaitable[object]], rounds: int,
                before: Callable[[], Awaitable[object]] | None = None) -> tuple[float, float]:
    """(median seconds of `what`, median seconds of a PING), sampled alternately; `before`
    runs ahead of each round, untimed."""
    samples, pings = [], []
    for _ in range(rounds):
        if before is not None:
            await before()
        began = time.perf_counter()
        await ping()
        pings.append(time.perf_counter() - began)
        began = time.perf_counter()
        await what()
        samples.append(time.perf_counter() - began)
    return statistics.median(samples), statistics.median(pings)


async def thread_bytes(app: App, thread_id: str) -> int:
    total = 0
    for key in [*app.store.keys.thread_keys(thread_id)]:
        total += int(await app.redis.memory_usage(key) or 0)
    return total


async def measure(
    settings: Settings, size: int, seeder_cache: dict, first: bool = True,
) -> dict[str, tuple[float, float] | float]:
    app = build(settings)
    await app.redis.flushdb()
    seeder = seeder_cache.setdefault("seeder", Seeder(app))
    seeder.app, seeder.keys = app, app.store.keys
    await seeder.load_scripts()
    await app.redis.xgroup_create(app.queue.stream, "workers", id="0", mkstream=True)
    await seeder.active()
    before = await used_memory(app)
    began = time.perf_counter()
    await seeder.finished(size)
    seeded = time.perf_counter() - began
    after = await used_memory(app)
    out: dict[str, tuple[float, float] | float] = {"seed_s": seeded, "bytes_per_thread": (after - before) / size}
    print(f"  {size:,} finished threads written in {seeded:.1f} s; used_memory +{(after - before) / 1e6:.1f} MB")

    ping = app.redis.ping
    worker = Worker(app.runner, app.queue, app.store, 1, "bench")

    async def sweep() -> None:
        stuck = await worker.recover()
        assert len(stuck) == 3, stuck

    fresh: list[App] = []

    async def new_process() -> None:  # a process starting: its app built, no connection made yet
        while fresh:
            await fresh.pop().redis.aclose()
        fresh.append(build(settings))

    async def startup() -> None:
        stuck = await Worker(fresh[0].runner, fresh[0].queue, fresh[0].store, 1, "bench-start").recover()
        assert len(stuck) == 3, stuck

    transport = httpx.ASGITransport(app=http_app(app, worker=False))
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
        async def waiting() -> None:
            r = await client.get("/threads", params={"status": "waiting_for_approval"})
            assert r.status_code == 200 and len(r.json()["threads"]) == 5, r.text[:300]

        async def board() -> None:
            r = await client.get("/console/")
            assert r.status_code == 200, r.text[:300]

        await board()  # the first render reads what it shows; an open tab has it cached
        out["sweep"] = await timed(sweep, ping, 60)
        out["startup recovery"] = await timed(startup, ping, 20, before=new_process)
        await new_process()
        await fresh.pop().redis.aclose()
        out["GET /threads?status=waiting_for_approval"] = await timed(waiting, ping, 100)
        out["console board"] = await timed(board, ping, 40)

        async def old_sweep() -> None:  # for reference: what the sweep read before the index
            for thread_id in await app.store.recent(500):
                (await app.store.load(thread_id)).status()

        out["(before: the 500 most recent loaded)"] = await timed(old_sweep, ping, 5)
    if first:  # compaction, measured once: its figures do not depend on the size
        out.update(await compaction(app, size, after - before))
    await app.redis.flushdb()
    await app.close()
    return out


async def compaction(app: App, size: int, grown: int) -> dict[str, float]:
    """Memory per finished thread before and after compaction (`grown`: what seeding `size`
    threads added), and how long compacting them took."""
    out: dict[str, float] = {}
    kinds = {}
    cursor = None
    ids: list[str] = []
    while True:
        page, cursor = await app.store.listed(["done"], 1000, cursor)
        ids += page
        if cursor is None:
            break
    for tid in ids[:50]:
        kind = "slack" if (await app.store.load(tid)).origin.channel == "slack" else "api"
        kinds.setdefault(kind, tid)
    per_key = {k: await thread_bytes(app, t) for k, t in kinds.items()}
    before_compact = await used_memory(app)
    began = time.perf_counter()
    for first in range(0, len(ids), 50):
        await asyncio.gather(*(app.store.compact(t) for t in ids[first:first + 50]))
    compact_s = time.perf_counter() - began
    after_compact = await used_memory(app)
    out["compact_s"] = compact_s
    out["bytes_per_thread_compacted"] = (grown - (before_compact - after_compact)) / size
    for kind, tid in kinds.items():
        out[f"{kind}_keys"] = per_key[kind]
        out[f"{kind}_keys_compacted"] = await thread_bytes(app, tid)
        assert (await app.store.load(tid)).status() == "done"
    print(f"  compacted {len(ids):,} threads in {compact_s:.1f} s")
    return out


async def main(sizes: tuple[int, ...] = SIZES, verdict: bool = True) -> None:
    tmp = Path(tempfile.mkdtemp(prefix="growth-bench-"))
    url = os.environ.get("REDIS_URL") or embedded_redis.ensure_running(tmp / "redis")
    try:
        settings = Settings(_env_file=None, redis_url=url, data_dir=tmp / "data", git_repo=tmp)
        results = {}
        cache: dict = {}
        for size in sizes:
            print(f"{size:,} finished threads:")
            results[size] = await measure(settings, size, cache, first=size == sizes[0])
        small, big = results[sizes[0]], results[sizes[1]]
        print()
        print(f"{'operation':<42} {sizes[0]:>16,} {sizes[1]:>16,} {'ratio':>7} {'/PING':>7}")
        worst = 0.0
        for name in ("sweep", "startup recovery", "GET /threads?status=waiting_for_approval", "console board"):
            (a, pa), (b, pb) = small[name], big[name]  # type: ignore[misc]
            ratio, normalized = b / a, (b / pb) / (a / pa)
            worst = max(worst, min(ratio, normalized))
            print(f"{name:<42} {a * 1000:>8.2f} ms ({a / pa:>4.1f}×) {b * 1000:>8.2f} ms ({b / pb:>4.1f}×) "
                  f"{ratio:>6.2f}× {normalized:>6.2f}×")
        (a, pa), (b, pb) = small["(before: the 500 most recent loaded)"], big["(before: the 500 most recent loaded)"]  # type: ignore[misc]
        print(f"{'(before: sweep read the 500 most recent)':<42} {a * 1000:>8.1f} ms ({a / pa:>4.0f}×) "
              f"{b * 1000:>8.1f} ms ({b / pb:>4.0f}×)")
        print("(in brackets: the time over a PING round trip sampled in the same rounds)")
        print()
        print("Redis memory per finished thread (all its keys, index entries, conversation and reference keys):")
        print(f"  {sizes[0]:,} stored: {small['bytes_per_thread']:,.0f} B; "
              f"{sizes[1]:,} stored: {big['bytes_per_thread']:,.0f} B")
        print(f"  after compaction ({sizes[0]:,}): {small['bytes_per_thread_compacted']:,.0f} B")
        for kind, label in (("api", "a trivial API thread"), ("slack", "a Slack production deploy, email approver")):
            print(f"  {label}: its own keys {small[f'{kind}_keys']:,.0f} B -> {small[f'{kind}_keys_compacted']:,.0f} B "
                  f"compacted (MEMORY USAGE)")
        if verdict:  # not for a quick run: its sizes are too small for the goal to mean anything
            print(f"goal: each time at {sizes[1]:,} within 1.2× of the time at {sizes[0]:,}: "
                  f"{'met' if worst <= 1.2 else 'NOT met'} (worst {worst:.2f}×)")
    finally:
        if not os.environ.get("REDIS_URL"):
            embedded_redis.stop(tmp / "redis")


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="100 and 1,000 threads instead of GROWTH_SIZES, no goal")
    # Before the app is built: the MCP SDK's server sets the root logger to INFO when nothing
    # has configured it, and httpx then logs a line per request.
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    asyncio.run(main((100, 1000), verdict=False) if p.parse_args().quick else main(SIZES))
