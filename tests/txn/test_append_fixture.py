"""kseg.fixtures.append: one batch appended at the log end of an existing partition dir (what the
real-broker test uses to make a hanging transaction in a stopped broker's partition)."""

from __future__ import annotations

import pytest

from kseg.fixtures.append import append_batch
from kseg.format import batch as v2
from kseg.format.errors import KsegError
from kseg.format.record import Record
from kseg.storage.partition import Partition
from kseg.storage.segment import read_batches
from kseg.storage.writer import LogWriter
from tests.helpers import events, run_kseg


def _partition(tmp_path, segment_bytes: int = 1 << 30):
    pdir = tmp_path / "t-0"
    with LogWriter(pdir, partition_leader_epoch=3, segment_bytes=segment_bytes,
                   clock=lambda: 1_000) as w:  # fmt: skip
        for i in range(4):
            w.append([Record(b"k", bytes([i]) * 50)])
    return pdir


def test_the_batch_goes_at_the_log_end_of_the_last_segment(tmp_path):
    pdir = _partition(tmp_path, segment_bytes=200)
    logs = sorted(pdir.glob("*.log"))
    assert len(logs) > 1
    info = append_batch(pdir, [Record(b"a", b"1"), Record(b"b", b"2", 7)], producer_id=42,
                        producer_epoch=5, base_sequence=0, transactional=True,
                        timestamp=2_000)  # fmt: skip
    assert (info.base_offset, info.last_offset, info.segment) == (4, 5, logs[-1])
    last = list(read_batches(logs[-1]))[-1]
    assert (last.base_offset, last.position, last.size) == (4, info.position, info.size)
    assert (last.producer_id, last.producer_epoch, last.is_transactional) == (42, 5, True)
    assert last.partition_leader_epoch == 3  # the log's last batch's
    assert [(r.offset, r.timestamp) for r in last.records()] == [(4, 2_000), (5, 7)]
    assert Partition(pdir).log_end_offset() == 6
    # the segment's offset and time indexes are gone (rebuilt by Kafka), the others kept
    base = logs[-1].stem
    assert not (pdir / f"{base}.index").exists() and not (pdir / f"{base}.timeindex").exists()
    assert (pdir / f"{logs[0].stem}.index").exists()


def test_kseg_reads_the_appended_batch_cleanly(tmp_path):
    pdir = _partition(tmp_path)
    append_batch(pdir, [Record(b"x", b"y")], producer_id=7, producer_epoch=0, base_sequence=0,
                 transactional=True, timestamp=5_000)  # fmt: skip
    proc = run_kseg("verify", pdir, "-f", "json")
    assert proc.returncode == 0, proc.stdout.decode() + proc.stderr.decode()
    proc = run_kseg("dump", pdir, "-f", "json")
    recs = [e for e in events(proc.stdout) if e["type"] == "record"]
    assert [r["offset"] for r in recs] == [0, 1, 2, 3, 4]


def test_refuses_what_it_cannot_append_after(tmp_path):
    pdir = _partition(tmp_path)
    log = next(pdir.glob("*.log"))
    with open(log, "ab") as f:
        f.write(b"\0" * 12)
    with pytest.raises(KsegError, match="byte 476: 12 zero bytes"):
        append_batch(pdir, [Record(b"x", b"y")], timestamp=1)
    empty = tmp_path / "e-0"
    empty.mkdir()
    with pytest.raises(KsegError, match="no segment"):
        append_batch(empty, [Record(b"x", b"y")], timestamp=1)


def test_never_writes_through_a_symlink(tmp_path):
    pdir = _partition(tmp_path)
    log = next(pdir.glob("*.log"))
    real = tmp_path / "elsewhere.log"
    log.rename(real)
    log.symlink_to(real)
    size = real.stat().st_size
    with pytest.raises(KsegError, match="symlink"):
        append_batch(pdir, [Record(b"x", b"y")], producer_id=v2.NO_PRODUCER_ID, timestamp=1)
    assert real.stat().st_size == size
