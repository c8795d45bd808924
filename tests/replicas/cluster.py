"""A small KRaft cluster of the real Apache Kafka 4.1.0 (../shared/kafka) for replication tests.

One controller-only node (node 0) and ``brokers`` broker-only nodes (1..N) on 127.0.0.1, each on
its own ports with its own config and ``server.log``; the brokers' roots (``log.dirs``) sit side
by side under ``workdir/roots`` (``broker-1``, ``broker-2``, ...), the layout ``kseg replicas``
reads. Any broker stops (SIGTERM: a controlled shutdown, then wait) and starts again; every wait
polls a condition with a deadline. ``close()`` (or the context manager) kills whatever still runs,
also after a failure.

The cluster's state is read with kafka-python's admin client (DescribeTopicPartitions: leader,
leader epoch, ISR, ELR), not the bin/ tools: a JVM per question would cost seconds each.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

from tests.broker import (
    START_TIMEOUT,
    STARTED,
    claim_class_dump,
    finish_class_dump,
    free_port,
    kafka_env,
    kafka_uuid,
    run_tool,
    terminate,
)

WAIT = 90.0  # seconds: the most a cluster-side condition is waited for


class PartitionState(NamedTuple):
    """One partition as the cluster's metadata describes it."""

    leader: int  # -1: none
    epoch: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    elr: tuple[int, ...]  # eligible leader replicas (KIP-966)
    last_known_elr: tuple[int, ...]


class Node:
    """One Kafka process: the controller (node 0) or a broker (node 1..N)."""

    def __init__(self, cluster: Cluster, node_id: int):
        self.cluster = cluster
        self.node_id = node_id
        self.controller = node_id == 0
        self.name = "controller" if self.controller else f"broker-{node_id}"
        self.dir = cluster.workdir / "nodes" / self.name  # config and server.log
        self.logs = self.dir / "logs"
        self.root = cluster.workdir / ("controller-data" if self.controller else "roots")
        if not self.controller:
            self.root = self.root / self.name
        self.port = cluster.cport if self.controller else free_port()
        self.config = self.dir / "server.properties"
        self.proc: subprocess.Popen | None = None
        self._dump: Path | None = None  # the class archive this node writes at its exit
        self._mark = 0
        self.dir.mkdir(parents=True, exist_ok=True)

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def write_config(self) -> None:
        c = self.cluster
        if self.controller:
            lines = [
                "process.roles=controller",
                f"listeners=CONTROLLER://{self.address}",
                f"advertised.listeners=CONTROLLER://{self.address}",
                "listener.security.protocol.map=CONTROLLER:PLAINTEXT",
            ]
        else:
            lines = [
                "process.roles=broker",
                f"listeners=PLAINTEXT://{self.address}",
                f"advertised.listeners=PLAINTEXT://{self.address}",
                "listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
                "inter.broker.listener.name=PLAINTEXT",
            ]
        lines += [
            f"node.id={self.node_id}",
            f"controller.quorum.bootstrap.servers=127.0.0.1:{c.cport}",
            "controller.listener.names=CONTROLLER",
            f"log.dirs={self.root}",
            "offsets.topic.replication.factor=1",
            "offsets.topic.num.partitions=1",
            "transaction.state.log.replication.factor=1",
            "transaction.state.log.min.isr=1",
            "transaction.state.log.num.partitions=1",
            "group.initial.rebalance.delay.ms=0",
            "num.recovery.threads.per.data.dir=1",
            "num.io.threads=2",
            "num.network.threads=2",
            "log.retention.ms=-1",
            "log.retention.check.interval.ms=3600000",
            *(f"{k}={v}" for k, v in c.config.items()),
            "",
        ]
        self.config.write_text("\n".join(lines))

    def server_log(self) -> str:
        path = self.logs / "server.log"
        return path.read_text(errors="replace") if path.exists() else ""

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def launch(self) -> None:
        """Start the JVM (``kafka-server-start.sh`` execs it); ``wait_started`` waits for it."""
        assert not self.running, f"{self.name} runs already"
        self._mark = len(self.server_log())
        self._dump = claim_class_dump(self.cluster.home)
        self.proc = subprocess.Popen(
            [str(self.cluster.home / "bin" / "kafka-server-start.sh"), str(self.config)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            stdin=subprocess.DEVNULL,
            env=self.cluster.env(self.logs, self._dump),
            start_new_session=True,
        )

    def wait_started(self, deadline: float) -> None:
        while time.monotonic() < deadline:
            if STARTED in self.server_log()[self._mark :]:
                return
            if self.proc is None or self.proc.poll() is not None:
                code = None if self.proc is None else self.proc.returncode
                raise RuntimeError(
                    f"{self.name} exited {code} before it started:\n"
                    + self.server_log()[self._mark :][-4000:]
                )
            time.sleep(0.25)
        raise RuntimeError(f"{self.name} did not start in time:\n{self.server_log()[-4000:]}")

    def stop(self, timeout: float = 90) -> None:
        """SIGTERM (a broker's controlled shutdown), then wait; SIGKILL if it does not end."""
        proc, self.proc = self.proc, None
        terminate(proc, timeout)
        dump, self._dump = self._dump, None
        finish_class_dump(dump, proc)

    def kill(self) -> None:
        proc, self.proc = self.proc, None
        if proc is not None and proc.poll() is None:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.wait(timeout=30)
        dump, self._dump = self._dump, None
        finish_class_dump(dump, proc)  # killed: no archive; the next node to start writes it


class Cluster:
    """A controller and ``brokers`` brokers under ``workdir``; roots in ``workdir/roots``."""

    def __init__(
        self,
        home: Path,
        workdir: Path,
        brokers: int = 3,
        config: dict[str, str] | None = None,
        heap: str = "-Xmx256m -Xms64m",
    ):
        self.home = home
        self.workdir = workdir
        self.config = dict(config or {})  # server.properties lines added to every node
        self.heap = heap
        self.cport = free_port()
        self.roots = workdir / "roots"
        self.roots.mkdir(parents=True, exist_ok=True)
        self.controller = Node(self, 0)
        self.brokers = {i: Node(self, i) for i in range(1, brokers + 1)}
        for node in self.nodes():
            node.write_config()
        cid = kafka_uuid()
        self.cluster_id = cid
        self.tool(
            "kafka-storage.sh", "format", "-t", cid, "-c", str(self.controller.config),
            "--standalone", check=True,
        )  # fmt: skip
        for node in self.brokers.values():
            self.tool(
                "kafka-storage.sh", "format", "-t", cid, "-c", str(node.config),
                "--no-initial-controllers", check=True,
            )  # fmt: skip

    def nodes(self) -> list[Node]:
        return [self.controller, *self.brokers.values()]

    def env(self, logs: Path | None = None, dump: Path | None = None) -> dict[str, str]:
        return kafka_env(self.home, logs or self.workdir / "tool-logs", self.heap, dump)

    def tool(self, script: str, *args: str, timeout: float = 120, check: bool = False):
        return run_tool(self.home, self.env(), script, *args, timeout=timeout, check=check)

    # -- processes -------------------------------------------------------------------------
    def start(self, *ids: int) -> None:
        """Start the given brokers (all when none given; the controller first if it is down)
        together and wait until each says it started."""
        nodes = [self.brokers[i] for i in ids] if ids else list(self.brokers.values())
        if not self.controller.running:
            nodes = [self.controller, *nodes]
        for node in nodes:
            node.launch()
        deadline = time.monotonic() + START_TIMEOUT
        for node in nodes:
            node.wait_started(deadline)

    def stop(self, *ids: int) -> None:
        """Stop the given brokers one after the other (SIGTERM: a controlled shutdown)."""
        for i in ids:
            self.brokers[i].stop()

    def close(self) -> None:
        """Stop every broker, then the controller; kill what does not end. Never raises."""
        for node in [*self.brokers.values(), self.controller]:
            try:
                node.stop(timeout=30)
            except Exception:
                node.kill()

    def __enter__(self) -> Cluster:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def live(self) -> list[int]:
        return [i for i, n in self.brokers.items() if n.running]

    def bootstrap(self) -> list[str]:
        return [self.brokers[i].address for i in self.live()]

    def root(self, i: int) -> Path:
        return self.brokers[i].root

    def copy_roots(self, dest: Path) -> Path:
        """Copy every broker's root to ``dest/broker-N`` (as they are now: whoever runs must
        not be written to meanwhile)."""
        dest.mkdir(parents=True)
        for node in self.brokers.values():
            shutil.copytree(node.root, dest / node.name, symlinks=True)
        return dest

    # -- metadata --------------------------------------------------------------------------
    def admin(self):
        from kafka import KafkaAdminClient

        return KafkaAdminClient(bootstrap_servers=self.bootstrap(), request_timeout_ms=20000)

    def describe(self, topic: str, partition: int = 0) -> PartitionState:
        admin = self.admin()
        try:
            res = admin.describe_topic_partitions([topic])
        finally:
            admin.close()
        for p in res["topics"][0]["partitions"]:
            if p["partition_index"] == partition:
                return PartitionState(
                    p["leader_id"], p["leader_epoch"], tuple(p["replica_nodes"]),
                    tuple(sorted(p["isr_nodes"])),
                    tuple(sorted(p["eligible_leader_replicas"] or ())),
                    tuple(sorted(p["last_known_elr"] or ())),
                )  # fmt: skip
        raise LookupError(f"{topic}-{partition} is not described")

    def high_watermark(self, topic: str, partition: int = 0) -> int:
        """What a read_uncommitted consumer sees as the end: the leader's high watermark."""
        from kafka import KafkaConsumer, TopicPartition

        tp = TopicPartition(topic, partition)
        consumer = KafkaConsumer(bootstrap_servers=self.bootstrap(), request_timeout_ms=20000)
        try:
            return consumer.end_offsets([tp])[tp]
        finally:
            consumer.close()

    def wait_for(self, what: str, check: Callable[[], object], timeout: float = WAIT):
        """Poll ``check`` until it returns something true (returned); errors count as not yet."""
        deadline = time.monotonic() + timeout
        last: object = None
        while True:
            try:
                last = check()
                if last:
                    return last
            except Exception as exc:  # a broker between states answers with errors
                last = exc
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out waiting for {what}; last: {last!r}")
            time.sleep(0.3)

    def wait_state(
        self, topic: str, what: str, pred: Callable[[PartitionState], bool], partition: int = 0
    ) -> PartitionState:
        def check():
            st = self.describe(topic, partition)
            return st if pred(st) else None

        return self.wait_for(f"{topic}-{partition}: {what}", check)
