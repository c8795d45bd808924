"""storage.Partition: ordered segments, log start/end, epochs, offset -> position lookups."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import kseg.storage.segment as segment_mod
from kseg.fixtures import PARTITIONS
from kseg.format.checkpoint import TopicPartitionOffset, encode_offset_checkpoint
from kseg.storage.partition import Partition
from kseg.storage.segment import OFFSET_INDEX, Segment
from kseg.storage.tree import segment_logs


def _batches(part: Partition):
    return [(seg, b) for seg in part.segments for b in seg.batches()]


def test_segments_in_offset_order_with_names(tree):
    for name in PARTITIONS:
        part = Partition(tree / name)
        topic, n = name.rsplit("-", 1)
        assert (part.topic, part.partition, part.state) == (topic, int(n), None)
        assert [s.log for s in part.segments] == segment_logs(tree / name)
        bases = [s.base_offset for s in part.segments]
        assert bases == sorted(bases) and len(set(bases)) == len(bases)


def test_log_start_and_end_agree_with_a_scan(tree):
    for name in PARTITIONS:
        part = Partition(tree / name)
        batches = _batches(part)
        assert part.log_end_offset() == batches[-1][1].last_offset + 1, name
        # the fixture tree's log-start-offset-checkpoint says 0 for every partition
        assert part.checkpointed_log_start() == 0
        assert part.log_start_offset() == part.segments[0].base_offset


def test_log_start_follows_the_checkpoint(tree, tmp_path):
    pdir = tmp_path / "logs" / "orders-0"
    shutil.copytree(tree / "orders-0", pdir)
    part = Partition(pdir)
    assert part.checkpointed_log_start() is None  # no checkpoint beside it
    (pdir.parent / "log-start-offset-checkpoint").write_bytes(
        encode_offset_checkpoint([TopicPartitionOffset("orders", 0, 17)])
    )
    assert part.checkpointed_log_start() == 17 and part.log_start_offset() == 17


def test_offset_lookups_agree_with_a_brute_force_scan(tree):
    for name in PARTITIONS:
        part = Partition(tree / name)
        batches = _batches(part)
        for seg, b in batches:
            for off in {b.last_offset, *(r.offset for r in b.records())}:
                assert part.segment_for(off) is seg, (name, off)
                got = next(x for x in part.batches_for(seg, off) if x.last_offset >= off)
                assert got.position == b.position, (name, off)
        assert part.warnings == [] and part.problems == [], name
        assert part.segment_for(part.segments[0].base_offset - 1) is None


def test_time_lookups_agree_with_a_brute_force_scan(tree):
    for name in PARTITIONS:
        part = Partition(tree / name)
        batches = _batches(part)
        for seg in part.segments:
            stamps = [r.timestamp for s, b in batches if s is seg for r in b.records()]
            assert part.max_timestamp(seg) == max(
                b.max_timestamp for s, b in batches if s is seg
            ), (name, seg)
            for t in sorted(set(stamps)):
                start = part.time_start_offset(seg, t)
                first = next(b for s, b in batches if s is seg and b.max_timestamp >= t)
                assert first.last_offset >= start, (name, seg, t)


def test_each_index_is_opened_once_per_partition(tree, monkeypatch):
    opened: list[Path] = []
    real_map = segment_mod.map_file
    monkeypatch.setattr(segment_mod, "map_file", lambda p: opened.append(p) or real_map(p))
    part = Partition(tree / "orders-0")
    assert opened == []
    for _ in range(3):
        part.log_end_offset()
        for seg in part.segments:
            part.max_timestamp(seg)
            part.start_position(seg, seg.base_offset + 5)
    assert sorted(opened) == sorted(set(opened)) and opened


def test_a_lying_index_costs_a_scan_and_is_invalid_data(tree, tmp_path):
    """Segment.start_for: an offset-index entry pointing past the log is not followed; the
    problem names the index file and the entry's byte, and the scan starts at 0."""
    pdir = tmp_path / "logs" / "orders-0"
    shutil.copytree(tree / "orders-0", pdir)
    seg = Partition(pdir).segments[0]
    path = seg.file(OFFSET_INDEX)
    data = bytearray(path.read_bytes())
    assert len(data) >= 8
    data[4:8] = (seg.size() + 100).to_bytes(4, "big")  # entry 0 points past the log
    path.write_bytes(bytes(data))
    part = Partition(pdir)
    seg = part.segments[0]
    target = Segment(seg.log).index(OFFSET_INDEX).view.entry(0).offset
    found = next(b for b in part.batches_for(seg, target))
    assert found.position == 0
    assert part.warnings == []
    (problem,) = part.problems
    assert (problem.kind, problem.file, problem.position) == ("invalid_index", str(path), 0)
    assert f"position {seg.size() + 100} is at or past the end of the {seg.size()}-byte log" in (
        problem.message
    )


def test_leader_epochs(tree, tmp_path):
    part = Partition(tree / "orders-0")
    entries = part.leader_epochs()
    assert entries and all(e.start_offset >= 0 for e in entries)
    with pytest.raises(FileNotFoundError):
        Partition(tmp_path).leader_epochs()


def test_not_a_partition_dir_and_an_empty_one(tmp_path):
    part = Partition(tmp_path)
    assert (part.topic, part.partition, part.segments) == (None, None, [])
    assert part.log_start_offset() == 0 and part.log_end_offset() == 0


def test_real_partitions(real_root):
    pdirs = sorted({p.parent for p in real_root.rglob("*.log")})
    assert pdirs
    for pdir in pdirs:
        part = Partition(pdir)
        batches = _batches(part)
        if not batches:
            continue
        assert part.log_end_offset() == batches[-1][1].last_offset + 1, pdir
        for seg, b in batches[:: max(1, len(batches) // 25)]:
            assert part.segment_for(b.last_offset) is seg
            got = next(
                x for x in part.batches_for(seg, b.last_offset) if x.last_offset >= b.last_offset
            )
            assert got.position == b.position, (pdir, b.last_offset)
