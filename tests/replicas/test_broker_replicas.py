"""`kseg replicas` against a real Kafka 4.1.0 cluster (issue #31, "The real broker").

A controller and three brokers on 127.0.0.1 (tests/replicas/cluster.py) make two partitions'
replicas disagree by unclean elections (tests/replicas/real_scenario.py): broker 3 stops early
(*behind*), broker 1 writes alone and loses leadership to the lagging broker 2 by an unclean
election, once in ``replicas-once`` and twice in ``replicas-twice`` (its truncation takes two rounds
of epoch matching there). Every broker root is copied before the old replicas rejoin
(``diverged``) and after they have truncated and caught up (``truncated``).

Kafka is the oracle twice over: the truncated copies hold what the followers really kept, and the
followers' server.log says where they truncated (``Truncating partition ... TruncationState``).
`kseg replicas` on the diverged copies must name the leader from the KRaft metadata under the
roots, predict each follower's truncation offset as the broker logged it, and the truncated
copies' batches byte for byte; `--export-lost` must hold exactly the records that vanished.
Skips where ../shared/kafka is absent; one module fixture runs the cluster (about 2 minutes).
"""

from __future__ import annotations

import base64
import hashlib
import shutil
from pathlib import Path

import pytest

from kseg.replicas.model import load_replica
from kseg.replicas.rejoin import rejoin
from kseg.storage.segment import read_batches
from kseg.storage.tree import resolve
from tests.helpers import events, run_kseg
from tests.replicas.real_scenario import ONCE, PHASES, TOPICS, TWICE, Scenario, run_scenario

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("kafka-broker")]

LEADER, BEHIND, DIVERGED = 2, 3, 1  # the brokers' parts at the end
A, B, C, D, E = (PHASES[p] for p in "ABCDE")
LOST = {ONCE: ("C",), TWICE: ("C", "E")}  # the phases broker 1 alone held


@pytest.fixture(scope="module")
def real(kafka_home, tmp_path_factory) -> Scenario:
    return run_scenario(kafka_home, tmp_path_factory.mktemp("replicas-broker"))


def pdir(root_set: Path, broker: int, topic: str) -> Path:
    return root_set / f"broker-{broker}" / f"{topic}-0"


def logs(partition_dir: Path) -> list[Path]:
    """The partition's segment .log files in offset order (not ``*.log.deleted``)."""
    return sorted(partition_dir.glob("*.log"), key=lambda p: int(p.stem))


def batches(partition_dir: Path) -> list[tuple[int, int, bytes]]:
    """(base offset, last offset, raw bytes) of every batch, across the segments."""
    out = []
    for log in logs(partition_dir):
        for b in read_batches(log):
            out.append(
                (b.base_offset, b.last_offset, bytes(b.buf[b.position : b.position + b.size]))
            )
    return out


def records(partition_dir: Path) -> list[tuple[int, bytes | None, bytes | None, int]]:
    """(offset, key, value, timestamp) of every record, read by kseg's own reader."""
    return [
        (r.offset, r.key, r.value, r.timestamp)
        for log in logs(partition_dir)
        for b in read_batches(log)
        for r in b.records()
    ]


def read_batches_of(partition_dir: Path) -> list:
    return [b for log in logs(partition_dir) for b in read_batches(log)]


def log_end(partition_dir: Path) -> int:
    got = batches(partition_dir)
    return got[-1][1] + 1 if got else 0


def epochs(partition_dir: Path) -> list[list[int]]:
    """The leader-epoch-checkpoint's entries (version, count, then ``epoch offset`` lines)."""
    lines = (partition_dir / "leader-epoch-checkpoint").read_text().split("\n")
    count = int(lines[1])
    return [[int(x) for x in line.split()] for line in lines[2 : 2 + count]]


def kafka_truncated_to(real: Scenario, broker: int, topic: str) -> int | None:
    """Where the broker's fetcher last truncated ``topic``-0 by epoch matching (None: never)."""
    steps = real.truncations(broker, topic)
    return steps[-1][2] if steps else None


def digest(tree: Path) -> dict[str, str]:
    return {
        str(p.relative_to(tree)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(tree.rglob("*"))
        if p.is_file()
    }


def decode(value, encoding) -> bytes | None:
    if encoding is None:
        return None
    return value.encode() if encoding == "utf8" else base64.b64decode(value)


@pytest.fixture(scope="module")
def diverged_json(real: Scenario):
    proc = run_kseg("replicas", real.diverged, "-f", "json")
    return proc, events(proc.stdout)


def _partition(evs: list[dict], topic: str) -> tuple[dict, dict[str, dict]]:
    part = [e for e in evs if e["type"] == "partition" and e["topic"] == topic]
    assert len(part) == 1, evs
    reps = {
        Path(e["log_dir"]).name: e
        for e in evs
        if e["type"] == "replica" and e["topic"] == topic and e["partition"] == 0
    }
    return part[0], reps


# -- what Kafka did (the scenario's own claims, so that a changed Kafka is noticed) ----------
def test_kafka_truncated_the_diverged_replica_by_epoch_matching(real):
    # broker 1 held A, B (epoch 0) and C; broker 2 was elected with A, B and wrote D at epoch 2
    assert real.truncations(DIVERGED, ONCE) == [(0, A + B, A + B, True)]
    # twice: broker 1 led again (epoch 4, E after C); broker 2 led a third time (epoch 6, F).
    # Broker 1 asks with epoch 4: the leader answers epoch 2 (which broker 1 never had) ending at
    # D's end, broker 1 cuts to its own epoch 4's start and asks again with epoch 0.
    assert real.truncations(DIVERGED, TWICE) == [
        (2, A + B + D, A + B + C, False),
        (0, A + B, A + B, True),
    ]
    for topic in TOPICS:  # the behind replica and the leader never truncated by epoch
        assert real.truncations(BEHIND, topic) == []
        assert real.truncations(LEADER, topic) == []
        assert real.leader[topic] == LEADER
    # (leader, epoch, unclean): broker 2 unclean, then from the ELR once ONCE was made clean
    assert real.elections(ONCE) == [(2, 2, True), (2, 4, False)]
    assert real.elections(TWICE) == [(2, 2, True), (1, 4, True), (2, 6, True)]


def test_truncated_copy_is_the_kept_prefix_then_the_leader(real):
    for topic in TOPICS:
        leader = batches(pdir(real.truncated, LEADER, topic))
        assert batches(pdir(real.diverged, LEADER, topic)) == leader  # nothing written between
        for broker in (DIVERGED, BEHIND):
            before = batches(pdir(real.diverged, broker, topic))
            cut = kafka_truncated_to(real, broker, topic)
            cut = log_end(pdir(real.diverged, broker, topic)) if cut is None else cut
            assert all(last < cut or base >= cut for base, last, _ in before)  # whole batches
            expected = [b for b in before if b[1] < cut] + [b for b in leader if b[0] >= cut]
            assert batches(pdir(real.truncated, broker, topic)) == expected, (topic, broker)
        assert epochs(pdir(real.truncated, LEADER, topic))[-1][0] == real.epoch[topic]


# -- what kseg predicts from the diverged copies ---------------------------------------------
def replica(root_set: Path, broker: int, topic: str):
    targets = resolve([root_set / f"broker-{broker}"]).required_targets("compare")
    (t,) = [t for t in targets if t.partition_dir.name == f"{topic}-0"]
    return load_replica(t, topic, 0)


def test_rejoin_takes_the_rounds_the_broker_took(real):
    for topic in TOPICS:
        lead = replica(real.diverged, LEADER, topic)
        for broker in (DIVERGED, BEHIND):
            r = replica(real.diverged, broker, topic)
            rj = rejoin(lead.epochs, lead.log_start_offset, lead.log_end_offset, r.epochs,
                        r.log_end_offset)  # fmt: skip
            kafka = real.truncations(broker, topic)
            if not kafka:  # behind: its first fetch finds no divergence, nothing is truncated
                assert (rj.truncate_to, len(rj.steps)) == (r.log_end_offset, 1), (topic, broker)
                continue
            # each round Kafka logged: the leader's (epoch, end offset) answer, then a last
            # fetch that finds the histories agree
            assert [s[1:] for s in rj.steps[:-1]] == [k[:2] for k in kafka], (topic, rj.steps)
            assert rj.steps[0][0] == r.epochs[-1].epoch
            asked, le, lo = rj.steps[-1]
            assert le == asked and lo >= rj.truncate_to == kafka[-1][2]
            assert not rj.fully


def test_replicas_names_the_metadata_leader_and_kafkas_truncation(real, diverged_json):
    proc, evs = diverged_json
    assert proc.returncode == 4, proc.stderr.decode()
    for topic in TOPICS:
        part, reps = _partition(evs, topic)
        lost = [p for p in real.produced if p.topic == topic and p.phase in LOST[topic]]
        assert part["leader"] == str(real.diverged / f"broker-{LEADER}")
        assert part["leader_rule"] == "metadata"
        assert part["status"] == "diverged"
        assert part["first_divergence"] == A + B
        assert part["lost_records"] == len(lost)
        assert part["replicas"] == 3
        order = [e["log_dir"] for e in evs if e["type"] == "replica" and e["topic"] == topic]
        assert [Path(d).name for d in order] == [f"broker-{b}" for b in (LEADER, 1, 3)]

        lead = reps[f"broker-{LEADER}"]
        lead_dir = pdir(real.diverged, LEADER, topic)
        assert (lead["role"], lead["status"], lead["node_id"]) == ("leader", "leader", LEADER)
        assert lead["truncate_to"] is None
        assert lead["log_end_offset"] == log_end(lead_dir)
        assert lead["epochs"] == epochs(lead_dir)
        assert lead["latest_epoch"] == real.epoch[topic]

        div = reps[f"broker-{DIVERGED}"]
        div_dir = pdir(real.diverged, DIVERGED, topic)
        assert (div["role"], div["status"], div["node_id"]) == ("follower", "diverged", DIVERGED)
        assert div["truncate_to"] == kafka_truncated_to(real, DIVERGED, topic) == A + B
        assert div["truncate_fully"] is False
        assert div["log_end_offset"] == log_end(div_dir)
        assert div["epochs"] == epochs(div_dir)
        assert div["divergence"]["offset"] == A + B
        gone = [b for b in read_batches_of(div_dir) if b.base_offset >= A + B]
        assert (
            div["lost_records"] == len(lost) == sum(b.last_offset - b.base_offset + 1 for b in gone)
        )
        assert div["lost_batches"] == len(gone)
        assert div["lost_bytes"] == sum(b.size for b in gone)
        assert (div["lost_first_offset"], div["lost_last_offset"]) == (
            min(p.offset for p in lost),
            max(p.offset for p in lost),
        )
        assert div["lost_first_timestamp"] == min(b.max_timestamp for b in gone)
        assert div["lost_last_timestamp"] == max(b.max_timestamp for b in gone)

        behind = reps[f"broker-{BEHIND}"]
        assert (behind["role"], behind["status"], behind["node_id"]) == ("follower", "behind", 3)
        assert behind["truncate_to"] == behind["log_end_offset"] == A
        assert kafka_truncated_to(real, BEHIND, topic) is None
        assert behind["lost_records"] == 0 and behind["lost_first_offset"] is None
    (summary,) = [e for e in evs if e["type"] == "summary"]
    lost = sum(e["lost_records"] for e in evs if e["type"] == "partition")
    assert (summary["partitions"], summary["diverged"], summary["consistent"]) == (2, 2, 0)
    assert summary["lost_records"] == lost == sum(PHASES[p] for t in TOPICS for p in LOST[t])


def test_without_the_metadata_the_greatest_epoch_leads_the_same(real, tmp_path):
    """Copies without ``__cluster_metadata-0``: the leader is the replica with the greatest
    leader epoch, the same broker, and the predictions do not change."""
    bare = tmp_path / "bare"
    shutil.copytree(real.diverged, bare, ignore=shutil.ignore_patterns("__cluster_metadata-0"))
    proc = run_kseg("replicas", bare, "-f", "json")
    assert proc.returncode == 4, proc.stderr.decode()
    evs = events(proc.stdout)
    for topic in TOPICS:
        part, reps = _partition(evs, topic)
        assert (part["leader"], part["leader_rule"]) == (str(bare / "broker-2"), "latest_epoch")
        assert reps["broker-1"]["truncate_to"] == kafka_truncated_to(real, DIVERGED, topic)
        assert reps["broker-3"]["status"] == "behind"


def test_replicas_on_the_truncated_copies_is_consistent(real):
    proc = run_kseg("replicas", real.truncated, "-f", "json")
    evs = events(proc.stdout)
    damage = [e for e in evs if e.get("damage") or e.get("status") == "damaged"]
    assert proc.returncode == 0, (damage, proc.stderr.decode())
    for topic in TOPICS:
        part, reps = _partition(evs, topic)
        assert (part["status"], part["lost_records"]) == ("consistent", 0)
        assert part["leader"] == str(real.truncated / f"broker-{LEADER}")
        for broker in (DIVERGED, BEHIND):
            rep = reps[f"broker-{broker}"]
            assert (rep["status"], rep["lost_records"]) == ("in_sync", 0), rep


def test_export_lost_holds_exactly_the_records_that_vanished(real, tmp_path):
    before = digest(real.diverged)
    out = tmp_path / "lost"
    proc = run_kseg("replicas", real.diverged, "--export-lost", out, "-f", "json")
    assert proc.returncode == 4, proc.stderr.decode()
    assert digest(real.diverged) == before  # nothing in the input changes
    exports = [e for e in events(proc.stdout) if e["type"] == "export"]
    assert sorted((Path(e["log_dir"]).name, e["topic"]) for e in exports) == [
        (f"broker-{DIVERGED}", t) for t in sorted(TOPICS)
    ]
    for e in exports:
        topic = e["topic"]
        cut = kafka_truncated_to(real, DIVERGED, topic)
        kept = set(records(pdir(real.truncated, DIVERGED, topic)))
        vanished = [
            r
            for r in records(pdir(real.diverged, DIVERGED, topic))
            if r[0] >= cut and r not in kept
        ]
        produced = [
            (p.offset, p.key, p.value, p.timestamp)
            for p in real.produced
            if p.topic == topic and p.phase in LOST[topic]
        ]
        assert vanished == produced
        assert Path(e["dir"]) == out / f"broker-{DIVERGED}" / f"{topic}-0"
        assert records(Path(e["dir"])) == vanished
        assert e["records"] == len(vanished)
        lines = events(Path(e["jsonl"]).read_bytes())
        assert [
            (ln["offset"], decode(ln["key"], ln["key_encoding"]),
             decode(ln["value"], ln["value_encoding"]), ln["timestamp"])
            for ln in lines
            if ln["type"] == "record"
        ] == vanished  # fmt: skip
