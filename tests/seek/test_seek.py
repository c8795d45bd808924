"""kseg seek: offset for a timestamp compared with a brute-force scan, special targets, offsets."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import kseg
from kseg.fixtures import PARTITIONS
from kseg.format.checkpoint import TopicPartitionOffset, encode_offset_checkpoint
from kseg.seek.seek import EARLIEST, LATEST, MAX_TIMESTAMP, seek_offset, seek_time
from kseg.seek.timeexpr import parse_time
from kseg.storage.tree import segment_logs
from tests.helpers import copy_partition, events, run_cli


def all_records(pdir: Path, data_only: bool = False):
    out = []
    for log in segment_logs(pdir):
        for b in kseg.read_batches(log):
            if data_only and b.is_control:
                continue
            epoch = b.partition_leader_epoch if b.partition_leader_epoch >= 0 else None
            for r in b.records():
                out.append((r.offset, r.timestamp, epoch))
    return out


def brute_force(records, target: int, log_start: int = 0):
    for off, ts, epoch in records:
        if ts >= target and off >= log_start:
            return off, ts, epoch
    return None, None, None


@pytest.fixture(scope="module")
def records_by_partition(tree):
    return {
        name: (all_records(tree / name), all_records(tree / name, data_only=True))
        for name in PARTITIONS
    }


def test_every_record_timestamp_matches_brute_force(tree, records_by_partition):
    for name in PARTITIONS:
        recs, data = records_by_partition[name]
        targets = sorted({ts for _, ts, _ in recs if ts >= 0})
        for t in targets + [0, targets[-1] + 1 if targets else 1]:
            res = seek_time(tree / name, t)
            assert res.error is None
            assert (res.offset, res.timestamp, res.leader_epoch) == brute_force(recs, t), (name, t)
            res = seek_time(tree / name, t, data_only=True)
            assert (res.offset, res.timestamp) == brute_force(data, t)[:2], (name, t, "data-only")


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data())
def test_random_targets_match_brute_force(tree, records_by_partition, data):
    name = data.draw(st.sampled_from(PARTITIONS))
    recs = records_by_partition[name][0]
    stamps = [ts for _, ts, _ in recs if ts >= 0] or [0]
    t = data.draw(
        st.integers(min_value=min(stamps) - 5, max_value=max(stamps) + 5).filter(lambda x: x >= 0)
    )
    res = seek_time(tree / name, t)
    assert (res.offset, res.timestamp, res.leader_epoch) == brute_force(recs, t)


def test_a_transaction_marker_can_be_the_answer(tree, records_by_partition):
    recs, data = records_by_partition["txn-0"]
    markers = {
        b.base_offset
        for log in segment_logs(tree / "txn-0")
        for b in kseg.read_batches(log)
        if b.is_control
    }
    hits = [ts for off, ts, _ in recs if off in markers and brute_force(recs, ts)[0] == off]
    assert hits, "the fixture should have a marker that is the first record at its timestamp"
    t = hits[0]
    assert seek_time(tree / "txn-0", t).offset in markers
    assert seek_time(tree / "txn-0", t, data_only=True).offset not in markers


def test_special_targets(tree, records_by_partition, tmp_path):
    for name in PARTITIONS:
        recs = records_by_partition[name][0]
        logs = segment_logs(tree / name)
        last = max(b.last_offset for b in kseg.read_batches(logs[-1]))
        assert seek_time(tree / name, LATEST).offset == last + 1
        assert seek_time(tree / name, EARLIEST).offset == int(logs[0].name[:20])
        top = max(ts for _, ts, _ in recs)
        res = seek_time(tree / name, MAX_TIMESTAMP)
        if top < 0:
            assert res.offset is None
        else:
            want = next((o, ts) for o, ts, _ in recs if ts == top)
            assert (res.offset, res.timestamp) == want, name
    # the log start offset checkpoint moves earliest, and hides records below it
    root = tmp_path / "logs"
    pdir = copy_partition(tree / "orders-1", root)
    (root / "log-start-offset-checkpoint").write_bytes(
        encode_offset_checkpoint([TopicPartitionOffset("orders", 1, 40)])
    )
    assert seek_time(pdir, EARLIEST).offset == 40
    assert seek_time(pdir, 0).offset == 40
    with pytest.raises(ValueError):
        seek_time(pdir, -4)


def test_magic0_segments_are_skipped_not_answered(tree):
    # upgrade-0 starts with magic 0 messages (no timestamps); the answer is the first v1 record
    recs = all_records(tree / "upgrade-0")
    first_ts = next((o, ts) for o, ts, _ in recs if ts >= 0)
    assert (
        seek_time(tree / "upgrade-0", 0).offset,
        seek_time(tree / "upgrade-0", 0).timestamp,
    ) == first_ts


def test_missing_index_falls_back_with_a_warning(tree, tmp_path, records_by_partition):
    pdir = copy_partition(tree / "skewed-0", tmp_path)
    recs = records_by_partition["skewed-0"][0]
    for p in list(pdir.glob("*.timeindex"))[:2] + list(pdir.glob("*.index"))[:1]:
        p.unlink()
    t = sorted(ts for _, ts, _ in recs)[len(recs) // 2]
    res = seek_time(pdir, t)
    assert res.offset == brute_force(recs, t)[0]
    assert any("missing; scanning" in w for w in res.warnings)


def test_corruption_on_the_scan_path_is_reported(corrupt_cases, monkeypatch, capsysbinary):
    case = next(c for c in corrupt_cases if c.name == "crc-flip")
    # aim at the damaged batch's own timestamp, so the scan must read it
    bad = next(
        b for b in kseg.read_batches(case.file, validate=False) if b.position == case.position
    )
    code, out, err = run_cli(
        monkeypatch,
        capsysbinary,
        "seek",
        case.partition_dir,
        "--time",
        str(bad.max_timestamp),
        "-f",
        "json",
    )
    ev = events(out)[0]
    assert code == 4 and "CRC" in ev["error"] and f"byte {case.position}" in err


def test_seek_offset(tree):
    found = seek_offset(tree / "txn-0", 60)
    assert found.status == "found" and found.offset == 60
    batch = next(
        b
        for log in segment_logs(tree / "txn-0")
        for b in kseg.read_batches(log)
        if b.base_offset <= 60 <= b.last_offset
    )
    assert (
        found.position == batch.position
        and Path(found.segment).name == f"{int(Path(found.segment).name[:20]):020d}.log"
    )
    gap = seek_offset(tree / "compacted-0", 12)
    assert (gap.status, gap.offset) == ("in_gap", 20)  # 10..14 is an empty batch, 15..19 removed
    assert seek_offset(tree / "compacted-0", 2).offset == 4
    assert seek_offset(tree / "compacted-0", 30).status == "at_or_above_log_end"
    for name in ("orders-1", "upgrade-0", "skewed-0"):
        for off, _, _ in all_records(tree / name)[::7]:
            loc = seek_offset(tree / name, off)
            assert (loc.status, loc.offset) == ("found", off)


def test_time_expressions():
    assert parse_time("1700000000000") == 1700000000000
    assert parse_time("2026-11-21T09:30:00Z") == int(
        datetime(2026, 11, 21, 9, 30, tzinfo=timezone.utc).timestamp() * 1000
    )
    assert parse_time("2026-11-21T09:30:00+01:00") == parse_time("2026-11-21T08:30:00Z")
    now = 1_800_000_000_000
    assert parse_time("-30m", now) == now - 30 * 60_000
    assert parse_time("-2h", now) == now - 7_200_000
    assert parse_time("-1d", now) == now - 86_400_000
    # no zone: UTC, as kafka-consumer-groups --to-datetime (Kafka's Utils.getDateTime) reads it
    # (kseg read it as local time before; changed so that the same string gives the same answer)
    assert parse_time("2026-11-21T09:30:00") == parse_time("2026-11-21T09:30:00Z")
    with pytest.raises(ValueError):
        parse_time("half past nine")


def test_cli_formats_and_reset_csv(tree, monkeypatch, capsysbinary):
    code, out, _ = run_cli(
        monkeypatch, capsysbinary, "seek", tree, "--time", "max-timestamp", "-f", "json"
    )
    evs = events(out)
    assert code == 0 and len(evs) == len(PARTITIONS)
    assert set(evs[0]) >= {
        "type",
        "topic",
        "partition",
        "target",
        "offset",
        "timestamp",
        "leader_epoch",
        "segment",
        "position",
    }
    # a time after everything: no offset; reset-csv then uses the log end offset, like --to-datetime
    code, out, _ = run_cli(
        monkeypatch, capsysbinary, "seek", tree, "--time", "2100-01-01T00:00:00Z"
    )
    assert code == 0 and out.count("no offset") == len(PARTITIONS)
    code, out, _ = run_cli(
        monkeypatch, capsysbinary, "seek", tree, "--time", "2100-01-01T00:00:00Z", "-f", "reset-csv"
    )
    lines = out.splitlines()
    assert len(lines) == len(PARTITIONS)
    for line in lines:
        topic, part, off = line.split(",")
        assert int(off) == seek_time(tree / f"{topic}-{part}", LATEST).offset
    code, out, _ = run_cli(
        monkeypatch,
        capsysbinary,
        "seek",
        tree,
        "--topic",
        "^orders$",
        "--time",
        "-1000000d",
        "-f",
        "reset-csv",
    )
    assert out.splitlines() == ["orders,0,0", "orders,1,0"]
    code, _, err = run_cli(monkeypatch, capsysbinary, "seek", tree, "--time", "soon")
    assert code == 16 and "cannot read" in err
    assert run_cli(monkeypatch, capsysbinary, "seek", tree)[0] == 16
    code, out, _ = run_cli(
        monkeypatch,
        capsysbinary,
        "seek",
        tree / "orders-1",
        "--time",
        "-1h",
        "--now",
        "2023-11-14T23:13:20Z",
    )
    assert code == 0 and "orders-1: offset" in out


def test_an_empty_partition_ends_at_its_checkpointed_log_start(tmp_path):
    """No segment: Kafka's LogLoader opens an empty one at the log start offset from
    log-start-offset-checkpoint, so that is the log end too (seek answered 0)."""
    pdir = tmp_path / "logs" / "empty-0"
    pdir.mkdir(parents=True)
    assert seek_time(pdir, LATEST).offset == 0
    (pdir.parent / "log-start-offset-checkpoint").write_bytes(
        encode_offset_checkpoint(
            [TopicPartitionOffset("empty", 0, 500), TopicPartitionOffset("other", 0, 7)]
        )
    )
    for target in (LATEST, EARLIEST):
        res = seek_time(pdir, target)
        assert (res.offset, res.error) == (500, None)


def test_an_unreadable_log_start_checkpoint_is_said_not_ignored(tree, tmp_path):
    """The log start then comes from the first segment, as before, with one warning naming the
    checkpoint and the byte (it was silent)."""
    import shutil

    root = tmp_path / "logs"
    shutil.copytree(tree / "orders-0", root / "orders-0")
    (root / "log-start-offset-checkpoint").write_bytes(b"garbage\n")
    res = seek_time(root / "orders-0", EARLIEST)
    assert res.offset == 0 and res.error is None
    (warning,) = [w for w in res.warnings if "log-start-offset-checkpoint" in w]
    assert "byte 0" in warning and "taken from the first segment" in warning
