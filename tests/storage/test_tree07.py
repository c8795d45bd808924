"""A Kafka 0.7 log dir is recognised by its content: `.kafka` segments make a partition dir."""

from __future__ import annotations

from pathlib import Path

import pytest

from kseg.fixtures.kafka07 import build_kafka07_tree
from kseg.storage import files as F
from kseg.storage import tree
from kseg.storage.kafka07 import Partition07


@pytest.fixture(scope="module")
def log07(tmp_path_factory) -> Path:
    return build_kafka07_tree(tmp_path_factory.mktemp("k07") / "logs")


def test_file_kinds():
    assert F.file_kind("00000000000000012345.kafka") == F.FileKind(F.KAFKA07, 12345)
    assert F.file_kind(".kafka_cleanshutdown").kind == F.CLEAN_SHUTDOWN
    assert F.file_kind("12345.kafka").kind == F.UNKNOWN  # not 20 digits
    assert F.file_kind("00000000000000012345.kafka.deleted").kind == F.UNKNOWN


def test_root_partition_and_file_layouts(log07):
    lay = tree.layout(str(log07))
    assert lay.kind == tree.ROOT
    assert sorted(Path(p).name for _, p, _ in lay.partitions) == ["clicks-1", "events-0"]
    sel = tree.resolve([log07], logs_only=True)
    targets = sel.targets()
    assert [t.partition_dir.name for t in targets] == ["clicks-1", "events-0"]
    assert all(t.kafka07 for t in targets)
    ev = targets[1]
    assert len(ev.logs) > 2 and all(p.suffix == ".kafka" for p in ev.logs)
    assert [F.file_kind(p).base_offset for p in ev.logs] == sorted(
        F.file_kind(p).base_offset for p in ev.logs
    )
    # a partition given directly, and one .kafka file (verify/seek take it)
    assert tree.layout(str(log07 / "events-0")).kind == tree.PARTITION
    one = tree.resolve([ev.logs[1]], logs_only=True).targets()
    assert one[0].kafka07 and one[0].logs == [ev.logs[1]]


def test_root_without_clean_shutdown_is_found_by_its_partitions(tmp_path):
    root = build_kafka07_tree(tmp_path / "crashed", clean_shutdown=False)
    assert tree.layout(str(root)).kind == tree.ROOT
    assert tree.layout(str(tmp_path)).kind == tree.ROOTS  # a directory of roots


def test_an_empty_partition_dir_is_not_a_07_one(tmp_path):
    (tmp_path / "t-0").mkdir()
    (t,) = tree.resolve([tmp_path / "t-0"], logs_only=True).targets()
    assert t.logs == [] and not t.kafka07


def test_contiguity(log07):
    part = Partition07(log07 / "events-0")
    assert part.gaps() == []
    assert part.log_start_offset == 0
    assert part.log_end_offset == sum(s.size for s in part.segments)
    s = part.segments[1]
    assert (
        part.segment_for(s.base_offset) is s
        and part.segment_for(s.base_offset - 1) is part.segments[0]
    )
