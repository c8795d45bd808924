"""`kseg replicas`' library on the fixture scenarios (kseg.fixtures.replicas): for every
follower, what Kafka truncates it to when it rejoins, what it loses, and its status, each worked
out by hand in the fixture from Kafka's rules."""

from __future__ import annotations

from pathlib import Path

import pytest

from kseg.fixtures import replicas as R
from kseg.outcome import Outcome
from kseg.replicas.run import ReplicasRun
from kseg.storage.tree import resolve


def run_scenario(tmp_path: Path, name: str) -> tuple[ReplicasRun, list[dict]]:
    R.build(tmp_path, name)
    run = ReplicasRun(resolve([tmp_path]))
    return run, list(run.events())


def by_root(events: list[dict]) -> dict[str, dict]:
    return {Path(e["log_dir"]).name: e for e in events if e["type"] == "replica"}


@pytest.mark.parametrize("name", sorted(R.SCENARIOS))
def test_scenario(tmp_path, name):
    sc = R.SCENARIOS[name]
    run, evs = run_scenario(tmp_path, name)
    rows = by_root(evs)
    head = next(e for e in evs if e["type"] == "partition")
    assert Path(head["leader"]).name == sc.leader
    assert rows[sc.leader]["role"] == "leader"
    for root, offset in sc.truncate_to.items():
        assert rows[root]["truncate_to"] == offset, root
        assert rows[root]["lost_records"] == sc.lost[root], root
        assert rows[root]["status"] == sc.status[root], root
    bad = any(s in ("diverged", "damaged") for s in sc.status.values())
    assert run.outcome == (Outcome.INVALID_DATA if bad else Outcome.OK)
    assert head["lost_records"] == sum(sc.lost.values())
    summary = evs[-1]
    assert summary["type"] == "summary" and summary["partitions"] == 1


def test_twice_divergence_names_both_epochs(tmp_path):
    _, evs = run_scenario(tmp_path, "twice")
    row = by_root(evs)["broker-1"]
    assert row["divergence"] == {"offset": 5, "epoch": 0, "leader_epoch": 1}
    assert (row["lost_first_offset"], row["lost_last_offset"]) == (5, 29)
    assert row["epochs"] == [[0, 0], [2, 10], [4, 20]]


def test_damaged_batch_is_named(tmp_path):
    _, evs = run_scenario(tmp_path, "damaged")
    row = by_root(evs)["broker-2"]
    assert "byte 260: crc_mismatch" in row["damage"]
    assert row["divergence"]["offset"] == R.DAMAGED[1]


def test_unclean_shutdown_recovery_cuts_the_damaged_replica(tmp_path):
    """Without .kafka_cleanshutdown Kafka's recovery truncates at the bad batch: the replica
    then ends at 10 and refetches the rest (behind, but still damaged on disk)."""
    R.build(tmp_path, "damaged")
    (tmp_path / "broker-2" / ".kafka_cleanshutdown").unlink()
    (tmp_path / "broker-2" / "recovery-point-offset-checkpoint").write_bytes(
        R.encode_offset_checkpoint([R.TopicPartitionOffset(R.TOPIC, R.PARTITION, 0)])
    )
    run = ReplicasRun(resolve([tmp_path]))
    row = by_root(list(run.events()))["broker-2"]
    assert row["log_end_offset"] == 10
    assert row["truncate_to"] == 10 and row["lost_records"] == 0
    assert row["status"] == "damaged"
