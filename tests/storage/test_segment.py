"""storage.Segment: names, state, the .log reader, and indexes opened and checked once, lazily."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import kseg.storage.segment as segment_mod
from kseg.fixtures import PARTITIONS
from kseg.format.offset_index import OffsetIndex
from kseg.seek.seek import seek_time
from kseg.storage import files as F
from kseg.storage.segment import OFFSET_INDEX, TIME_INDEX, TXN_INDEX, Segment, read_batches
from kseg.storage.tree import segment_logs
from kseg.verify.segment import scan_segment


def _segments(pdir: Path) -> list[Segment]:
    return [Segment(p) for p in segment_logs(pdir)]


def _copy(tree: Path, name: str, tmp_path: Path) -> Path:
    dest = tmp_path / "logs" / name
    shutil.copytree(tree / name, dest)
    return dest


def test_names_base_offset_and_state(tmp_path):
    seg = Segment(tmp_path / "00000000000000000042.log")
    assert seg.base_offset == 42 and seg.state is None and seg.temp_suffix == ""
    assert seg.file(OFFSET_INDEX) == tmp_path / "00000000000000000042.index"
    assert seg.file(TIME_INDEX) == tmp_path / "00000000000000000042.timeindex"
    assert seg.file(TXN_INDEX) == tmp_path / "00000000000000000042.txnindex"
    assert Path(seg) == seg.log == tmp_path / "00000000000000000042.log"
    # any of its files names the segment; a renamed segment's files all carry the suffix
    deleted = Segment(tmp_path / "00000000000000000007.timeindex.deleted")
    assert deleted.base_offset == 7 and deleted.state == "deleted"
    assert deleted.log == tmp_path / "00000000000000000007.log.deleted"
    assert deleted.file(OFFSET_INDEX) == tmp_path / "00000000000000000007.index.deleted"
    assert Segment(tmp_path / "00000000000000000001.index.swap").state == "swap"
    for bad in ("orders.log", "42.log", "00000000000000000042.txt", "leader-epoch-checkpoint"):
        with pytest.raises(ValueError, match="not a segment file name"):
            Segment(tmp_path / bad)


def test_log_size_and_batches_agree_with_read_batches(tree):
    for name in PARTITIONS:
        for seg in _segments(tree / name):
            assert seg.size() == seg.log.stat().st_size == seg.log_size()
            got = [(b.position, b.last_offset) for b in seg.batches()]
            assert got == [(b.position, b.last_offset) for b in read_batches(seg.log)]
            assert got, seg


def test_nothing_is_opened_until_asked_and_each_index_once(tree, monkeypatch):
    opened: list[Path] = []
    real_map, real_read = segment_mod.map_file, segment_mod.read_slices
    monkeypatch.setattr(segment_mod, "map_file", lambda p: opened.append(p) or real_map(p))
    monkeypatch.setattr(segment_mod, "read_slices", lambda p: opened.append(p) or real_read(p))
    checks = []
    real_check = OffsetIndex.sanity_check
    monkeypatch.setattr(
        OffsetIndex, "sanity_check", lambda self: checks.append(1) or real_check(self)
    )

    seg = _segments(tree / "orders-0")[0]
    assert opened == [] and checks == []
    offsets = [b.last_offset for b in seg.batches()]
    assert opened == []  # the .log goes through storage.mapped, never the index opener
    for off in offsets:
        assert seg.start_for(off).problem is None
        seg.offset_for_time(0)
    assert seg.offset_index() is seg.offset_index() is not None
    assert opened == [seg.file(OFFSET_INDEX), seg.file(TIME_INDEX)]
    assert len(checks) == 1


def test_verify_reads_indexes_once_never_mapped(tree, monkeypatch):
    """verify reads indexes in slices on demand (storage.mapped.FileSlices: a broker may
    shrink one meanwhile, and a 4 GiB index must not cost its size), each once."""
    opened: list[Path] = []
    real_map, real_read = segment_mod.map_file, segment_mod.read_slices
    monkeypatch.setattr(segment_mod, "map_file", lambda p: opened.append(("map", p)) or real_map(p))
    monkeypatch.setattr(
        segment_mod, "read_slices", lambda p: opened.append(("read", p)) or real_read(p)
    )
    log = segment_logs(tree / "orders-0")[0]
    scan = scan_segment(log)
    assert {scan.offset_index.status, scan.time_index.status} <= {"identical", "equivalent"}
    idx, tidx = log.with_suffix(".index"), log.with_suffix(".timeindex")
    assert opened == [("read", idx), ("read", tidx)]


def _log_and_index(tree: Path, tmp_path: Path) -> tuple[Path, Segment]:
    pdir = _copy(tree, "orders-0", tmp_path)
    return pdir, _segments(pdir)[0]


def test_missing_index_is_one_text_for_every_reader(tree, tmp_path):
    pdir, seg = _log_and_index(tree, tmp_path)
    seg.file(OFFSET_INDEX).unlink()
    idx = Segment(seg.log).index(OFFSET_INDEX)
    assert idx.missing and idx.view is None and not idx.usable
    assert idx.warning() == f"{seg.file(OFFSET_INDEX)}: missing; scanning the segment instead"
    assert Segment(seg.log).offset_index() is None
    assert Segment(seg.log).start_for(10**6).position == 0  # no index: scan from the start
    res = seek_time(pdir, 0)
    assert idx.warning() in res.warnings
    assert scan_segment(seg.log).offset_index.status == "missing"


def test_unusable_index_is_one_text_for_every_reader(tree, tmp_path):
    pdir, seg = _log_and_index(tree, tmp_path)
    path = seg.file(OFFSET_INDEX)
    size = path.stat().st_size
    with path.open("ab") as f:
        f.write(b"\x00\x01\x02")  # a partial entry: Kafka's sanity check fails
    idx = Segment(seg.log).index(OFFSET_INDEX)
    assert idx.view is not None and idx.error is None and not idx.usable
    assert idx.problem.position == size
    assert idx.warning() == (f"{path}: unusable ({idx.problem}); scanning the segment instead")
    assert "is not a multiple of 8" in idx.warning()
    assert Segment(seg.log).offset_index() is None
    res = seek_time(pdir, 0)
    assert idx.warning() in res.warnings
    scan = scan_segment(seg.log)
    assert scan.offset_index.status == "wrong"
    assert scan.offset_index.first_difference["position"] == size


def test_unreadable_index_says_why(tree, tmp_path):
    pdir, seg = _log_and_index(tree, tmp_path)
    path = seg.file(TIME_INDEX)
    path.unlink()
    path.mkdir()  # a directory where the time index should be
    idx = Segment(seg.log).index(TIME_INDEX)
    assert idx.error is not None and not idx.missing and idx.view is None
    assert idx.warning() == f"{path}: unusable ({idx.error}); scanning the segment instead"
    assert "not a regular file" in idx.warning()
    # verify names the file it could not read
    with pytest.raises(OSError) as info:
        scan_segment(seg.log)
    assert info.value.filename == str(path)


def test_offset_lookup_agrees_with_a_brute_force_scan(tree):
    for name in PARTITIONS:
        for seg in _segments(tree / name):
            batches = list(seg.batches())
            for b in batches:
                for off in {b.last_offset, b.last_offset - 1, *(r.offset for r in b.records())}:
                    want = next(x.position for x in batches if x.last_offset >= off)
                    start = seg.start_for(off).position
                    assert start <= want, (name, off)
                    # a batch starts there, and none between it and the answer holds the offset
                    got = next(x for x in seg.batches(start=start) if x.last_offset >= off)
                    assert got.position == want, (name, seg, off)


def test_time_lookup_agrees_with_a_brute_force_scan(tree):
    for name in PARTITIONS:
        for seg in _segments(tree / name):
            batches = list(seg.batches())
            stamps = sorted({r.timestamp for b in batches for r in b.records()})
            for t in [*stamps, stamps[0] - 1, stamps[-1] + 1]:
                start = seg.offset_for_time(t)
                assert start >= seg.base_offset
                first = next(
                    (b for b in batches if any(r.timestamp >= t for r in b.records())), None
                )
                if first is not None:  # scanning from the answer cannot miss the first match
                    assert first.last_offset >= start, (name, seg, t)


def test_txn_index_entries(tree):
    found = 0
    for seg in _segments(tree / "txn-0"):
        if seg.file(TXN_INDEX).exists():
            entries = list(seg.aborted_transactions())
            assert entries and seg.index(TXN_INDEX).usable
            assert all(seg.base_offset <= e.last_offset for e in entries)
            found += len(entries)
    assert found
    missing = _segments(tree / "orders-0")[0]
    with pytest.raises(FileNotFoundError):
        list(missing.aborted_transactions())
    assert missing.index(TXN_INDEX).missing


def test_real_segments_open_their_indexes(real_root):
    logs = [p for p in real_root.rglob("*.log") if F.file_kind(p).kind == F.LOG]
    assert logs
    for log in logs:
        seg = Segment(log)
        for kind in (OFFSET_INDEX, TIME_INDEX):
            idx = seg.index(kind)
            assert idx.usable or idx.missing, idx.warning()
        batches = list(seg.batches())
        for b in batches[:: max(1, len(batches) // 20)]:
            got = next(
                x
                for x in seg.batches(start=seg.start_for(b.last_offset).position)
                if x.last_offset >= b.last_offset
            )
            assert got.position == b.position, (log, b.last_offset)


def test_verify_holds_one_segments_indexes_at_a_time(tree, monkeypatch):
    import kseg.verify.partition as vp
    from kseg.storage.tree import Target

    pdir = tree / "orders-0"
    seen: list[Segment] = []
    held: list[int] = []
    real = vp.scan_segment

    def spy(seg, **kw):
        held.append(sum(1 for s in seen if s._indexes))  # earlier segments still holding theirs
        seen.append(seg)
        return real(seg, **kw)

    monkeypatch.setattr(vp, "scan_segment", spy)
    report = vp.verify_target(Target(pdir, segment_logs(pdir)))
    assert len(report.scans) == len(seen) > 1
    assert held == [0] * len(seen)
    assert not any(s._indexes for s in seen)
