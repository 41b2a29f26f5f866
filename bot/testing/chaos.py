"""The chaos suite: many threads through full scenarios on `serve --no-worker` and two
`python -m bot worker` processes, while workers are SIGKILLed at random moments and the
Redis server is killed and restarted once (AOF on). With --sentinel the bot connects through
three Sentinels to a master with a replica instead, and the master is killed once: the
Sentinels promote the replica and the run carries on there (the killed server comes back as
a replica). Then it checks, and prints:

  events lost, duplicate events, deploys executed twice, deploys without a recorded
  authorized approval, threads neither done nor waiting for a human  (all must be 0)

    python -m bot.testing.chaos                      # the long version: 200+ kills
    python -m bot.testing.chaos --threads 16 --kills 10   # about what CI runs
    python -m bot.testing.chaos --sentinel                # a Sentinel failover instead of a restart
    python -m bot.testing.chaos --faults                  # the fault suite: every fault, 24 threads each
    python -m bot.testing.chaos --faults oom hung-model --threads 4   # some faults, small

The fault suite (bot/testing/faults) runs each fault on its own web and worker under a load of
approved deploys and prints one line per fault: threads, deploys, lost, duplicate threads,
overlapping deploys, unapproved, stuck, seconds, and the answer a person saw.
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from bot.testing import cluster, ha
from bot.testing.cluster import ledger_lines
from bot.testing.fake_llm import FakeLlm
from bot.testing.scenario import APPROVER, APPROVER_SLACK, approved, people_file, plan

SETTLED = {"done", "waiting_for_human"}
TOKEN = "chaos-token"


# --- the run -----------------------------------------------------------------------------


@dataclass
class Inbound:
    """What the API acknowledged: it must be in the thread exactly once."""

    thread_id: str
    kind: str  # "message" or "decision"
    text: str = ""
    approval_id: str = ""


@dataclass
class Run:
    api: httpx.Client
    quiet: threading.Lock  # held by requests that write, and by the Redis restart
    inbound: list[Inbound] = field(default_factory=list)
    threads: dict[str, str] = field(default_factory=dict)  # id -> scenario
    rejected: set[str] = field(default_factory=set)
    approver_token: str = ""  # the approver's personal API token: the shared one never decides

    def launch(self, number: int, environments: tuple[str, str]) -> str:
        scenario = ("staging", "production", "reject", "garbled")[number % 4]
        environment = environments[0] if scenario == "staging" else environments[1]
        service = "frontend" if number % 3 == 0 else "backend"
        text = f"#{number} please deploy {service} to {environment}" + (" (garbled)" if scenario == "garbled" else "")
        body = self._post("/threads", {"message": text, "user": "bob"})
        self.threads[body["id"]] = scenario
        self.inbound.append(Inbound(body["id"], "message", text=text))
        return body["id"]

    def answer(self, thread: dict[str, Any]) -> None:
        pending = thread["pending_approval"]
        approve = not (self.threads[thread["id"]] == "reject" and thread["id"] not in self.rejected)
        text = "" if approve else "not that one, use v1.2.2"
        self._post(f"/threads/{thread['id']}/responses", {
            "approval_id": pending["approval_id"], "approve": approve, "text": text,
        }, ok_conflict=True, token=self.approver_token)
        self.rejected.add(thread["id"])
        self.inbound.append(Inbound(thread["id"], "decision", text=text, approval_id=pending["approval_id"]))

    def get(self, path: str) -> dict[str, Any]:
        while True:  # reads are safe to repeat, through restarts of anything
            try:
                r = self.api.get(path)
                if r.status_code == 200:
                    return r.json()
            except httpx.TransportError:
                pass
            time.sleep(0.2)

    def _post(
        self, path: str, body: dict[str, Any], ok_conflict: bool = False, token: str | None = None
    ) -> dict[str, Any]:
        headers = {"Authorization": f"Bearer {token}"} if token else None
        for _ in range(20):  # 503: nothing was acknowledged, so a sender tries again
            with self.quiet:
                r = self.api.post(path, json=body, headers=headers)
            if r.status_code != 503:
                break
            time.sleep(0.5)
        if r.status_code == 409 and ok_conflict:
            return {}
        r.raise_for_status()
        return r.json()


IN_FLIGHT = 12  # threads running at once
POOL = 256  # environments, reused round-robin: a thread has its own while it is in flight
# (an interrupted deploy keeps its environment locked for a minute, as it should)


class _OneServer:
    """One Redis server with AOF on: killed once, and restarted on its AOF."""

    def __init__(self, workdir: Path) -> None:
        self.redis = cluster.RedisServer(workdir / "redis")
        self.where = {"REDIS_URL": self.redis.url}

    def outage(self, quiet: threading.Lock, log) -> float:
        with quiet:
            down = self.redis.restart(down_for=1.0)
        log(f"  redis killed and restarted on its AOF (down {down:.2f} s)")
        return down

    def stop(self) -> None:
        self.redis.kill()


class _SentinelPair:
    """A master and a replica watched by three Sentinels: the master is killed once."""

    def __init__(self, workdir: Path) -> None:
        self.servers = ha.SentinelServers(workdir / "redis")
        self.where = {"REDIS_SENTINELS": self.servers.addresses, "REDIS_SENTINEL_MASTER": ha.MASTER_NAME}

    def outage(self, quiet: threading.Lock, log) -> float:
        with quiet:
            began_failover = time.monotonic()
            old = self.servers.kill_master()
            new = self.servers.wait_for_failover(old.port)
            down = time.monotonic() - began_failover
        self.servers.heal()  # the old master comes back, as a replica of the new one
        log(f"  master killed; the Sentinels promoted the replica on port {new.port} in {down:.2f} s")
        return down

    def stop(self) -> None:
        self.servers.stop()


@dataclass
class _Chaos:
    """Kills a random worker every 0.2 to 1.2 s (and starts a new one), `kills` times, and
    causes the Redis outage once, somewhere in the middle third."""

    rng: random.Random
    kills: int
    workers: list[Any]  # replaced in place: whoever stops the run kills the ones running then
    env: dict[str, str]
    logs: Path
    storage: _OneServer | _SentinelPair
    run: Run
    log: Any
    killed: int = 0
    down: float = 0.0  # how long the Redis outage lasted (0: it did not happen)
    stop: threading.Event = field(default_factory=threading.Event)

    def __call__(self) -> None:
        restart_at = self.rng.randint(max(1, self.kills // 3), max(1, 2 * self.kills // 3))
        while not self.stop.is_set() and self.killed < self.kills:
            time.sleep(self.rng.uniform(0.2, 1.2))
            i = self.rng.randrange(len(self.workers))
            self.workers[i].kill()
            self.killed += 1
            if self.killed == restart_at:
                self.down = self.storage.outage(self.run.quiet, self.log)
            self.workers[i] = cluster.worker(self.env, self.logs / f"worker{i}.log")
            if self.killed % 25 == 0:
                self.log(f"  {self.killed} kills, {len(self.run.threads)} threads")


def _bot_env(
    workdir: Path, where: dict[str, str], llm: FakeLlm, ledger: Path, environments: tuple[list[str], list[str]],
) -> dict[str, str]:
    """The bot's settings: the staging pool open, the production pool protected by the approver."""
    staging, production = environments
    return cluster.clean_env(**{
        **where, "PORT": str(cluster.free_port()), "API_TOKEN": TOKEN,
        "DATA_DIR": str(workdir / "data"), "GIT_REPO": str(cluster.make_repo(workdir / "repo")),
        "DEPLOY_COMMAND": cluster.deploy_command(workdir, ledger), "FAKE_DEPLOY_SECONDS": "0.3",
        "LLM_BASE_URL": llm.base_url, "LLM_MODEL": "chaos", "LLM_API_KEY": "unused",
        "ENVIRONMENTS": ",".join(staging), "PROTECTED_ENVIRONMENTS": ",".join(production),
        "APPROVERS": APPROVER_SLACK, "WORKER_CONCURRENCY": "8", "LOG_LEVEL": "INFO",
        # Its workers are killed, never cut off: the shortest lease has a killed worker's deploy
        # reported in seconds, not a minute (DEPLOY_LEASE; the partitions are
        # tests/end_to_end/test_partitioned_worker.py's).
        "DEPLOY_LEASE": "3",
        "DEPLOYBOT_CONFIG": str(people_file(workdir)),
    })


def _drive(run: Run, threads: int, killer: threading.Thread, environments: tuple[list[str], list[str]],
           deadline: float) -> None:
    """Launch threads, IN_FLIGHT at a time, until there are `threads` and the killing is
    over; approve (or reject) what waits for approval, until every thread settled or
    `deadline` (monotonic) passed after the killing ended."""
    staging, production = environments
    open_: set[str] = set()
    while len(run.threads) < threads or killer.is_alive() or open_:
        if len(open_) < IN_FLIGHT and (len(run.threads) < threads or killer.is_alive()):
            n = len(run.threads)
            open_.add(run.launch(n, (staging[n % POOL], production[n % POOL])))
        for thread_id in list(open_):
            thread = run.get(f"/threads/{thread_id}")
            if thread["status"] == "waiting_for_approval":
                run.answer(thread)
            elif thread["status"] in SETTLED:
                open_.discard(thread_id)
        if not killer.is_alive() and time.monotonic() > deadline:
            break  # whatever is still open is reported as stuck
        time.sleep(0.05)


def run(threads: int, kills: int, workdir: Path, seed: int = 1, log=print, sentinel: bool = False) -> dict[str, int]:
    """At least `threads` threads and exactly `kills` worker kills: threads keep coming
    until both are reached, so every kill lands while work is in flight. `sentinel`: the
    master of a Sentinel-watched pair is killed once, instead of a restart of one server."""
    rng = random.Random(seed)
    storage = _SentinelPair(workdir) if sentinel else _OneServer(workdir)
    llm = FakeLlm(delay=0.05, default=plan).start()
    ledger = workdir / "deploys.log"
    environments = [f"s{i}" for i in range(POOL)], [f"p{i}" for i in range(POOL)]
    env = _bot_env(workdir, storage.where, llm, ledger, environments)
    logs = workdir / "logs"
    logs.mkdir(exist_ok=True)
    web = cluster.web(env, logs / "web.log", "--no-worker")
    workers = [cluster.worker(env, logs / f"worker{i}.log") for i in range(2)]
    run = Run(httpx.Client(base_url=f"http://127.0.0.1:{env['PORT']}", timeout=10,
                           headers={"Authorization": f"Bearer {TOKEN}"}), threading.Lock(),
              approver_token=cluster.bot_command(env, "tokens", "create", APPROVER).strip())
    chaos = _Chaos(rng, kills, workers, env, logs, storage, run, log)
    killer = threading.Thread(target=chaos, daemon=True)
    began = time.monotonic()
    killer.start()
    try:
        _drive(run, threads, killer, environments, deadline=began + 600 + 2 * kills)
        time.sleep(1)  # anything still in flight lands
        report = check(run, ledger, set(environments[1]))
    finally:
        chaos.stop.set()
        for w in workers:
            w.kill()
        web.kill()
        storage.stop()
        llm.stop()
    report.update(threads=len(run.threads), kills=chaos.killed,
                  redis_restarts=1 if chaos.down and not sentinel else 0, failovers=1 if chaos.down and sentinel else 0,
                  deploys=len(ledger_lines(ledger)), seconds=round(time.monotonic() - began))
    return report


FIGURES = (
    "events lost", "duplicate events", "deploys executed twice",
    "deploys without an authorized approval", "threads neither done nor waiting for a human",
)


def check(run: Run, ledger: Path, protected: set[str]) -> dict[str, int]:
    threads = {t: run.get(f"/threads/{t}") for t in run.threads}
    lost = duplicates = 0
    for item in run.inbound:
        events = threads[item.thread_id]["events"]
        if item.kind == "message":
            found = [e for e in events if e["type"] == "user_message" and e["text"] == item.text]
        else:
            found = [e for e in events if e["type"] == "human_response" and e.get("approval_id") == item.approval_id]
        lost += not found
        duplicates += max(0, len(found) - 1)
    for thread in threads.values():
        ids = Counter(e["id"] for e in thread["events"])
        duplicates += sum(n - 1 for n in ids.values())
    deploys = [line.split() for line in ledger_lines(ledger)]
    twice = sum(n - 1 for n in Counter(d[0] for d in deploys).values())
    unapproved = sum(1 for d in deploys if d[3] in protected and not approved(threads, *d))
    stuck = [t for t, body in threads.items() if body["status"] not in SETTLED]
    for t in stuck:
        print(f"  stuck: {t} {threads[t]['status']} {[e['type'] for e in threads[t]['events']]}", file=sys.stderr)
    seen = Counter(e["type"] if e["type"] != "error" else f"error:{e['kind']}"
                   for body in threads.values() for e in body["events"])
    print("  what happened: " + ", ".join(
        f"{seen[k]} {k}" for k in ("approval_requested", "deploy_result", "error:llm", "error:interrupted",
                                    "error:locked", "error:internal")
    ) + f"; {sum(1 for b in threads.values() for e in b['events'] if e.get('approve') is False)} rejections")
    statuses = Counter(b["status"] for b in threads.values())
    print("  final statuses: " + ", ".join(f"{n} {s}" for s, n in statuses.items()))
    return dict(zip(FIGURES, (lost, duplicates, twice, unapproved, len(stuck)), strict=True))


CHAOS_THREADS, FAULT_THREADS = 240, 24


def _faults(names: list[str], threads: int, workdir: Path) -> int:
    from bot.testing import faults  # only here: the chaos run needs none of it

    unknown = [n for n in names if n not in faults.BY_NAME]
    if unknown:
        print(f"no such fault: {', '.join(unknown)} (there are: {', '.join(faults.BY_NAME)})", file=sys.stderr)
        return 2
    chosen = [faults.BY_NAME[n] for n in names] or faults.FAULTS
    print(f"faults: {len(chosen)} faults, {threads} threads each (logs in {workdir})")
    results = faults.run(chosen, threads, workdir)
    return 0 if all(r.ok for r in results) else 1


def main() -> int:
    p = argparse.ArgumentParser(prog="python -m bot.testing.chaos", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--threads", type=int, help=f"default {CHAOS_THREADS}, or {FAULT_THREADS} per fault with --faults")
    p.add_argument("--kills", type=int, default=200)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--workdir", type=Path, help="keep logs and data here (default: a temporary directory)")
    p.add_argument("--sentinel", action="store_true",
                   help="a master, a replica and three Sentinels; the master is killed once (a failover)")
    p.add_argument("--faults", nargs="*", metavar="NAME",
                   help="the fault suite instead: the faults named (default: all of them)")
    args = p.parse_args()
    with tempfile.TemporaryDirectory(prefix="deploybot-chaos-") as tmp:
        workdir = args.workdir or Path(tmp)
        if args.faults is not None:
            return _faults(args.faults, args.threads or FAULT_THREADS, workdir)
        args.threads = args.threads or CHAOS_THREADS
        redis_event = "one Sentinel failover" if args.sentinel else "one Redis restart"
        print(f"chaos: {args.threads} threads, {args.kills} worker kills, {redis_event} (logs in {workdir})")
        report = run(args.threads, args.kills, workdir, args.seed, sentinel=args.sentinel)
        for key, value in report.items():
            print(f"{key:>46}: {value}")
        return 0 if all(report[k] == 0 for k in FIGURES) else 1


if __name__ == "__main__":
    sys.exit(main())
