"""`kseg dump` through the real entry point: exit codes, stdout/stderr split, JSON schema."""

from __future__ import annotations

import base64
import re
import shutil
import subprocess
import sys

import orjson
import pytest

import kseg
from kseg.cli.entry import run_app

BATCH_KEYS = {
    "type",
    "file",
    "position",
    "base_offset",
    "last_offset",
    "count",
    "magic",
    "compression",
    "crc",
    "crc_valid",
    "size",
    "timestamp_type",
    "base_timestamp",
    "max_timestamp",
    "producer_id",
    "producer_epoch",
    "base_sequence",
    "partition_leader_epoch",
    "is_transactional",
    "is_control",
}
RECORD_KEYS = {
    "type",
    "offset",
    "timestamp",
    "timestamp_type",
    "key",
    "value",
    "headers",
    "key_size",
    "value_size",
}


def run(*args: str, capsys=None) -> tuple[int, str, str]:
    proc = subprocess.run(
        [sys.executable, "-m", "kseg", *args], capture_output=True, text=True, timeout=120
    )
    return proc.returncode, proc.stdout, proc.stderr


def run_inproc(monkeypatch, capsysbinary, *args):
    monkeypatch.setattr(sys, "argv", ["kseg", *args])
    with pytest.raises(SystemExit) as exc:
        run_app()
    out, err = capsysbinary.readouterr()
    return exc.value.code, out.decode(), err.decode()


def events(text: str) -> list[dict]:
    return [orjson.loads(line) for line in text.splitlines()]


def test_help_for_every_command():
    for cmd in ([], ["dump"], ["demo"]):
        code, out, _ = run(*cmd, "--help")
        assert code == 0 and "Usage" in out
    assert "Exit codes" in run("dump", "--help")[1]


def test_usage_error_exits_16(monkeypatch, capsysbinary):
    code, out, err = run_inproc(monkeypatch, capsysbinary, "dump", "--no-such-option")
    assert code == 16 and out == "" and "No such option" in err
    code, _, err = run_inproc(
        monkeypatch, capsysbinary, "dump", "x", "--from-time", "yesterday-ish"
    )
    assert code == 16 and "cannot read" in err


def test_json_dump_of_whole_tree_matches_the_library(tree, monkeypatch, capsysbinary):
    code, out, err = run_inproc(
        monkeypatch, capsysbinary, "dump", str(tree), "--format", "json", "--payload", "base64"
    )
    assert code == 0, err
    evs = events(out)
    assert err == ""
    types = {e["type"] for e in evs}
    assert {
        "file",
        "batch",
        "record",
        "control",
        "index_entry",
        "timeindex_entry",
        "txn_index_entry",
        "producer_state",
        "leader_epoch",
        "checkpoint_entry",
        "partition_metadata",
        "meta_properties",
        "index_padding",
    } <= types
    for e in evs:
        if e["type"] == "batch":
            assert set(e) >= BATCH_KEYS and e["crc_valid"] is True
        if e["type"] == "record":
            assert set(e) >= RECORD_KEYS
    # lossless base64 payloads equal what the library reads
    want = []
    for log in sorted((tree / "orders-1").glob("*.log")):
        for b in kseg.read_batches(log):
            want += [(r.offset, r.key, r.value, r.headers) for r in b.records()]
    got = [
        (e["offset"], _b64(e["key"]), _b64(e["value"]), [(k, _b64(v)) for k, v in e["headers"]])
        for e in evs
        if e["type"] == "record" and "/orders-1/" in e["file"]
    ]
    assert got == want


def _b64(v):
    return None if v is None else base64.b64decode(v)


def test_control_records_and_decoders(tree, real_root, monkeypatch, capsysbinary):
    code, out, _ = run_inproc(monkeypatch, capsysbinary, "dump", str(tree / "txn-0"), "-f", "json")
    ctl = [e for e in events(out) if e["type"] == "control"]
    assert {c["control_type"] for c in ctl} == {"COMMIT", "ABORT"} and all(
        c["coordinator_epoch"] in (3, 4) for c in ctl
    )
    co = real_root / "seanorth__kafka-server/kafka-logs/__consumer_offsets-16"
    code, out, _ = run_inproc(monkeypatch, capsysbinary, "dump", str(co), "-f", "json")
    decoded = [e["decoded"] for e in events(out) if e["type"] == "record"]
    assert code == 0 and len(decoded) == 69
    assert {d["record"] for d in decoded} == {"offset_commit", "group_metadata"}


def test_auto_payload_says_which_encoding(tmp_path, monkeypatch, capsysbinary):
    with kseg.LogWriter(tmp_path / "p-0") as w:
        w.append([kseg.Record(key=b"\x00\xff", value="h\u00e9llo".encode(), timestamp=1)])
    code, out, _ = run_inproc(
        monkeypatch, capsysbinary, "dump", str(tmp_path / "p-0"), "-f", "json"
    )
    (rec,) = [e for e in events(out) if e["type"] == "record"]
    assert (rec["key"], rec["key_encoding"]) == (base64.b64encode(b"\x00\xff").decode(), "base64")
    assert (rec["value"], rec["value_encoding"]) == ("h\u00e9llo", "utf8")
    code, out, _ = run_inproc(
        monkeypatch,
        capsysbinary,
        "dump",
        str(tmp_path / "p-0"),
        "-f",
        "json",
        "--payload",
        "redact",
    )
    (rec,) = [e for e in events(out) if e["type"] == "record"]
    assert rec["value"].startswith("sha256:") and rec["value_size"] == 6


def test_every_corrupt_fixture_is_reported_not_a_traceback(
    corrupt_cases, monkeypatch, capsysbinary
):
    for case in corrupt_cases:
        code, out, err = run_inproc(monkeypatch, capsysbinary, "dump", str(case.file), "-f", "json")
        errors = [e for e in events(out) if e["type"] == "error"]
        assert code == 4, case.name
        assert (
            errors and errors[0]["kind"] == case.kind and errors[0]["position"] == case.position
        ), case.name
        assert "Traceback" not in err
        code, out, err = run_inproc(monkeypatch, capsysbinary, "dump", str(case.file))
        assert code == 4 and f"byte {case.position}" in err and "Traceback" not in err


def test_crc_mismatch_batch_still_shown_and_decoding_continues(
    corrupt_cases, monkeypatch, capsysbinary
):
    case = next(c for c in corrupt_cases if c.name == "crc-flip")
    code, out, _ = run_inproc(monkeypatch, capsysbinary, "dump", str(case.file), "-f", "json")
    evs = events(out)
    positions = [e["position"] for e in evs if e["type"] == "batch"]
    assert case.position in positions and positions[-1] > case.position
    bad = next(e for e in evs if e["type"] == "batch" and e["position"] == case.position)
    assert bad["crc_valid"] is False


def test_filters_and_limits(tree, monkeypatch, capsysbinary):
    pdir = str(tree / "orders-1")
    code, out, _ = run_inproc(
        monkeypatch,
        capsysbinary,
        "dump",
        pdir,
        "-f",
        "json",
        "--from-offset",
        "100",
        "--to-offset",
        "120",
    )
    offs = [e["offset"] for e in events(out) if e["type"] == "record"]
    assert offs == list(range(100, 121))
    code, out, _ = run_inproc(monkeypatch, capsysbinary, "dump", pdir, "-f", "json", "--limit", "7")
    assert len([e for e in events(out) if e["type"] == "record"]) == 7
    code, out, _ = run_inproc(
        monkeypatch, capsysbinary, "dump", pdir, "-f", "json", "--batches-only"
    )
    evs = events(out)
    assert not [e for e in evs if e["type"] == "record"] and [
        e for e in evs if e["type"] == "batch"
    ]
    log = sorted((tree / "orders-1").glob("*.log"))[0]
    code, out, _ = run_inproc(
        monkeypatch,
        capsysbinary,
        "dump",
        str(log),
        "-f",
        "json",
        "--batches-only",
        "--max-bytes",
        "3000",
    )
    batches = [e for e in events(out) if e["type"] == "batch"]
    assert code == 0 and batches and all(b["position"] + b["size"] <= 3000 for b in batches)
    ts0 = 1_700_000_000_000 + 20_000
    code, out, _ = run_inproc(
        monkeypatch, capsysbinary, "dump", pdir, "-f", "json", "--from-time", str(ts0)
    )
    recs = [e for e in events(out) if e["type"] == "record"]
    assert recs and min(r["timestamp"] for r in recs) >= ts0


def test_topic_filter_on_root(tree, monkeypatch, capsysbinary):
    code, out, _ = run_inproc(
        monkeypatch,
        capsysbinary,
        "dump",
        str(tree),
        "-f",
        "json",
        "--topic",
        "^txn$",
        "--batches-only",
    )
    files = {e["file"] for e in events(out) if e["type"] == "batch"}
    assert files and all("/txn-0/" in f for f in files)


def test_text_and_table_formats(tree, monkeypatch, capsysbinary):
    code, out, _ = run_inproc(monkeypatch, capsysbinary, "dump", str(tree / "compacted-0"))
    assert code == 0 and "baseOffset: 10 lastOffset: 14 count: 0" in out
    assert (
        "| offset: 1 CreateTime:" in out
        and 'headerKeys: ["trace-id","source"]' not in out.split("offset: 1 ")[0]
    )
    code, out, _ = run_inproc(
        monkeypatch, capsysbinary, "dump", str(tree / "compacted-0"), "-f", "table"
    )
    # one table per file (batch and record rows share its columns), not one per run of rows
    assert code == 0 and re.search(r"^batch +10\.\.14 ", out, re.M) and "\nrecord " in out
    assert out.count("kind  ") == sum(1 for p in (tree / "compacted-0").iterdir() if p.is_file())


def test_dump_is_read_only(tree, tmp_path, monkeypatch, capsysbinary):
    copy = tmp_path / "copy"
    shutil.copytree(tree / "txn-0", copy / "txn-0")
    before = {p.name: p.stat().st_mtime_ns for p in (copy / "txn-0").iterdir()}
    run_inproc(
        monkeypatch, capsysbinary, "dump", str(copy / "txn-0" / "00000000000000000000.timeindex")
    )
    run_inproc(monkeypatch, capsysbinary, "dump", str(copy / "txn-0"))
    after = {p.name: p.stat().st_mtime_ns for p in (copy / "txn-0").iterdir()}
    assert (
        before == after
    )  # nothing created (kafka-dump-log creates an empty .index), nothing touched


def test_closed_pipe_is_quiet(tree):
    proc = subprocess.Popen(
        f"{sys.executable} -m kseg dump {tree} -f json | head -3",
        shell=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    out, err = proc.communicate(timeout=120)
    assert len(out.splitlines()) == 3 and err == b""


def test_demo_runs(tmp_path):
    code, out, err = run("demo", str(tmp_path / "demo"))
    assert code == 0 and "baseOffset: 0" in out and "wrote an example" in err


def test_good_records_before_a_bad_one_are_still_dumped(tmp_path, monkeypatch, capsysbinary):
    import struct

    from kseg.format import batch as v2
    from kseg.format.crc import crc32c

    pdir = tmp_path / "p-0"
    with kseg.LogWriter(pdir) as w:
        w.append([kseg.Record(key=b"k%d" % i, value=b"v" * 20, timestamp=i) for i in range(5)])
    log = pdir / "00000000000000000000.log"
    data = bytearray(log.read_bytes())
    struct.pack_into(">i", data, v2.FIELD_POS["records_count"], 9)  # claims 9, holds 5
    struct.pack_into(">I", data, v2.CRC_POS, crc32c(bytes(data[v2.CRC_COVERAGE_START :])))
    log.write_bytes(bytes(data))
    code, out, _ = run_inproc(monkeypatch, capsysbinary, "dump", str(log), "-f", "json")
    evs = events(out)
    assert code == 4
    assert [e["offset"] for e in evs if e["type"] == "record"] == [0, 1, 2, 3, 4]
    assert evs[-1]["type"] == "error" and "declares 9 records but holds 5" in evs[-1]["message"]


def test_kraft_checkpoint_and_deleted_files_are_decoded(tmp_path, monkeypatch, capsysbinary):
    from kseg.format import batch as v2
    from kseg.format import control

    meta = tmp_path / "__cluster_metadata-0"
    meta.mkdir()
    header = kseg.Record(
        control.KEY.pack(0, 3), b"\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00", 5, [], 0
    )
    data = v2.build_batch([header], 0, control=True)
    data += v2.build_batch([kseg.Record(b"k", b"metadata record", 6, [], 1)], 1)
    snap = meta / "00000000000000000002-0000000007.checkpoint"
    snap.write_bytes(data)
    code, out, _ = run_inproc(monkeypatch, capsysbinary, "dump", str(snap), "-f", "json")
    evs = events(out)
    assert code == 0 and evs[0]["kind"] == "kraft_checkpoint"
    assert [e["control_type"] for e in evs if e["type"] == "control"] == ["SNAPSHOT_HEADER"]
    assert [e["value"] for e in evs if e["type"] == "record"] == ["metadata record"]
    # a segment awaiting deletion is decoded too, and labelled
    with kseg.LogWriter(tmp_path / "t-0") as w:
        w.append([kseg.Record(value=b"x", timestamp=1)])
    log = tmp_path / "t-0" / "00000000000000000000.log"
    deleted = log.with_name(log.name + ".deleted")
    log.rename(deleted)
    code, out, _ = run_inproc(monkeypatch, capsysbinary, "dump", str(deleted), "-f", "json")
    evs = events(out)
    assert (
        code == 0
        and evs[0]["state"] == "deleted"
        and [e["value"] for e in evs if e["type"] == "record"] == ["x"]
    )
    code, out, _ = run_inproc(monkeypatch, capsysbinary, "dump", str(deleted))
    assert "Dumping" in out and "(deleted)" in out
