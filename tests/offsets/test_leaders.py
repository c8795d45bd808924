"""partition_leader: replaying KRaft metadata (snapshot + log) to the leader at an offset."""

from __future__ import annotations

import kseg
from kseg.offsets.leaders import partition_leader

UUID = "bb7pOvAQRgy5C6qqu14vfA"


def test_real_kafka_41_metadata(real_root):
    mdir = real_root / "kafka-4.1.0-dev/data/__cluster_metadata-0"
    assert partition_leader(mdir, "dev-grow", 1, 50) is None  # the topic has one partition then
    at_51 = partition_leader(mdir, "dev-grow", 0, 51)
    assert (at_51.leader, at_51.isr, at_51.changed_at) == (1, [1], 51)
    grown = partition_leader(mdir, "dev-grow", 1, 283)  # the second PartitionRecord, offset 283
    assert (grown.leader, grown.changed_at) == (1, 283)
    later = partition_leader(mdir, "dev-grow", 1, 588)  # from the snapshot ending at 565
    assert (later.leader, later.changed_at) == (1, None) and "565-" in later.source
    # offset 589: the controlled shutdown's PartitionChangeRecord leaves it leaderless
    assert partition_leader(mdir, "dev-grow", 1, 589).leader == -1
    # a state first seen in a snapshot (end offset 238) says so
    snap = partition_leader(mdir, "__transaction_state", 0, 300)
    assert snap.changed_at is None and snap.source.endswith("238-0000000001.checkpoint")
    assert partition_leader(mdir, "dev-tmp", 0, 10**9) is None  # deleted (RemoveTopicRecord)


def test_snapshot_then_log(tmp_path):
    mdir = tmp_path / "__cluster_metadata-0"
    topic = ("topic_record", {"name": "t", "topic_id": UUID})
    part = ("partition_record", {"partition_id": 0, "topic_id": UUID, "leader": 3, "isr": [3, 4]})
    with kseg.LogWriter(mdir) as w:
        w.append_metadata([topic, part])  # offsets 0, 1
        w.append_metadata(
            [("partition_change_record", {"partition_id": 0, "topic_id": UUID, "leader": 4})]
        )
        w.append_metadata(
            [("partition_change_record", {"partition_id": 0, "topic_id": UUID, "isr": [4]})]
        )
    # a snapshot of the state through offset 1 (end offset 2), written by the same writer
    snap_dir = tmp_path / "snap"
    with kseg.LogWriter(snap_dir) as w:
        w.append_kraft_control([(3, {"last_contained_log_timestamp": 1})])
        w.append_metadata(
            [topic, ("partition_record", {**part[1], "leader": 9})]
        )  # differs on purpose
        w.append_kraft_control([(4, {})])
    (snap_dir / "00000000000000000000.log").rename(
        mdir / "00000000000000000002-0000000001.checkpoint"
    )
    assert partition_leader(mdir, "t", 0, 0) is None  # before the snapshot's end: the log alone
    # the snapshot (end offset 2) stands for offsets 0-1: it wins over the log there
    assert partition_leader(mdir, "t", 0, 1).leader == 9
    at_2 = partition_leader(mdir, "t", 0, 2)  # the snapshot (leader 9), then offset 2 (leader 4)
    assert (at_2.leader, at_2.changed_at) == (4, 2)
    at_3 = partition_leader(mdir, "t", 0, 3)  # an ISR change leaves the leader alone
    assert (at_3.leader, at_3.isr, at_3.changed_at) == (4, [4], 2)
    assert partition_leader(mdir, "t", 1, 3) is None
