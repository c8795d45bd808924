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
    assert row["last_batch_epoch"] == 4
    assert by_root(evs)["broker-3"]["last_batch_epoch"] == 5


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


def test_cleaned_batches_differ_without_diverging(tmp_path):
    """Each replica's log cleaner rewrites its own batches: below a replica's cleaner checkpoint
    the batches are not compared (`__consumer_offsets` replicas differ there on every cluster)."""
    import shutil

    from kseg.storage.writer import LogWriter

    R.build(tmp_path, "match")
    pdir = tmp_path / "broker-2" / "orders-0"
    shutil.rmtree(pdir)
    with LogWriter(pdir) as w:  # offsets 0..9 compacted to the last record of each key
        w.append([R.record(o, "a")._replace(offset=o) for o in (3, 4)], last_offset=4)
        w.append([R.record(o, "a")._replace(offset=o) for o in (8, 9)], base_offset=5,
                 last_offset=9)  # fmt: skip
        for base, epoch in ((10, 0), (15, 0), (20, 1), (25, 1)):
            w.append([R.record(base + i, "a") for i in range(5)], partition_leader_epoch=epoch)
    (pdir / "partition.metadata").write_bytes(R.encode_partition_metadata(R.TOPIC_ID))
    rows = by_root(list(ReplicasRun(resolve([tmp_path])).events()))
    assert rows["broker-2"]["status"] == "diverged"  # no cleaner checkpoint: they differ
    (tmp_path / "broker-2" / "cleaner-offset-checkpoint").write_bytes(
        R.encode_offset_checkpoint([R.TopicPartitionOffset(R.TOPIC, R.PARTITION, 10)])
    )
    run = ReplicasRun(resolve([tmp_path]))
    rows = by_root(list(run.events()))
    assert rows["broker-2"]["status"] == "in_sync"
    assert rows["broker-2"]["cleaned_to"] == 10
    assert rows["broker-2"]["divergence"] is None
    assert run.outcome == Outcome.OK


def test_a_leader_that_has_written_nothing_yet_is_the_leader(tmp_path):
    """broker-2 was made leader of epoch 2 at offset 5 by an unclean election and has written
    nothing: its checkpoint says 2@5 (loading drops the entry, it starts at the log end). It,
    not broker-1 (epoch 1 from 5), is the last one made leader: broker-1 loses 5..9."""
    R.write_root(tmp_path / "broker-1", 1, R.ReplicaSpec((R.Run(0, 5), R.Run(1, 5))))
    R.write_root(tmp_path / "broker-2", 2, R.ReplicaSpec((R.Run(0, 5),), epochs=((0, 0), (2, 5))))
    run = ReplicasRun(resolve([tmp_path]))
    evs = list(run.events())
    head = next(e for e in evs if e["type"] == "partition")
    assert Path(head["leader"]).name == "broker-2" and "epoch 2" in head["leader_reason"]
    row = by_root(evs)["broker-1"]
    assert (row["truncate_to"], row["lost_records"], row["status"]) == (5, 5, "diverged")
    assert run.outcome == Outcome.INVALID_DATA


def test_a_given_leader_of_an_older_epoch_truncates_the_followers_ahead_of_it(tmp_path):
    """--leader naming a replica whose epochs stop below a follower's (broker-1 led epoch 0 to
    30; broker-3 went on in epoch 1 from 20): once elected, its cache holds the new epoch at its
    log end (Partition.makeLeader), so broker-3 asking for epoch 1 hears (0, 30), its own epoch
    0 ends at 20: it truncates to 20 and loses its 15 epoch-1 records (not "nothing truncated")."""
    R.build(tmp_path, "unclean")
    run = ReplicasRun(resolve([tmp_path]), leader=tmp_path / "broker-1")
    rows = by_root(list(run.events()))
    assert rows["broker-1"]["role"] == "leader"
    b3 = rows["broker-3"]
    assert (b3["truncate_to"], b3["lost_records"], b3["status"]) == (20, 15, "diverged")
    assert (b3["lost_first_offset"], b3["lost_last_offset"]) == (20, 34)
    assert (rows["broker-2"]["truncate_to"], rows["broker-2"]["status"]) == (10, "behind")


def test_the_elected_leader_caches_its_new_epoch_at_its_log_end():
    from kseg.format.checkpoint import EpochEntry as E
    from kseg.replicas.rejoin import elected, rejoin

    # the real cluster's replicas-once-0 with broker-1 (0@0, end 30) made leader: broker-2
    # (0@0 2@20 4@26, end 33) asks for 4, hears (0, 30); its epoch 0 ends at 20
    rj = rejoin([E(0, 0)], 0, 30, [E(0, 0), E(2, 20), E(4, 26)], 33)
    assert (rj.truncate_to, rj.fully, rj.rule) == (20, False, "epoch")
    assert rj.steps[0] == (4, 0, 30)  # then it fetches from 20 in epoch 0
    # a leader with no cache at all: the follower's epoch is below the new one, ends at 30
    assert rejoin([], 0, 30, [E(3, 0)], 40).truncate_to == 30
    # a leader already at the greatest epoch: unchanged
    assert elected([E(0, 0), E(2, 20)], 33, [E(0, 0)]) == (E(0, 0), E(2, 20))
    assert elected([E(0, 0), E(2, 20)], 33, [E(2, 20)]) == (E(0, 0), E(2, 20))
    assert elected([E(0, 0)], 30, [E(0, 0), E(4, 26)]) == (E(0, 0), E(5, 30))


def test_a_follower_without_epochs_truncates_to_its_high_watermark_first(tmp_path):
    """No leader epochs (its checkpoint lost, clean shutdown: nothing rebuilds it): Kafka's
    fetcher truncates it to its high watermark (truncateToHighWatermark; the root's
    replication-offset-checkpoint, 20 here), then fetches from there: broker-1's 20..29, which
    the leader does not hold, go (not "kept, nothing truncated")."""
    R.build(tmp_path, "unclean")
    root = tmp_path / "broker-1"
    (root / "orders-0" / "leader-epoch-checkpoint").unlink()
    (root / "replication-offset-checkpoint").write_bytes(
        R.encode_offset_checkpoint([R.TopicPartitionOffset(R.TOPIC, R.PARTITION, 20)])
    )
    rows = by_root(list(ReplicasRun(resolve([tmp_path])).events()))
    b1 = rows["broker-1"]
    assert b1["epochs"] == [] and b1["high_watermark"] == 20
    assert (b1["truncate_to"], b1["lost_records"], b1["status"]) == (20, 10, "diverged")
    # a high watermark at its log end: by offset alone, below the leader's end, nothing goes
    (root / "replication-offset-checkpoint").write_bytes(
        R.encode_offset_checkpoint([R.TopicPartitionOffset(R.TOPIC, R.PARTITION, 30)])
    )
    b1 = by_root(list(ReplicasRun(resolve([tmp_path])).events()))["broker-1"]
    assert (b1["truncate_to"], b1["lost_records"]) == (30, 0)


def test_a_replica_without_segments_is_behind_not_damaged(tmp_path):
    """A partition dir with no .log (its index files orphans): Kafka deletes the orphans and
    starts it with one empty segment at its log start (kseg verify: exit 0), so it is an empty
    replica, behind; nothing is damaged and nothing lost."""
    R.build(tmp_path, "lag")
    pdir = tmp_path / "broker-2" / "orders-0"
    for log in pdir.glob("*.log"):
        log.unlink()
    run = ReplicasRun(resolve([tmp_path]))
    rows = by_root(list(run.events()))
    r = rows["broker-2"]
    assert (r["status"], r["damage"], r["log_end_offset"], r["epochs"]) == ("behind", None, 0, [])
    assert (r["truncate_to"], r["lost_records"]) == (0, 0)
    assert run.outcome == Outcome.OK


def test_the_loss_holds_no_object_per_lost_batch(tmp_path):
    """A follower that loses 8000 batches: compare sums them as it walks (peak traced memory
    well under what one object per batch takes, about 2.5 MB here)."""
    import tracemalloc

    from kseg.replicas.compare import compare
    from kseg.replicas.model import load_replica

    R.write_root(tmp_path / "broker-1", 1, R.ReplicaSpec((R.Run(0, 10),)))
    spec = R.ReplicaSpec((R.Run(0, 10), R.Run(0, 8000, "c", batch=1)))
    R.write_root(tmp_path / "broker-2", 2, spec, segment_bytes=1 << 16)
    ts = {t.log_dir.name: t for t in resolve([tmp_path]).required_targets("compare")}
    lead, fol = (load_replica(ts[n], R.TOPIC, R.PARTITION) for n in ("broker-1", "broker-2"))
    tracemalloc.start()
    try:
        cmp = compare(lead, fol, 10, False)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert (cmp.loss.batches, cmp.loss.records, cmp.loss.first_offset) == (8000, 8000, 10)
    assert peak < 1_000_000, peak


def test_a_garbage_checkpoint_is_damage_with_no_truncation_predicted(tmp_path):
    """A leader-epoch-checkpoint Kafka cannot parse fails its log dir: the replica is damaged
    (file named), and no truncation is predicted for a replica Kafka would not load."""
    R.build(tmp_path, "unclean")
    (tmp_path / "broker-1" / "orders-0" / "leader-epoch-checkpoint").write_bytes(b"0\n2\nx y\n")
    run = ReplicasRun(resolve([tmp_path]))
    row = by_root(list(run.events()))["broker-1"]
    assert row["status"] == "damaged" and "leader-epoch-checkpoint" in row["damage"]
    assert row["truncate_to"] is None and row["lost_records"] == 0
    assert run.outcome == Outcome.INVALID_DATA


def test_overlapping_segments_count_no_offset_twice(tmp_path):
    """A copy of segment 0 named as a later segment (segments that overlap; Kafka would not
    start on it): each offset is compared and counted lost once."""
    import shutil

    from kseg.replicas.compare import compare
    from kseg.replicas.model import load_replica

    R.build(tmp_path, "unclean")
    pdir = tmp_path / "broker-1" / "orders-0"
    shutil.copy(pdir / "00000000000000000000.log", pdir / "00000000000000000010.log")
    ts = {t.log_dir.name: t for t in resolve([tmp_path]).required_targets("compare")}
    lead, fol = (load_replica(ts[n], R.TOPIC, R.PARTITION) for n in ("broker-3", "broker-1"))
    assert not fol.starts
    cmp = compare(lead, fol, 20, False)
    assert (cmp.loss.records, cmp.loss.batches, cmp.divergence.offset) == (10, 2, 20)
    row = by_root(list(ReplicasRun(resolve([tmp_path])).events()))["broker-1"]
    assert (row["status"], row["truncate_to"]) == ("damaged", None)


def test_export_inside_the_directory_of_roots_is_refused(tmp_path):
    """An export inside the directory holding the roots (or inside a root) would be one more
    replica for the next `kseg replicas` of it: usage, before anything is read."""
    from kseg.outcome import BadOption

    R.build(tmp_path / "incident", "unclean")
    sel = resolve([tmp_path / "incident"])
    for dest in (tmp_path / "incident" / "lost", tmp_path / "incident" / "broker-1" / "x"):
        with pytest.raises(BadOption, match="inside"):
            ReplicasRun(sel, export_lost=dest)
    ReplicasRun(sel, export_lost=tmp_path / "lost")  # beside it: fine
