"""`kseg stats` (kseg.stats.stats): its numbers against an independent computation
(kafka-python's record reader on the same segments), on real broker data of four Kafka versions,
the fixture tree, the demo, and damaged copies; the CLI through the real entry point."""

from __future__ import annotations

import csv
import io
import shutil
from pathlib import Path

import pytest
from kafka.record import MemoryRecords

from kseg.cli.exit import exit_status
from kseg.fixtures.demo import write_demo
from kseg.format.timestamps import MAX_MS
from kseg.stats.stats import StatsOptions, count, hour_of
from kseg.storage.tree import InputError, resolve

from ..helpers import events, run_kseg

REAL_ROOTS = [
    "SharaWeil__kafka-0.11.0/data",
    "kafka-4.1.0-dev/data",
    "seanorth__kafka-server/kafka-logs",
    "xpxwo100__bullShit/tmp/kafka-logs",
]
CODEC = {0: "none", 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}


def stats_events(paths, **opts) -> tuple[list[dict], int]:
    run = count([Path(p) for p in paths], opts=StatsOptions(**opts))
    evs = [e for e in run.events() if e["type"] != "progress"]
    return evs, int(exit_status(run.outcome))


def kafka_python_counts(logs: list[Path], by_hour: bool = False, decode: bool = True) -> dict:
    """The same numbers from kafka-python's reader (records decoded one by one: an
    independent implementation of every magic and codec; ``decode=False``: v2 batches by their
    headers only)."""
    groups: dict = {}
    for log in logs:
        data = log.read_bytes()
        mr = MemoryRecords(data)
        while mr.has_next():
            b = mr.next_batch()
            if b is None:
                break
            size = b.size_in_bytes
            if b.magic == 2:
                control = b.is_control_batch
                # decodes (and decompresses) every record
                n = 0 if control else (len(list(b)) if decode else b.records_count)
                base, last = b.base_offset, b.base_offset + b.last_offset_delta
                base_ts, max_ts = b.first_timestamp, b.max_timestamp
                pid, txn = b.producer_id, b.is_transactional
                codec = CODEC[b.compression_type]
            else:
                inner = list(b)
                n, control, txn, pid = len(inner), False, False, -1
                base, last = inner[0].offset, inner[-1].offset
                # the top-level message's own timestamp (a wrapper's is what Kafka indexes)
                base_ts = max_ts = b._timestamp if b.magic == 1 else -1
                codec = CODEC[b.compression_type]
            key = hour_of(max_ts) if by_hour else None
            g = groups.setdefault(
                key,
                {
                    "records": 0,
                    "batches": 0,
                    "bytes": 0,
                    "first_offset": None,
                    "last_offset": None,
                    "min_base_timestamp": None,
                    "max_timestamp": None,
                    "producers": set(),
                    "codecs": set(),
                    "txn": 0,
                },
            )
            g["records"] += n
            g["batches"] += 1
            g["bytes"] += size
            g["first_offset"] = base if g["first_offset"] is None else min(g["first_offset"], base)
            g["last_offset"] = last if g["last_offset"] is None else max(g["last_offset"], last)
            if base_ts is not None and base_ts >= 0:
                m = g["min_base_timestamp"]
                g["min_base_timestamp"] = base_ts if m is None else min(m, base_ts)
            m = g["max_timestamp"]
            g["max_timestamp"] = max_ts if m is None else max(m, max_ts)
            if pid >= 0:
                g["producers"].add(pid)
            g["codecs"].add(codec)
            g["txn"] += size if txn else 0
    return groups


def _compare(row: dict, want: dict) -> None:
    for k in ("records", "batches", "bytes", "first_offset", "last_offset"):
        assert row[k] == want[k], k
    assert row["min_base_timestamp"] == want["min_base_timestamp"]
    assert row["max_timestamp"] == want["max_timestamp"]
    assert row["producers"] == len(want["producers"])
    assert row["codecs"] == sorted(want["codecs"])
    assert row["transactional_share"] == pytest.approx(want["txn"] / want["bytes"])


@pytest.mark.parametrize("root", REAL_ROOTS)
def test_every_real_partition_equals_kafka_python(real_root, root):
    evs, code = stats_events([real_root / root])
    assert code == 0
    rows = [e for e in evs if e["type"] == "partition_stats"]
    assert rows
    for t in resolve([real_root / root], logs_only=True).targets():
        row = next(
            r for r in rows if (r["topic"], r["partition"]) == (t.name.topic, t.name.partition)
        )
        want = kafka_python_counts(t.logs).get(None)
        if want is None:  # no batch at all (an empty active segment)
            assert row["batches"] == 0
            continue
        _compare(row, want)
        assert row["segments"] == len(t.logs)
        assert row["segment_bytes"] == sum(p.stat().st_size for p in t.logs)


def test_hours_of_real_data_equal_kafka_python(real_root):
    pdir = real_root / "xpxwo100__bullShit/tmp/kafka-logs/TEST-TOPIC-0"
    evs, _ = stats_events([pdir], by_hour=True)
    hours = [e for e in evs if e["type"] == "hour_stats"]
    want = kafka_python_counts(sorted(pdir.glob("*.log")), by_hour=True)
    assert len(hours) == len(want) > 0
    by_text = {(None if k is None else _iso_hour(k) + ":00:00Z"): v for k, v in want.items()}
    for h in hours:
        _compare(h, by_text[h["hour"]])
    # the hours add up to the partition
    part = next(e for e in evs if e["type"] == "partition_stats")
    assert sum(h["records"] for h in hours) == part["records"]
    assert sum(h["bytes"] for h in hours) == part["bytes"]


def _iso_hour(ms: int) -> str:
    from datetime import datetime, timezone

    return datetime.fromtimestamp(ms / 1000, timezone.utc).strftime("%Y-%m-%dT%H")


def test_totals_add_up_and_uncompressed_is_checked_by_decompressing(tree):
    evs, code = stats_events([tree], uncompressed=True)
    assert code == 0
    parts = [e for e in evs if e["type"] == "partition_stats"]
    topics = [e for e in evs if e["type"] == "topic_stats"]
    (root,) = [e for e in evs if e["type"] == "root_stats"]
    for k in ("records", "batches", "bytes", "uncompressed_bytes", "segments", "index_bytes"):
        assert sum(p[k] for p in parts) == root[k] == sum(t[k] for t in topics), k
    for p in parts:
        assert p["compression_ratio"] == pytest.approx(p["uncompressed_bytes"] / p["bytes"])
        assert sum(p["codec_shares"].values()) == pytest.approx(1.0)
        if p["codecs"] == ["none"]:
            assert p["uncompressed_bytes"] == p["bytes"]
    # without --uncompressed nothing is decompressed and nothing pretends it was
    plain, _ = stats_events([tree])
    assert all(e["uncompressed_bytes"] is None for e in plain if "uncompressed_bytes" in e)


def test_uncompressed_bytes_equal_kafka_python_decompression(tree):
    """Header + decompressed records of each compressed v2 batch, by kafka-python's codecs."""
    from kafka.record.default_records import DefaultRecordBatch

    pdir = next(p for p in sorted(tree.iterdir()) if p.name.startswith("orders"))
    evs, _ = stats_events([pdir], uncompressed=True)
    row = next(e for e in evs if e["type"] == "partition_stats")
    want = 0
    for log in sorted(pdir.glob("*.log")):
        mr = MemoryRecords(log.read_bytes())
        while mr.has_next():
            b = mr.next_batch()
            if b.compression_type == 0:
                want += b.size_in_bytes
            else:
                b._maybe_uncompress()  # kafka-python's own codecs; _buffer: the records only
                want += DefaultRecordBatch.HEADER_STRUCT.size + len(b._buffer)
    assert row["uncompressed_bytes"] == want


def test_damaged_copy_stops_at_the_byte_and_keeps_the_prefix(corrupt_cases, tmp_path):
    for case in corrupt_cases:
        if case.file.suffix != ".log":
            continue
        if case.kind == "decompression_failed":
            # the CRC matches: headers are right and a header walk counts the batch; only
            # --uncompressed, which decompresses, finds it, reports it and counts on
            evs, code = stats_events([case.partition_dir])
            assert code == 0
            evs, code = stats_events([case.partition_dir], uncompressed=True)
            failures = [e["message"] for e in evs if e["type"] == "failure"]
            assert code == 4 and len(failures) == 1 and str(case.file) in failures[0]
            row = next(e for e in evs if e["type"] == "partition_stats")
            want = kafka_python_counts([case.file], decode=False)[None]
            _compare(row, want)
            continue
        evs, code = stats_events([case.partition_dir])
        failures = [e["message"] for e in evs if e["type"] == "failure"]
        assert code & 4, case.name
        assert any(str(case.file) in m and f"byte {case.position}" in m for m in failures), (
            case.name,
            failures,
        )
        row = next(e for e in evs if e["type"] == "partition_stats")
        # what was counted is exactly the valid prefix: kafka-python reads the same bytes
        cut = tmp_path / case.name / case.partition_dir.name
        cut.mkdir(parents=True)
        for log in sorted(case.partition_dir.glob("*.log")):
            data = log.read_bytes()
            if log == case.file:
                data = data[: case.position]
            (cut / log.name).write_bytes(data)
        want = kafka_python_counts(sorted(cut.glob("*.log"))).get(None)
        if want is None:
            assert row["batches"] == 0
        else:
            _compare(row, want)
        assert row["errors"] >= 1


def test_nothing_to_count_is_never_ok(tmp_path):
    empty = tmp_path / "logs" / "t-0"
    empty.mkdir(parents=True)
    (tmp_path / "logs" / "meta.properties").write_text("version=0\n")
    with pytest.raises(InputError):
        count([tmp_path / "logs"])
    (empty / "00000000000000000000.log").write_bytes(b"")
    evs, code = stats_events([tmp_path / "logs"])
    assert code == 16
    assert any("nothing to count" in e["message"] for e in evs if e["type"] == "failure")


def test_hour_of_is_the_utc_hour_and_none_outside_dates():
    assert hour_of(1_700_000_000_000) == 1_699_999_200_000
    assert hour_of(-1) is None
    assert hour_of(MAX_MS + 1) is None


# --- the CLI, as an operator runs it ------------------------------------------------------------


@pytest.fixture(scope="module")
def demo(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("stats") / "demo"
    for _ in write_demo(d):
        pass
    return d


def test_cli_formats(demo):
    js = run_kseg("stats", demo, "-f", "json", "--uncompressed")
    assert js.returncode == 0, js.stderr
    evs = events(js.stdout)
    assert {e["type"] for e in evs} == {"partition_stats", "topic_stats", "root_stats"}
    assert all(e["uncompressed_bytes"] > 0 for e in evs)
    parts = [e for e in evs if e["type"] == "partition_stats"]
    txt = run_kseg("stats", demo)
    assert txt.returncode == 0 and txt.stderr == b""
    lines = txt.stdout.decode().splitlines()
    assert len(lines) == len(evs)
    first = parts[0]  # the same row, first in both formats
    assert lines[0].startswith(
        f'partition topic="{first["topic"]}" partition={first["partition"]} '
        f"records={first['records']} batches={first['batches']} bytes={first['bytes']} "
    )
    assert "(2023-11-14T" in lines[0]  # ISO beside epoch ms
    table = run_kseg("stats", demo, "-f", "table")
    assert table.returncode == 0
    assert table.stdout.decode().startswith("partition_stats\n")
    c = run_kseg("stats", demo, "-f", "csv")
    assert c.returncode == 0
    rows = list(csv.DictReader(io.StringIO(c.stdout.decode())))
    assert len(rows) == len(evs)
    for r, e in zip(rows[: len(parts)], parts, strict=True):
        assert r["type"] == "partition_stats"
        assert int(r["records"]) == e["records"] and int(r["bytes"]) == e["bytes"]
        assert r["codecs"] == ";".join(e["codecs"])
    hours = events(run_kseg("stats", demo, "--by", "hour", "-f", "json").stdout)
    assert any(e["type"] == "hour_stats" and e["hour"].endswith(":00:00Z") for e in hours)


def test_cli_exit_codes(demo, tmp_path):
    assert run_kseg("stats", tmp_path / "nope").returncode == 16
    assert run_kseg("stats", demo, "--topic", "(").returncode == 16
    assert run_kseg("stats", demo, "--topic", "^zzz$").returncode == 16
    assert run_kseg("stats", demo, "--by", "day").returncode == 16
    bad = run_kseg("stats", demo, "--plot", tmp_path / "x.gif")
    assert bad.returncode == 16 and b"png or .svg" in bad.stderr
    # damaged: stop at the byte, say where, still print what was counted, exit 4
    copy = tmp_path / "demo"
    shutil.copytree(demo, copy)
    log = sorted((copy / "orders-0").glob("*.log"))[1]
    data = bytearray(log.read_bytes())
    data[200] ^= 0xFF
    log.write_bytes(bytes(data))
    r = run_kseg("stats", copy, "-f", "json")
    assert r.returncode == 4
    assert str(log).encode() in r.stderr and b"byte " in r.stderr
    evs = events(r.stdout)
    orders0 = next(
        e
        for e in evs
        if e["type"] == "partition_stats" and e["topic"] == "orders" and e["partition"] == 0
    )
    assert 0 < orders0["records"] < 199 and orders0["errors"] == 1
    # unreadable segment: 8, the rest still counted
    log.chmod(0)
    try:
        r = run_kseg("stats", copy, "-f", "json")
        import os

        if os.geteuid() != 0:
            assert r.returncode & 8
        assert any(e["type"] == "root_stats" for e in events(r.stdout))
    finally:
        log.chmod(0o644)


def test_cli_several_roots_name_their_log_dir(real_root):
    r = run_kseg("stats", real_root, "-f", "json")
    assert r.returncode == 0, r.stderr
    evs = events(r.stdout)
    roots = [e for e in evs if e["type"] == "root_stats"]
    assert len(roots) == 4
    assert all("log_dir" in e for e in evs)
    for root in REAL_ROOTS:
        one = events(run_kseg("stats", real_root / root, "-f", "json").stdout)
        (mine,) = [e for e in roots if e["log_dir"] == str(real_root / root)]
        (alone,) = [e for e in one if e["type"] == "root_stats"]
        assert mine == alone


def test_timeline_gaps_are_kafka_pythons_and_uncounted_offsets_are_not_gaps(tree, demo, tmp_path):
    """--plot's timeline: offset gaps between batches (compaction) exactly where kafka-python
    sees them; after a segment stopped at corruption, the offsets up to the next batch counted
    are 'uncounted', never a gap."""
    from kseg.format.record import Record
    from kseg.storage.writer import LogWriter

    gappy = tmp_path / "gappy" / "g-0"
    with LogWriter(gappy, segment_bytes=400) as w:
        for base in (0, 3, 10, 13, 40, 43, 100):  # batches of two records, gaps between
            recs = [Record(b"k", b"v", 1_700_000_000_000 + base + i, [], base + i) for i in (0, 1)]
            w.append(recs, base_offset=base)
    dirs = [gappy, *sorted(p for p in tree.iterdir() if p.is_dir())]
    seen_gaps = 0
    for pdir in dirs:
        run = count([pdir], opts=StatsOptions(timeline=True))
        list(run.events())
        (tl,) = run.timelines
        want, prev = [], None
        for log in sorted(pdir.glob("*.log")):
            mr = MemoryRecords(log.read_bytes())
            while mr.has_next():
                b = mr.next_batch()
                first = b.base_offset if b.magic == 2 else next(iter(b)).offset
                last = b.base_offset + b.last_offset_delta if b.magic == 2 else list(b)[-1].offset
                if prev is not None and first > prev + 1:
                    want.append((prev + 1, first))
                prev = last if prev is None else max(prev, last)
        assert tl.gaps == want, pdir.name
        assert tl.uncounted == []
        seen_gaps += len(want)
    assert seen_gaps >= 4  # the gappy partition's, at least: the comparison saw gaps
    copy = shutil.copytree(demo / "orders-0", tmp_path / "orders-0")
    logs = sorted(copy.glob("*.log"))
    data = bytearray(logs[1].read_bytes())
    data[300] ^= 0xFF
    logs[1].write_bytes(bytes(data))
    run = count([copy], opts=StatsOptions(timeline=True))
    list(run.events())
    (tl,) = run.timelines
    stopped = [s for s in tl.segments if s.error_position is not None]
    assert [s.file for s in stopped] == [str(logs[1])] and stopped[0].error_kind == "crc_mismatch"
    next_base = int(logs[2].name.split(".")[0])
    assert tl.uncounted == [(stopped[0].error_offset, next_base)]
    assert tl.gaps == []
