"""Issue #31 against the real broker: replicas made to disagree by unclean elections.

``run_scenario`` drives a :class:`tests.replicas.cluster.Cluster` (a controller, brokers 1-3)
through the history of two partitions, ``ONCE`` and ``TWICE`` (1 partition each, replicas
[1, 2, 3], ``unclean.leader.election.enable=true``, ``min.insync.replicas=1``, acks=1), and copies
the three broker roots twice. Broker 1 leads both at first.

1. Phase A (both topics) reaches all three brokers.
2. Broker 3 stops (it holds A: *behind* in both). Phase B reaches brokers 1 and 2.
3. Broker 2 stops (A+B). Phase C reaches broker 1 alone.
4. Broker 1 stops: no replica runs. Broker 2 starts; the controller elects it by an UNCLEAN
   election (in neither ISR nor ELR, KIP-966) as it unfences: a new leader epoch. Phase D.
5. ``ONCE`` is made clean (``unclean.leader.election.enable=false``). Broker 2 stops, broker 1
   starts: ``TWICE`` elects broker 1 uncleanly again (its log still holds C: that epoch starts
   after C); ``ONCE`` stays without a leader. Phase E (``TWICE`` only).
6. Broker 1 stops, broker 2 starts: ``TWICE`` elects broker 2 uncleanly a third time, ``ONCE``
   elects it from its ELR. Phase F (both).
7. ``diverged``: every root is copied (brokers 1 and 3 down, broker 2 leading, nothing written).
   Broker 1 has diverged once in ``ONCE`` (C is lost) and twice in ``TWICE`` (C and E are lost;
   its histories part twice, so its truncation takes two rounds of epoch matching).
8. Brokers 1 and 3 start, rejoin (fetch from broker 2, truncate where the leader-epoch histories
   part) and catch up: ISR [1, 2, 3] and the high watermark at the log end, in both topics.
9. ``truncated``: every root is copied again (no writes since F); then the cluster stops.

What was produced (offset, key, value, timestamp per phase), each partition's state at each step
(leader, epoch, ISR, ELR) and each broker's server.log lines about truncation are kept in
:class:`Scenario` for the tests, beside the timings.
"""

from __future__ import annotations

import re
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path

from tests.replicas.cluster import Cluster, PartitionState

ONCE, TWICE = "replicas-once", "replicas-twice"
TOPICS = (ONCE, TWICE)
PHASES = {"A": 12, "B": 8, "C": 10, "D": 6, "E": 5, "F": 7}  # records per phase
PER_BATCH = 4  # records to a batch
TOPIC_CONFIG = {
    "unclean.leader.election.enable": "true",
    "min.insync.replicas": "1",
    # a segment rolls when an append comes 2 s after its first batch: the replicas, which append
    # at different times, roll differently (kseg compares batches across segments, not files)
    "segment.ms": "2000",
}
CLUSTER_CONFIG = {
    "auto.create.topics.enable": "false",
    # the controller appends no NoOp records: a running broker's metadata log does not change
    # while its root is copied
    "metadata.max.idle.interval.ms": "0",
    "replica.fetch.backoff.ms": "200",
    "replica.high.watermark.checkpoint.interval.ms": "500",
}
TRUNCATION = re.compile(r"[Tt]runcat")


@dataclass
class Produced:
    topic: str
    phase: str
    offset: int
    key: bytes
    value: bytes
    timestamp: int


@dataclass
class Scenario:
    workdir: Path
    diverged: Path | None = None  # dir of the three roots (broker-1..3) before the rejoin
    truncated: Path | None = None  # ... after it
    produced: list[Produced] = field(default_factory=list)
    states: dict[tuple[str, str], PartitionState] = field(default_factory=dict)  # (step, topic)
    leader: dict[str, int] = field(default_factory=dict)  # topic -> the broker leading at the end
    epoch: dict[str, int] = field(default_factory=dict)  # topic -> its leader epoch then
    log_lines: dict[int, list[str]] = field(default_factory=dict)  # broker -> truncation lines
    controller_lines: list[str] = field(default_factory=list)  # the controller's elections
    seconds: dict[str, float] = field(default_factory=dict)

    def truncations(self, broker: int, topic: str) -> list[tuple[int, int, int, bool]]:
        """The fetcher's truncations of ``topic``-0 on ``broker`` as its server.log says them:
        (leader epoch answered, its end offset, offset truncated to, completed), in order."""
        pat = re.compile(
            rf"Truncating partition {re.escape(topic)}-0 with TruncationState\(offset=(\d+), "
            r"completed=(true|false)\) due to leader epoch and offset EpochEndOffset\("
            r"errorCode=0, partition=0, leaderEpoch=(-?\d+), endOffset=(-?\d+)\)"
        )
        out = []
        for line in self.log_lines.get(broker, []):
            m = pat.search(line)
            if m:
                out.append((int(m[3]), int(m[4]), int(m[1]), m[2] == "true"))
        return out

    def elections(self, topic: str) -> list[tuple[int, int, bool]]:
        """Each leader the controller set for ``topic``-0 as its controller.log says it:
        (new leader, leader epoch, unclean: the leader was in neither the ISR nor the ELR)."""
        isr, elr, out = ["1", "2", "3"], [], []  # at creation; a line gives the old values too

        def ids(name: str, line: str, old: list[str]) -> tuple[list[str], list[str]]:
            m = re.search(rf"\b{name}: \[([^]]*)\] -> \[([^]]*)\]", line)
            return (re.findall(r"\d+", m[1]), re.findall(r"\d+", m[2])) if m else (old, old)

        for line in self.controller_lines:
            if f" partition change for {topic}-0 " not in line:
                continue
            (was_isr, isr), (was_elr, elr) = ids("isr", line, isr), ids("elr", line, elr)
            new = re.search(r"\bleader: -?\d+ -> (\d+)", line)
            epoch = re.search(r"\bleaderEpoch: \d+ -> (\d+)", line)
            if new:
                unclean = new[1] not in was_isr and new[1] not in was_elr
                out.append((int(new[1]), int(epoch[1]) if epoch else -1, unclean))
        return out


def produce(cluster: Cluster, topic: str, phase: str, count: int) -> list[Produced]:
    """``count`` records of ``phase`` with acks=1 (PER_BATCH to a batch), to whoever leads."""
    from kafka import KafkaProducer

    producer = KafkaProducer(
        bootstrap_servers=cluster.bootstrap(),
        acks=1,
        linger_ms=1000,  # a batch is sent by flush(): PER_BATCH records each
        retries=5,
        enable_idempotence=False,
        request_timeout_ms=20000,
        max_block_ms=30000,
    )
    out = []
    try:
        for start in range(0, count, PER_BATCH):
            sent = []
            for i in range(start, min(count, start + PER_BATCH)):
                key = f"{phase}-{i:03d}".encode()
                value = f"{topic} phase {phase} record {i} ".encode() * 3
                sent.append((key, value, producer.send(topic, key=key, value=value, partition=0)))
            producer.flush(timeout=30)
            for key, value, fut in sent:
                md = fut.get(timeout=30)
                out.append(Produced(topic, phase, md.offset, key, value, md.timestamp))
    finally:
        producer.close(timeout=10)
    return out


def log_lines(cluster: Cluster) -> dict[int, list[str]]:
    pats = [re.compile(rf"\b{t}-0\b") for t in TOPICS]
    return {
        i: [
            line
            for line in node.server_log().splitlines()
            if TRUNCATION.search(line) and any(p.search(line) for p in pats)
        ]
        for i, node in cluster.brokers.items()
    }


def run_scenario(home: Path, workdir: Path) -> Scenario:
    sc = Scenario(workdir)
    t0 = time.monotonic()
    cluster = Cluster(home, workdir / "cluster", config=CLUSTER_CONFIG)
    ends = dict.fromkeys(TOPICS, 0)

    def mark(step: str) -> None:
        sc.seconds[step] = round(time.monotonic() - t0, 1)

    def state(step: str, topic: str, what: str, pred) -> PartitionState:
        st = cluster.wait_state(topic, what, pred)
        sc.states[step, topic] = st
        return st

    def write(phase: str, *topics: str) -> None:
        for topic in topics or TOPICS:
            got = produce(cluster, topic, phase, PHASES[phase])
            sc.produced.extend(got)
            ends[topic] = got[-1].offset + 1

    def replicated() -> None:
        """Until each high watermark is at the log end: every ISR member holds the log."""
        for topic in TOPICS:
            cluster.wait_for(
                f"{topic}-0 high watermark {ends[topic]}",
                lambda topic=topic: cluster.high_watermark(topic) >= ends[topic],
            )

    def leads(step: str, broker: int) -> None:
        for topic in TOPICS:
            state(step, topic, f"leader {broker}", lambda s: s.leader == broker)

    try:
        cluster.start()
        mark("started")
        admin = cluster.admin()
        try:
            admin.create_topics(
                {t: {"assignments": {0: [1, 2, 3]}, "configs": TOPIC_CONFIG} for t in TOPICS},
                wait_for_metadata=True,
            )
        finally:
            admin.close()
        for topic in TOPICS:
            state("created", topic, "leader 1, ISR [1, 2, 3]",
                  lambda s: s.leader == 1 and s.isr == (1, 2, 3))  # fmt: skip
        write("A")
        replicated()
        cluster.stop(3)
        for topic in TOPICS:
            state("3 stopped", topic, "ISR [1, 2]", lambda s: s.isr == (1, 2))
        write("B")
        replicated()
        cluster.stop(2)
        for topic in TOPICS:
            state("2 stopped", topic, "ISR [1]", lambda s: s.isr == (1,))
        write("C")
        cluster.stop(1)
        mark("A-C")
        cluster.start(2)  # unclean: the controller elects it as it unfences
        leads("2 elected", 2)
        write("D")
        mark("D")
        from kafka.admin import ConfigResource

        admin = cluster.admin()
        try:
            admin.alter_configs(
                [ConfigResource("topic", ONCE, {"unclean.leader.election.enable": "false"})],
                incremental=True,
            )
        finally:
            admin.close()
        cluster.stop(2)
        cluster.start(1)
        state("1 elected", TWICE, "leader 1", lambda s: s.leader == 1)
        sc.states["1 elected", ONCE] = cluster.describe(ONCE)
        write("E", TWICE)
        cluster.stop(1)
        mark("E")
        cluster.start(2)
        leads("2 elected again", 2)
        write("F")
        mark("F")
        sc.diverged = cluster.copy_roots(workdir / "diverged")
        cluster.start(1, 3)
        for topic in TOPICS:
            state("rejoined", topic, "ISR [1, 2, 3]", lambda s: s.isr == (1, 2, 3))
        replicated()
        for topic in TOPICS:
            st = cluster.describe(topic)
            sc.states["end", topic] = st
            sc.leader[topic], sc.epoch[topic] = st.leader, st.epoch
        sc.truncated = cluster.copy_roots(workdir / "truncated")
        mark("rejoined")
    finally:
        cluster.close()
        sc.log_lines = log_lines(cluster)
        sc.controller_lines = [
            line
            for log in sorted((cluster.controller.logs).glob("controller.log*"))
            for line in log.read_text(errors="replace").splitlines()
            if "partition change for" in line
        ]
        mark("total")
    return sc


def save(sc: Scenario, dest: Path) -> None:
    """Copy the scenario's roots and every node's logs to ``dest`` (for people to look at)."""
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    shutil.copytree(sc.diverged, dest / "diverged", symlinks=True)
    shutil.copytree(sc.truncated, dest / "truncated", symlinks=True)
    shutil.copytree(sc.workdir / "cluster" / "nodes", dest / "nodes", symlinks=True)
