"""`kseg dump` of Kafka 0.7 logs through the real entry point, clean and damaged copies."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from kseg.format import kafka07 as k7
from tests.helpers import copy_log07, events, run_kseg, segments07

ENTRY_KEYS = {
    "type", "file", "offset", "position", "next_offset", "size", "magic", "compression",
    "crc", "crc_valid", "payload_size", "count", "topic", "partition",
}  # fmt: skip


def test_dump_partition_json(log07):
    r = run_kseg("dump", "--format", "json", log07 / "events-0")
    assert r.returncode == 0, r.stderr
    assert r.stderr == b""
    evs = events(r.stdout)
    entries = [e for e in evs if e["type"] == "entry"]
    msgs = [e for e in evs if e["type"] == "message"]
    assert set(entries[0]) == ENTRY_KEYS
    # offsets are byte offsets: contiguous across segments, each entry where the last ended
    for a, b in zip(entries, entries[1:], strict=False):
        assert b["offset"] == a["next_offset"]
    assert {e["magic"] for e in entries} == {0, 1}
    assert {e["compression"] for e in entries} == {"none", "gzip", "snappy"}
    assert all(e["crc_valid"] for e in entries)
    assert len(msgs) == 24 * 3 + 2
    nested = [m for m in msgs if m["depth"] == 2]
    assert [m["payload"] for m in nested] == ["nested-a", "nested-b"]
    # consumer offsets: the wrapper's start for all inner messages but the last, its end for it
    by_entry: dict[int, list[dict]] = {}
    for m in msgs:
        by_entry.setdefault(m["offset"], []).append(m)
    for e in entries:
        got = [m["consumer_offset"] for m in by_entry[e["offset"]]]
        assert got == [e["offset"]] * (len(got) - 1) + [e["next_offset"]]
        assert len(got) == e["count"]


def test_dump_text_table_file_and_payload_modes(log07):
    seg = segments07(log07 / "events-0")[1]
    base = int(seg.name[:20])
    r = run_kseg("dump", seg)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.decode().splitlines()
    assert lines[0] == f"Dumping {seg}"
    assert lines[1].startswith(f"offset: {base} position: 0 nextOffset: ")
    assert "compresscodec:" in lines[1] and "isvalid: true" in lines[1]
    assert lines[2].startswith(f"| offset: {base} consumerOffset: ")
    r = run_kseg("dump", "--payload", "hex", "--format", "json", seg)
    msg = next(e for e in events(r.stdout) if e["type"] == "message")
    assert msg["payload_encoding"] == "hex" and bytes.fromhex(msg["payload"]).startswith(
        b'{"event"'
    )
    r = run_kseg("dump", "--batches-only", "--format", "json", seg)
    assert {e["type"] for e in events(r.stdout)} == {"file", "entry"}
    r = run_kseg("dump", "--format", "table", seg)
    assert r.returncode == 0 and b"entry" in r.stdout and b"consumer_offset" in r.stdout
    r = run_kseg("dump", "--format", "json", "--from-offset", base + 100, "--limit", "2", seg)
    msgs = [e for e in events(r.stdout) if e["type"] == "message"]
    assert len(msgs) == 2 and msgs[0]["next_offset"] > base + 100


def test_dump_log_dir_includes_clean_shutdown(log07):
    r = run_kseg("dump", "--format", "json", log07)
    assert r.returncode == 0, r.stderr
    kinds = [e["kind"] for e in events(r.stdout) if e["type"] == "file"]
    assert kinds[0] == "clean_shutdown" and kinds.count("kafka07") >= 4


def _patch(path: Path, pos: int, data: bytes) -> None:
    with open(path, "r+b") as f:
        f.seek(pos)
        f.write(data)


def _entry_positions(path: Path) -> list[int]:
    return [e.position for e in k7.entries(path.read_bytes())]


@pytest.mark.parametrize("damage", ["crc", "magic", "torn", "lying_length", "codec"])
def test_dump_damaged_copies(log07, tmp_path, damage):
    pdir = copy_log07(log07, tmp_path)
    seg = segments07(pdir)[1]
    pos = _entry_positions(seg)
    victim = pos[2]
    if damage == "crc":
        _patch(seg, victim + 12, b"\xff")
        kind = "crc_mismatch"
    elif damage == "magic":
        _patch(seg, victim + k7.MAGIC_POS, b"\x09")
        kind = "invalid_magic"
    elif damage == "torn":
        with open(seg, "r+b") as f:
            f.truncate(pos[-1] + 7)
        victim, kind = pos[-1], "torn_tail"
    elif damage == "lying_length":
        _patch(seg, victim, struct.pack(">i", 1 << 30))
        kind = "torn_tail"
    else:  # attributes lie outside the CRC: codec 3 shows as unknown
        e = [x for x in k7.entries(seg.read_bytes()) if x.magic == 1][0]
        victim = e.position
        _patch(seg, victim + k7.FIELD_POS[1]["attributes"], b"\x03")
        kind = "unknown_codec"
    r = run_kseg("dump", "--format", "json", pdir)
    assert r.returncode == 4, r.stderr
    errors = [e for e in events(r.stdout) if e["type"] == "error"]
    assert len(errors) == 1
    err = errors[0]
    assert (err["file"], err["position"], err["kind"]) == (str(seg), victim, kind)
    assert err["offset"] == int(seg.name[:20]) + victim
    assert b"Traceback" not in r.stderr
    # the later segments are still dumped
    files = [e["file"] for e in events(r.stdout) if e["type"] == "file"]
    assert str(segments07(pdir)[-1]) in files


def test_dump_corrupt_wrapper_content_goes_on(log07, tmp_path):
    """Garbage inside a compressed wrapper whose CRC matches: reported, the walk goes on."""
    pdir = copy_log07(log07, tmp_path)
    seg = segments07(pdir)[0]
    data = seg.read_bytes()
    w = next(e for e in k7.entries(data) if e.compression == "gzip")
    garbage = b"\x1f\x8b" + b"\xee" * (w.payload_size - 2)
    _patch(seg, w.position, k7.encode_message(garbage, codec=1))
    r = run_kseg("dump", "--format", "json", seg)
    assert r.returncode == 4
    evs = events(r.stdout)
    (err,) = [e for e in evs if e["type"] == "error"]
    assert err["kind"] == "decompression_failed" and err["position"] == w.position
    assert [e for e in evs if e["type"] == "entry"][-1]["next_offset"] == len(data)


def test_dump_empty_kafka_file(tmp_path):
    pdir = tmp_path / "t-0"
    pdir.mkdir()
    (pdir / "00000000000000000000.kafka").write_bytes(b"")
    r = run_kseg("dump", "--format", "json", pdir)
    assert r.returncode == 0, r.stderr
    assert events(r.stdout) == [
        {"type": "file", "file": str(pdir / "00000000000000000000.kafka"), "kind": "kafka07",
         "size": 0, "topic": "t", "partition": 0}
    ]  # fmt: skip


def test_demo_includes_a_07_log_dir(tmp_path):
    demo = tmp_path / "demo"
    r = run_kseg("demo", demo)
    assert r.returncode == 0, r.stderr
    log07 = demo / "kafka07-logs"
    assert (log07 / ".kafka_cleanshutdown").read_bytes() == b""
    assert len(list((log07 / "events-0").glob("*.kafka"))) > 2
    r = run_kseg("verify", "--deep", log07)
    assert r.returncode == 0, r.stdout + r.stderr
    r = run_kseg("dump", "--format", "json", "--batches-only", log07 / "events-0")
    entries = [e for e in events(r.stdout) if e["type"] == "entry"]
    assert {e["compression"] for e in entries} == {"none", "gzip", "snappy"}
    assert {e["magic"] for e in entries} == {0, 1}
    # the demo root itself still verifies as before (the 0.7 log dir is a root of its own)
    assert run_kseg("verify", demo).returncode == 0
