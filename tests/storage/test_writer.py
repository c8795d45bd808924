from __future__ import annotations

import filecmp
from pathlib import Path

import pytest

import kseg
from kseg.fixtures import PARTITIONS, build_tree
from kseg.format import offset_index as oi
from kseg.format import time_index as ti
from kseg.format import txn_index as tx
from kseg.format.producer_snapshot import read_snapshot
from kseg.storage.files import file_kind, parse_partition_dir


def test_fixture_tree_is_deterministic(tree, tmp_path):
    again = build_tree(tmp_path / "again")
    for path in sorted(tree.rglob("*")):
        if path.is_file():
            assert filecmp.cmp(path, again / path.relative_to(tree), shallow=False), path


def test_tree_covers_the_formats(tree):
    seen = set()
    for name in PARTITIONS:
        for log in sorted((tree / name).glob("*.log")):
            for b in kseg.read_batches(log):
                seen.add((b.magic, b.compression))
                if b.magic == 2:
                    seen.add(("txn", b.is_transactional))
                    seen.add(("control", b.is_control))
                    seen.add(("ts", b.timestamp_type))
                    if b.records_count == 0:
                        seen.add("empty")
                elif b.magic == 1:
                    seen.add(("legacy-ts", b.timestamp_type))
    for magic, codecs in ((0, 4), (1, 4), (2, 5)):
        for cid in range(codecs):
            assert (magic, ["none", "gzip", "snappy", "lz4", "zstd"][cid]) in seen
    assert {
        ("txn", True),
        ("control", True),
        ("ts", "LogAppendTime"),
        ("legacy-ts", "LogAppendTime"),
        "empty",
    } <= seen
    assert len(list((tree / "txn-0").glob("*.log"))) >= 3
    assert len(list((tree / "orders-0").glob("*.log"))) >= 3


def test_offsets_are_contiguous_across_segments(tree):
    logs = sorted((tree / "orders-1").glob("*.log"))
    expected = 0
    for log in logs:
        assert int(log.name[:20]) == expected
        for b in kseg.read_batches(log):
            assert b.base_offset == expected
            expected = b.last_offset + 1


def test_active_segment_index_is_preallocated(tree):
    logs = sorted((tree / "orders-0").glob("*.log"))
    active = logs[-1]
    assert active.with_suffix(".index").stat().st_size == oi.DEFAULT_MAX_INDEX_SIZE
    assert active.with_suffix(".timeindex").stat().st_size == ti.DEFAULT_MAX_INDEX_SIZE
    for log in logs[:-1]:
        assert log.with_suffix(".index").stat().st_size % 8 == 0
        assert log.with_suffix(".index").stat().st_size < 4096


def test_indexes_point_at_batch_boundaries(tree):
    for log in sorted(tree.rglob("*.log")):
        base = int(log.name[:20])
        batches = {b.position: b for b in kseg.read_batches(log)}
        idx = oi.OffsetIndex(log.with_suffix(".index").read_bytes(), base)
        for e in idx:
            assert e.position in batches and batches[e.position].last_offset == e.offset
        tidx = ti.TimeIndex(log.with_suffix(".timeindex").read_bytes(), base)
        last = tidx.last_entry()
        if any(b.max_timestamp >= 0 for b in batches.values()):
            assert last.timestamp == max(b.max_timestamp for b in batches.values())


def test_aborted_transaction_spanning_segments_is_in_the_txnindex(tree):
    pdir = tree / "txn-0"
    entries = {}
    for f in sorted(pdir.glob("*.txnindex")):
        entries[f.name] = list(tx.read_entries(f.read_bytes()))
    by_pid = [e for es in entries.values() for e in es if e.producer_id == 9]
    assert len(by_pid) == 1
    txn9 = by_pid[0]
    # its first offset lies in an earlier segment than its ABORT marker
    marker_segment = max(
        int(p.name[:20]) for p in pdir.glob("*.log") if int(p.name[:20]) <= txn9.last_offset
    )
    assert txn9.first_offset < marker_segment
    assert sum(len(v) for v in entries.values()) == 4  # three aborts of producer 8, one of 9


def test_snapshot_and_epoch_checkpoint_written(tree):
    snaps = sorted((tree / "txn-0").glob("*.snapshot"))
    assert snaps
    last = read_snapshot(snaps[-1].read_bytes())
    assert {e.producer_id for e in last.entries} == {7, 8, 9}
    assert all(e.current_txn_first_offset == -1 for e in last.entries)


def test_writer_refuses_existing_logs(tree):
    with pytest.raises(kseg.KsegError, match="already holds segments"):
        kseg.LogWriter(tree / "orders-0")


def test_append_api_from_the_issue(tmp_path):
    with kseg.LogWriter(
        tmp_path / "t-0",
        magic=2,
        compression="zstd",
        segment_bytes=1 << 30,
        index_interval_bytes=4096,
        timestamp_type="CreateTime",
    ) as w:
        w.append(
            [kseg.Record(key=b"k", value=b"v", timestamp=1700000000000, headers=[("h", b"x")])]
        )
        w.append(
            [kseg.Record(value=b"t")],
            producer_id=7,
            producer_epoch=0,
            base_sequence=0,
            transactional=True,
        )
        w.append_control(commit=True, producer_id=7, producer_epoch=0, coordinator_epoch=3)
    out = []
    for batch in kseg.read_batches(tmp_path / "t-0" / "00000000000000000000.log"):
        for rec in batch.records():
            out.append((rec.offset, rec.key, rec.value, rec.headers, batch.is_control))
    assert out[0] == (0, b"k", b"v", [("h", b"x")], False)
    assert out[1][:3] == (1, None, b"t")
    assert out[2][0] == 2 and out[2][4] is True


def test_file_kinds_and_partition_names():
    assert file_kind("00000000000000000042.log").base_offset == 42
    assert file_kind("00000000000000000042.index.deleted").temp_suffix == ".deleted"
    assert file_kind("00000000000000000042.log.swap").kind == "log"
    assert file_kind("00000000000000001000-0000000003.checkpoint").kind == "kraft_checkpoint"
    assert file_kind("recovery-point-offset-checkpoint").kind == "offset_checkpoint"
    assert file_kind(Path("x/leader-epoch-checkpoint")).kind == "leader_epoch_checkpoint"
    assert parse_partition_dir("my-topic.v2-12").topic == "my-topic.v2"
    assert parse_partition_dir("my-topic-12").partition == 12
    p = parse_partition_dir("t-3.0123456789abcdef0123456789abcdef-delete")
    assert (p.topic, p.partition, p.state) == ("t", 3, "delete")
    assert parse_partition_dir("notapartition") is None


def test_snapshot_after_a_marker_is_kafkas_producer_entry(tmp_path):
    """A marker adds no batch to the producer's entry (ProducerStateEntry.update): the snapshot
    keeps the last data batch's sequence, offset and delta; a marker with a new epoch (Transaction
    V2's bump) clears them to -1, -1, 0, as Kafka 4.1.0 wrote for dev-txn-java-0."""
    with kseg.LogWriter(tmp_path / "t-0", clock=lambda: 1000) as w:
        w.append([kseg.Record(b"k", b"v", 1000)] * 3, producer_id=6, producer_epoch=0,
                 base_sequence=0, transactional=True)  # fmt: skip
        w.append_control(commit=True, producer_id=6, producer_epoch=0, coordinator_epoch=1)
        w.roll()
        w.append([kseg.Record(b"k", b"v", 1000)] * 2, producer_id=6, producer_epoch=0,
                 base_sequence=3, transactional=True)  # fmt: skip
        w.append_control(commit=True, producer_id=6, producer_epoch=1, coordinator_epoch=1)
    snaps = sorted((tmp_path / "t-0").glob("*.snapshot"))
    first, last = (read_snapshot(s.read_bytes()).entries for s in (snaps[0], snaps[-1]))
    assert int(snaps[0].stem) == 4  # taken at the roll: the state after offsets 0-3
    assert [tuple(e)[:5] for e in first] == [(6, 0, 2, 2, 2)]
    assert [tuple(e)[:5] for e in last] == [(6, 1, -1, -1, 0)]
