"""kseg index rebuild / check: byte-identical to Kafka's recovery rule, classification of indexes."""

from __future__ import annotations

import struct
import subprocess
import sys
import time
from pathlib import Path

import pytest
from kafka.record import MemoryRecords

import kseg
from kseg.fixtures.tree import BASE_TS, FixedClock, _records
from kseg.format import offset_index as oi
from kseg.format import time_index as ti
from kseg.index.rebuild import rebuild_target
from kseg.storage.tree import Target, segment_logs
from kseg.verify.index_check import TIME_RULE_EMPTIED
from kseg.verify.segment import scan_segment
from tests.helpers import copy_partition, events, run_cli

INTERVALS = {
    "orders-0": 1024,
    "orders-1": 1024,
    "upgrade-0": 512,
    "txn-0": 1024,
    "logappend-0": 256,
    "compacted-0": 128,
}


def independent_rebuild(log: Path, interval: int) -> tuple[bytes, bytes]:
    """Kafka's LogSegment.recover rule transcribed from FORMATS.md, walking with kafka-python."""
    data = log.read_bytes()
    base = int(log.name[:20])
    records = MemoryRecords(data)
    valid = last_entry = 0
    max_ts, max_ts_off = -1, base
    oidx, tidx = bytearray(), bytearray()
    last_time = -1
    while records.has_next():
        batch = records.next_batch()
        if batch.magic == 2:
            last_offset, batch_max, size = (
                batch.last_offset,
                batch.max_timestamp,
                batch.size_in_bytes,
            )
        else:
            last_offset, size = batch.base_offset, batch.size_in_bytes
            batch_max = -1 if batch.magic == 0 else batch._timestamp
        if batch_max > max_ts:
            max_ts, max_ts_off = batch_max, last_offset
        if valid - last_entry > interval:
            oidx += struct.pack(">ii", last_offset - base, valid)
            if max_ts > last_time:
                tidx += struct.pack(">qi", max_ts, max_ts_off - base)
                last_time = max_ts
            last_entry = valid
        valid += size
    if max_ts > last_time:
        tidx += struct.pack(">qi", max_ts, max_ts_off - base)
    return bytes(oidx), bytes(tidx)


def test_rebuild_equals_what_the_writer_wrote(tree):
    for name, interval in INTERVALS.items():
        for log in segment_logs(tree / name):
            scan = scan_segment(log, index_interval_bytes=interval)
            assert scan.offset_index.status == "identical", log
            assert scan.time_index.status == "identical", log
            written = log.with_suffix(".index").read_bytes().rstrip(b"\0")
            assert bytes(scan.rebuilt.offset_index) == written[: len(scan.rebuilt.offset_index)]


@pytest.mark.parametrize("interval", [0, 1, 100, 700, 4096])
def test_rebuild_equals_an_independent_implementation(tree, interval):
    for name in INTERVALS:
        for log in segment_logs(tree / name):
            scan = scan_segment(log, index_interval_bytes=interval, check_indexes=False)
            want_o, want_t = independent_rebuild(log, interval)
            assert bytes(scan.rebuilt.offset_index) == want_o, (log, interval)
            assert bytes(scan.rebuilt.time_index) == want_t, (log, interval)


@pytest.mark.parametrize("interval", [0, 1, 300])
def test_writer_and_rebuild_agree_for_any_interval(tmp_path, interval):
    pdir = tmp_path / f"t{interval}-0"
    with kseg.LogWriter(
        pdir, index_interval_bytes=interval, segment_bytes=4000, clock=FixedClock()
    ) as w:
        for b in range(30):
            w.append(_records(b * 3, 3, BASE_TS - b * 50), compression=["none", "zstd"][b % 2])
    for log in segment_logs(pdir):
        scan = scan_segment(log, index_interval_bytes=interval)
        assert (scan.offset_index.status, scan.time_index.status) == ("identical", "identical")


def test_rebuild_cli_writes_identical_files_and_txnindex(tree, tmp_path, monkeypatch, capsysbinary):
    pdir = copy_partition(tree / "txn-0", tmp_path)
    originals = {
        p.name: p.read_bytes()
        for p in pdir.iterdir()
        if p.suffix in (".index", ".timeindex", ".txnindex")
    }
    assert any(n.endswith(".txnindex") for n in originals)
    for p in pdir.iterdir():
        if p.suffix in (".index", ".timeindex", ".txnindex"):
            p.unlink()
    code, out, err = run_cli(
        monkeypatch,
        capsysbinary,
        "index",
        "rebuild",
        pdir,
        "--index-interval-bytes",
        "1024",
        "-f",
        "json",
    )
    assert code == 0, err
    evs = events(out)
    assert evs[-1]["type"] == "summary" and evs[-1]["files_changed"] == len(originals)
    rebuilt = {
        p.name: p.read_bytes()
        for p in pdir.iterdir()
        if p.suffix in (".index", ".timeindex", ".txnindex")
    }
    assert rebuilt == originals
    # a second run changes nothing
    code, out, _ = run_cli(
        monkeypatch,
        capsysbinary,
        "index",
        "rebuild",
        pdir,
        "--index-interval-bytes",
        "1024",
        "-f",
        "json",
    )
    assert code == 0 and events(out)[-1]["files_changed"] == 0


def test_txnindex_for_a_transaction_spanning_segments(tree, tmp_path):
    pdir = copy_partition(tree / "txn-0", tmp_path)
    results = rebuild_target(
        Target(pdir, segment_logs(pdir)), index_interval_bytes=1024, dry_run=True
    )
    aborted = [a for r in results for a in r.scan.aborted]
    spanning = [a for a in aborted if a.producer_id == 9]
    assert len(spanning) == 1
    first_segment = max(
        b for b in (int(p.name[:20]) for p in segment_logs(pdir)) if b <= spanning[0].first_offset
    )
    marker_segment = max(
        b for b in (int(p.name[:20]) for p in segment_logs(pdir)) if b <= spanning[0].last_offset
    )
    assert first_segment < marker_segment
    # rebuilding only the last segment still replays the whole partition for the first offset
    only_last = rebuild_target(
        Target(pdir, segment_logs(pdir)[-1:]), index_interval_bytes=1024, dry_run=True
    )
    assert [a for r in only_last for a in r.scan.aborted] == [
        a for a in aborted if a.last_offset >= marker_segment
    ]


def test_preallocate_and_dry_run_and_backup(tree, tmp_path, monkeypatch, capsysbinary):
    pdir = copy_partition(tree / "orders-1", tmp_path)
    before = {p.name: p.read_bytes() for p in pdir.iterdir()}
    code, out, _ = run_cli(
        monkeypatch, capsysbinary, "index", "rebuild", pdir, "--dry-run", "--preallocate"
    )
    assert code == 0 and "would change" in out
    assert {p.name: p.read_bytes() for p in pdir.iterdir()} == before
    backup = tmp_path / "backup"
    code, out, _ = run_cli(
        monkeypatch, capsysbinary, "index", "rebuild", pdir, "--preallocate", "--backup", backup
    )
    assert code == 0
    logs = segment_logs(pdir)
    assert logs[-1].with_suffix(".index").stat().st_size == oi.DEFAULT_MAX_INDEX_SIZE
    assert logs[-1].with_suffix(".timeindex").stat().st_size == ti.DEFAULT_MAX_INDEX_SIZE
    assert logs[0].with_suffix(".index").stat().st_size < 100
    saved = {p.name: p.read_bytes() for p in (backup / pdir.name).iterdir()}
    assert saved and all(before[n] == b for n, b in saved.items())


def test_rebuild_stops_at_corruption_and_says_so(corrupt_cases, monkeypatch, capsysbinary):
    case = next(c for c in corrupt_cases if c.name == "crc-flip")
    code, out, _ = run_cli(
        monkeypatch, capsysbinary, "index", "rebuild", case.file, "--dry-run", "-f", "json"
    )
    ev = events(out)[0]
    assert code == 4 and ev["valid_bytes"] == case.valid_bytes
    assert ev["error"]["kind"] == "crc_mismatch" and ev["error"]["position"] == case.position


def test_refuses_when_a_broker_holds_the_lock(tree, tmp_path, monkeypatch, capsysbinary):
    root = tmp_path / "logs"
    pdir = copy_partition(tree / "compacted-0", root)
    (root / ".lock").write_bytes(b"")
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import fcntl,os,sys,time; fd=os.open(sys.argv[1], os.O_RDWR); fcntl.lockf(fd, fcntl.LOCK_EX); print('held', flush=True); time.sleep(60)",
            str(root / ".lock"),
        ],
        stdout=subprocess.PIPE,
    )
    try:
        assert holder.stdout.readline().strip() == b"held"
        code, _, err = run_cli(monkeypatch, capsysbinary, "index", "rebuild", pdir)
        assert code == 8 and ".lock is held" in err
        code, _, _ = run_cli(monkeypatch, capsysbinary, "index", "rebuild", pdir, "--force")
        assert code == 0
    finally:
        holder.kill()
        holder.wait()
    time.sleep(0.05)
    assert run_cli(monkeypatch, capsysbinary, "index", "rebuild", pdir)[0] == 0


# --- index check: identical / equivalent / wrong / missing -----------------------------------


def _single(tmp_path, n=12, interval=200):
    pdir = tmp_path / "c-0"
    infos = []
    with kseg.LogWriter(pdir, index_interval_bytes=interval, clock=FixedClock()) as w:
        for b in range(n):
            infos.append(w.append(_records(b * 4, 4, BASE_TS + b * 10)))
    return pdir, pdir / "00000000000000000000.log", infos


def _write_index(log, pairs):
    log.with_suffix(".index").write_bytes(b"".join(struct.pack(">ii", o, p) for o, p in pairs))


def _write_tindex(log, pairs):
    log.with_suffix(".timeindex").write_bytes(b"".join(struct.pack(">qi", t, o) for t, o in pairs))


def _check(log, interval=200):
    scan = scan_segment(log, index_interval_bytes=interval)
    return scan.offset_index, scan.time_index


def test_live_multi_batch_append_index_is_equivalent(tmp_path):
    _, log, infos = _single(tmp_path)
    # one entry per "append" of three batches: (last offset of the third batch, start of the first)
    _write_index(log, [(infos[i + 2].last_offset, infos[i].position) for i in (3, 6)])
    o, _ = _check(log)
    assert o.status == "equivalent"


def test_first_offset_rule_offset_index_is_equivalent(tmp_path):
    # Kafka 0.8-0.11 name an offset inside the batch at the position (its first): lookups hold
    _, log, infos = _single(tmp_path)
    _write_index(log, [(infos[3].last_offset - 1, infos[3].position)])
    o, _ = _check(log)
    assert (o.status, o.rule) == ("equivalent", "0.8-0.11")


def test_record_level_time_index_offsets_are_equivalent(tmp_path):
    _, log, infos = _single(tmp_path)
    # a leader names the record that carries the max timestamp (inside the batch)
    rec_ts = [(r.offset, r.timestamp) for b in kseg.read_batches(log) for r in b.records()]
    best = max(rec_ts, key=lambda x: x[1])
    first_of_batch5 = infos[5].base_offset
    ts5 = max(t for o, t in rec_ts if infos[5].base_offset <= o <= infos[5].last_offset)
    _write_tindex(log, [(ts5, first_of_batch5 + 3), (best[1], best[0])])
    _, t = _check(log)
    assert t.status == "equivalent", t.first_difference


@pytest.mark.parametrize(
    ("make", "fragment"),
    [
        (lambda infos: [(infos[3].last_offset, infos[3].position + 1)], "not a batch boundary"),
        # an offset of the batch BEFORE the position: lookups would skip its last records
        (lambda infos: [(infos[2].last_offset, infos[3].position)], "below the last offset"),
        (
            lambda infos: [
                (infos[5].last_offset, infos[5].position),
                (infos[4].last_offset, infos[6].position),
            ],
            "does not increase",
        ),
        (
            lambda infos: [(infos[-1].last_offset + 9, infos[-1].position + infos[-1].size + 100)],
            "past the end",
        ),
        (
            lambda infos: [(infos[3].last_offset + 1, infos[3].position)],
            "not the last offset of any batch",
        ),
    ],
)
def test_wrong_offset_indexes(tmp_path, make, fragment):
    _, log, infos = _single(tmp_path)
    _write_index(log, make(infos))
    o, _ = _check(log)
    assert o.status == "wrong" and fragment in o.first_difference["message"]


def test_wrong_time_indexes(tmp_path):
    _, log, infos = _single(tmp_path)
    segment_max = max(i for i in [b.max_timestamp for b in kseg.read_batches(log)])
    _write_tindex(log, [(segment_max - 5, infos[-1].last_offset)])  # T is not that batch's max
    assert _check(log)[1].status == "wrong"
    batch5_max = [b.max_timestamp for b in kseg.read_batches(log)][5]
    _write_tindex(
        log, [(batch5_max, infos[5].last_offset)]
    )  # valid entry, but short of the segment max
    t = _check(log)[1]
    assert t.status == "wrong" and "skip this segment" in t.first_difference["message"]
    # an empty inactive time index hides the segment from lookups, but Kafka rolls a segment so
    # after a follower's truncation (seen on a real 4.1 follower): equivalent, the rule says so
    _write_tindex(log, [])
    t = _check(log)[1]
    assert (t.status, t.rule) == ("equivalent", TIME_RULE_EMPTIED), t
    assert "lookups skip this segment" in t.first_difference["message"]
    log.with_suffix(".timeindex").write_bytes(bytes(120))  # preallocated and empty: fine
    assert _check(log)[1].status == "equivalent"
    log.with_suffix(".timeindex").write_bytes(bytes(13))
    assert _check(log)[1].status == "wrong"


def test_missing_and_cli_exit_codes(tmp_path, monkeypatch, capsysbinary):
    _, log, infos = _single(tmp_path)
    log.with_suffix(".index").unlink()
    code, out, _ = run_cli(
        monkeypatch,
        capsysbinary,
        "index",
        "check",
        log,
        "--index-interval-bytes",
        "200",
        "-f",
        "json",
    )
    ev = events(out)[0]
    assert code == 0 and ev["status"] == "missing" and ev["offset_index"]["status"] == "missing"
    _write_index(log, [(infos[3].last_offset, infos[3].position + 1)])
    code, out, _ = run_cli(
        monkeypatch, capsysbinary, "index", "check", log, "--index-interval-bytes", "200"
    )
    assert code == 4 and "wrong" in out and "first difference at entry 0 (byte 0)" in out


def test_real_broker_indexes_check_clean(real_root, monkeypatch, capsysbinary):
    # the directory of roots: every broker's data dir below it (a dir without Kafka data in it,
    # like kafka-4.1.0-dev/scripts, is no longer a valid input on its own)
    code, out, _ = run_cli(monkeypatch, capsysbinary, "index", "check", real_root, "-f", "json")
    evs = [e for e in events(out) if e["type"] == "index_check"]
    assert code == 0 and len(evs) >= 9
    assert {e["status"] for e in evs} <= {"identical", "equivalent", "missing"}
