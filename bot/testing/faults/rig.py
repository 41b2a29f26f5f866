"""What every fault runs on: a Redis server (or the embedded one), the model stand-in, a web
and workers as real processes (bot.testing.cluster), a load of threads asking for approved
deploys to protected environments, and the checks every fault must pass."""

from __future__ import annotations

import time
from collections import Counter
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from bot.adapters.redis import embedded
from bot.testing import cluster, scenario
from bot.testing.fake_llm import FakeLlm
from bot.testing.fault_proxy import FaultProxy
from bot.testing.faults import ledger

END = {"done", "failed", "cancelled", "waiting_for_human"}  # a thread nobody has to act on
TOKEN = "faults-token"


class Rig:
    """Started by a fault, stopped by the suite: whatever the fault started is in `procs`."""

    def __init__(self, workdir: Path, embedded_redis: bool = False, **settings: str) -> None:
        workdir.mkdir(parents=True, exist_ok=True)
        self.workdir, self.logs = workdir, workdir / "logs"
        self.logs.mkdir(exist_ok=True)
        self.redis = None if embedded_redis else cluster.RedisServer(workdir / "redis")
        self.llm = FakeLlm(delay=0.05, default=scenario.plan).start()
        self.ledger = workdir / "deploys.log"
        self.procs: list[cluster.BotProcess] = []
        where = {"REDIS_URL": self.redis.url} if self.redis else {}
        self.env = cluster.clean_env(**{
            **where, "PORT": str(cluster.free_port()), "API_TOKEN": TOKEN,
            "DATA_DIR": str(workdir / "data"), "GIT_REPO": str(cluster.make_repo(workdir / "repo")),
            "DEPLOY_COMMAND": ledger.command(workdir, self.ledger), "FAKE_DEPLOY_SECONDS": "0.3",
            "LLM_BASE_URL": self.llm.base_url, "LLM_MODEL": "faults", "LLM_API_KEY": "unused",
            "ENVIRONMENTS": "staging", "PROTECTED_ENVIRONMENTS": ",".join(f"p{i}" for i in range(POOL)),
            "APPROVERS": scenario.APPROVER_SLACK, "WORKER_CONCURRENCY": "8", "LOG_LEVEL": "INFO",
            "DEPLOYBOT_CONFIG": str(scenario.people_file(workdir)), **settings,
        })
        self.api = httpx.Client(base_url=f"http://127.0.0.1:{self.env['PORT']}", timeout=10,
                                headers={"Authorization": f"Bearer {TOKEN}"})
        self._approver: Future[str] | None = None
        self._pool = ThreadPoolExecutor(1)
        self.proxies: list[FaultProxy] = []  # between processes and Redis, stopped last

    def proxy(self) -> tuple[FaultProxy, str]:
        """A fault proxy in front of this rig's Redis, and the REDIS_URL that goes through it."""
        assert self.redis is not None, "a proxy stands in front of a Redis server of the rig's own"
        proxy = FaultProxy("127.0.0.1", self.redis.port).start_in_thread()
        self.proxies.append(proxy)
        return proxy, f"redis://127.0.0.1:{proxy.port}/0"

    def web(self, *args: str) -> cluster.BotProcess:
        process = cluster.web(self.env, self.logs / "web.log", *args)
        self.procs.append(process)
        if self._approver is None:  # made beside the rest of the start (a process start is seconds here)
            self._approver = self._pool.submit(
                lambda: cluster.bot_command(self.env, "tokens", "create", scenario.APPROVER).strip())
        return process

    def web_and_worker(self, *args: str, name: str = "worker") -> tuple[cluster.BotProcess, cluster.BotProcess]:
        """Both started at once, ready when both are."""
        worker = cluster.BotProcess(["worker"], self.env, self.logs / f"{name}.log")
        self.procs.append(worker)
        web = self.web(*args)
        worker.wait_for_log("taking work")
        return web, worker

    def worker(self, name: str = "worker", prefix: tuple[str, ...] = (), **env: str) -> cluster.BotProcess:
        log = self.logs / f"{name}.log"
        ready = None if prefix else "taking work"  # a skewed worker says its skew first
        process = cluster.BotProcess(["worker"], {**self.env, **env}, log, ready=ready, prefix=prefix)
        self.procs.append(process)
        return process

    def approver_token(self) -> str:
        """The approver's own API token (the shared one never decides), made once a web runs."""
        assert self._approver is not None, "no web started"
        return self._approver.result()

    def stop(self) -> None:
        self._pool.shutdown()
        for p in self.procs:
            p.kill()
        self.api.close()
        self.llm.stop()
        for proxy in self.proxies:
            proxy.stop_in_thread()
        if self.redis:
            self.redis.kill()
        else:
            embedded.stop(Path(self.env["DATA_DIR"]))


POOL = 64  # protected environments p0..p63: a thread has its own, so any overlap is a bug


@dataclass
class Launch:
    number: int
    text: str
    key: str
    thread_id: str = ""
    retried_id: str = ""  # what the same launch, sent again with its Idempotency-Key, answered


@dataclass
class Load:
    """Threads asking for a deploy to a protected environment, each approved by the approver."""

    rig: Rig
    launches: list[Launch] = field(default_factory=list)
    refusals: Counter[str] = field(default_factory=Counter)  # "503 Retry-After: 5": launches refused so
    decided: set[str] = field(default_factory=set)

    def launch(self, count: int) -> list[Launch]:
        self.rig.approver_token()  # made before any fault is injected: the approver has one already
        made = []
        for _ in range(count):
            n = len(self.launches)
            one = Launch(n, f"#{n} please deploy backend to p{n % POOL}", f"fault-{n}")
            self.launches.append(one)
            one.thread_id = self.post_launch(one)
            one.retried_id = self.post_launch(one)  # as if its first answer had been lost
            made.append(one)
        return made

    def post_launch(self, one: Launch, tries: int = 120) -> str:
        """Sent again on a 503 or a broken connection, as a client would: the key makes it one thread."""
        for _ in range(tries):
            try:
                r = self.rig.api.post("/threads", json={"message": one.text, "user": "bob"},
                                      headers={"Idempotency-Key": one.key})
            except httpx.TransportError:
                time.sleep(0.5)
                continue
            if r.status_code in (200, 201):
                return r.json()["id"]
            if r.status_code != 503:
                r.raise_for_status()
            self.refusals[f"503 Retry-After: {r.headers.get('retry-after')}"] += 1
            time.sleep(0.5)
        raise RuntimeError(f"launch {one.number} refused {tries} times")

    def drive(self, within: float, until: set[str] = END, approve: bool = True) -> None:
        """Approve what waits for approval (unless not `approve`) until every thread is in
        `until`, or `within` s passed."""
        deadline = time.monotonic() + within
        while time.monotonic() < deadline:
            states = [self.rig_get(one.thread_id) for one in self.launches]
            for thread in states:
                if approve and thread and thread["status"] == "waiting_for_approval":
                    self.approve(thread)
            if all(t and t["status"] in until for t in states):
                return
            time.sleep(0.1)

    def approve(self, thread: dict[str, Any]) -> None:
        if thread["id"] in self.decided:
            return
        r = self.rig.api.post(f"/threads/{thread['id']}/responses", json={
            "approval_id": thread["pending_approval"]["approval_id"], "approve": True, "text": "",
        }, headers={"Authorization": f"Bearer {self.rig.approver_token()}"})
        if r.status_code in (202, 409):  # 409: decided already
            self.decided.add(thread["id"])

    def rig_get(self, thread_id: str) -> dict[str, Any] | None:
        try:
            r = self.rig.api.get(f"/threads/{thread_id}")
        except httpx.TransportError:
            return None
        return r.json() if r.status_code == 200 else None


FIGURES = ("lost", "duplicates", "overlapping", "unapproved", "stuck")


def check(load: Load) -> dict[str, int]:
    """The invariants: every acknowledged launch is there once and ended, no two deploys of
    one target at once, none to a protected environment without the approver's approval."""
    threads: dict[str, dict[str, Any]] = {}
    lost = duplicates = stuck = 0
    for one in load.launches:
        thread = _read(load, one.thread_id)
        said = [e for e in (thread or {}).get("events", []) if e["type"] == "user_message" and e["text"] == one.text]
        lost += not said
        duplicates += max(0, len(said) - 1) + (one.retried_id != one.thread_id)
        if thread:
            threads[one.thread_id] = thread
            duplicates += sum(n - 1 for n in Counter(e["id"] for e in thread["events"]).values())
            stuck += thread["status"] not in END
    deploys, _ = ledger.read(load.rig.ledger)
    unapproved = sum(1 for d in deploys if not scenario.approved(threads, d.deploy_id, d.service, d.tag, d.environment))
    figures = dict(zip(FIGURES, (lost, duplicates, ledger.overlapping(deploys), unapproved, stuck), strict=True))
    return {**figures, "deploys": len(deploys)}


def _read(load: Load, thread_id: str) -> dict[str, Any] | None:
    deadline = time.monotonic() + 30  # reads are safe to repeat, through restarts of anything
    while (thread := load.rig_get(thread_id)) is None and time.monotonic() < deadline:
        time.sleep(0.2)
    return thread
