"""verify --repair scans each segment once before the repair: the repair writes the indexes that
scan rebuilt instead of scanning the log again, and they are byte for byte what a rescan
(`index rebuild`, a resumed repair) writes."""

from __future__ import annotations

import shutil
from collections import Counter
from pathlib import Path

import pytest

from kseg.format.batch import HEADER_SIZE
from kseg.format.log import walk_headers
from kseg.index import rebuild
from kseg.repair.run import RepairRun
from kseg.storage.tree import segment_logs
from kseg.verify import partition
from kseg.verify.run import VerifyOptions


def _tree(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }


def _flip_in_batch(log: Path, n: int) -> int:
    """Flip one record byte of the n-th batch of ``log`` (its CRC then fails); its position."""
    pos = list(walk_headers(log.read_bytes()))[n][0]
    with open(log, "r+b") as f:
        f.seek(pos + HEADER_SIZE + 1)
        b = f.read(1)
        f.seek(pos + HEADER_SIZE + 1)
        f.write(bytes([b[0] ^ 0xFF]))
    return pos


def _damaged_txn_partition(tree: Path, dest: Path) -> Path:
    """txn-0 (aborted transactions in two segments) with the second segment's third batch
    damaged and the first segment's offset index missing: two segments to rebuild."""
    pdir = dest / "logs" / "txn-0"
    shutil.copytree(tree / "txn-0", pdir)
    logs = segment_logs(pdir)
    assert len(logs) >= 3 and logs[1].with_suffix(".txnindex").exists()
    _flip_in_batch(logs[1], 2)
    logs[0].with_suffix(".index").unlink()
    return pdir


def _repair(pdir: Path, **kw) -> RepairRun:
    run = RepairRun(VerifyOptions(repair=True, quarantine=pdir.parent.parent / "q", **kw))
    evs = list(run.events([pdir]))
    assert [e for e in evs if e["type"] == "repair_done"], evs
    return run


@pytest.mark.parametrize("keep_later", [False, True])
def test_repair_scans_each_segment_once_before_repairing(tree, tmp_path, monkeypatch, keep_later):
    pdir = _damaged_txn_partition(tree, tmp_path)
    n_before = len(segment_logs(pdir))
    scans: Counter = Counter()
    rescans: Counter = Counter()
    verify_scan, rebuild_scan = partition.scan_segment, rebuild.scan_segment

    def counted(counter):
        def scan(log, **kw):
            counter[Path(log).name] += 1
            return (verify_scan if counter is scans else rebuild_scan)(log, **kw)

        return scan

    monkeypatch.setattr(partition, "scan_segment", counted(scans))
    monkeypatch.setattr(rebuild, "scan_segment", counted(rescans))
    _repair(pdir, keep_later_segments=keep_later)
    assert not rescans  # the repair rebuilt nothing by scanning again
    # once to verify, once to report what remains after the repair; nothing more
    assert set(scans.values()) <= {1, 2} and len(scans) == n_before
    assert sum(scans.values()) == n_before + len(segment_logs(pdir))


@pytest.mark.parametrize("keep_later", [False, True])
def test_carried_indexes_equal_a_rescan(tree, tmp_path, monkeypatch, keep_later):
    carried = _damaged_txn_partition(tree, tmp_path / "carried")
    _repair(carried, keep_later_segments=keep_later)

    rescanned = _damaged_txn_partition(tree, tmp_path / "rescanned")
    with monkeypatch.context() as m:  # the path of a resumed repair: no carried bytes
        real = partition.verify_target
        m.setattr(
            "kseg.verify.run.verify_target",
            lambda t, **kw: real(t, **{**kw, "replay_txns": False}),
        )
        _repair(rescanned, keep_later_segments=keep_later)
    got, want = _tree(carried), _tree(rescanned)
    assert got == want
    # the rebuild did happen: the missing index is back, the damaged segment's txnindex holds
    # the aborted transactions of the kept prefix
    assert any(k.endswith("00000000000000000000.index") for k in got)
    assert any(k.endswith(".txnindex") and v for k, v in got.items())
