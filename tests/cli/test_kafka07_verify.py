"""`kseg verify [--repair]` and `kseg restore` on Kafka 0.7 partitions, through the entry point."""

from __future__ import annotations

import os
import struct
from pathlib import Path

import orjson
import pytest

from kseg.format import kafka07 as k7
from tests.helpers import copy_log07, events, run_kseg, segments07


def _findings(out: bytes) -> list[dict]:
    return [e for e in events(out) if e["type"] == "finding"]


def _snapshot(pdir: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(pdir.iterdir())}


def _positions(path: Path) -> list[int]:
    return [e.position for e in k7.entries(path.read_bytes())]


def _last_nonempty(pdir: Path) -> Path:
    return [p for p in segments07(pdir) if p.stat().st_size][-1]


def test_clean_log_dir_verifies(log07):
    r = run_kseg("verify", "--deep", "--format", "json", log07)
    assert r.returncode == 0, r.stdout + r.stderr
    evs = events(r.stdout)
    assert _findings(r.stdout) == []
    summary = evs[-1]
    assert summary["partitions"] == 2 and summary["segments"] == len(
        segments07(log07 / "events-0")
    ) + len(segments07(log07 / "clicks-1"))
    # one .kafka file given by path
    r = run_kseg("verify", segments07(log07 / "events-0")[1])
    assert r.returncode == 0, r.stdout + r.stderr
    assert b"1 partitions, 1 segments" in r.stdout


def test_torn_last_segment_repair_and_restore(log07, tmp_path):
    pdir = copy_log07(log07, tmp_path)
    for p in segments07(pdir):  # drop an empty active segment: the torn one is then the last
        if not p.stat().st_size:
            p.unlink()
    seg = segments07(pdir)[-1]
    pos = _positions(seg)
    with open(seg, "r+b") as f:
        f.truncate(pos[-1] + 6)
    original = _snapshot(pdir)
    r = run_kseg("verify", "--format", "json", pdir)
    assert r.returncode == 4
    (f,) = _findings(r.stdout)
    base = int(seg.name[:20])
    assert (f["kind"], f["file"], f["position"], f["offset"]) == (
        "torn_tail",
        str(seg),
        pos[-1],
        base + pos[-1],
    )
    assert f["repairable"] and "0.7's recovery truncates the last segment here" in f["message"]
    r = run_kseg("verify", "--repair", pdir)
    assert r.returncode == 1, r.stdout + r.stderr
    assert seg.stat().st_size == pos[-1]
    assert run_kseg("verify", pdir).returncode == 0
    (manifest,) = (tmp_path / "kseg-quarantine").rglob("manifest.json")
    assert orjson.loads(manifest.read_bytes())["status"] == "complete"
    r = run_kseg("restore", manifest.parent)
    assert r.returncode == 0, r.stdout + r.stderr
    assert _snapshot(pdir) == original


@pytest.mark.parametrize("damage", ["crc", "magic", "lying_length", "codec"])
def test_corrupt_older_segment_is_reported_and_repair_moves_later_ones(log07, tmp_path, damage):
    pdir = copy_log07(log07, tmp_path)
    segs = segments07(pdir)
    seg = segs[1]
    pos = _positions(seg)
    victim = pos[2]
    with open(seg, "r+b") as f:
        if damage == "crc":
            f.seek(victim + 12)
            f.write(b"\xee")
        elif damage == "magic":
            f.seek(victim + k7.MAGIC_POS)
            f.write(b"\x05")
        elif damage == "lying_length":
            f.seek(victim)
            f.write(struct.pack(">i", 3))
        else:
            e = [x for x in k7.entries(seg.read_bytes()) if x.magic == 1][0]
            victim = e.position
            f.seek(victim + k7.FIELD_POS[1]["attributes"])
            f.write(b"\x03")
    r = run_kseg("verify", "--format", "json", pdir)
    assert r.returncode == 4
    (f,) = _findings(r.stdout)
    assert (f["file"], f["position"]) == (str(seg), victim)
    assert "0.7 checks only the last segment" in f["message"]
    segment_events = [e for e in events(r.stdout) if e["type"] == "segment"]
    assert [e["status"] for e in segment_events][:3] == ["ok", "corrupt", "ok"]
    # --keep-later-segments: 0.7's own recovery touches only the last segment; nothing to do
    r = run_kseg("verify", "--repair", "--keep-later-segments", pdir)
    assert r.returncode == 4 and not (tmp_path / "kseg-quarantine").exists()
    r = run_kseg("verify", "--repair", "--format", "json", pdir)
    assert r.returncode == 1, r.stdout + r.stderr
    actions = [e for e in events(r.stdout) if e["type"] == "repair_action"]
    assert actions[0]["action"] == "truncate" and actions[0]["position"] == victim
    assert [Path(a["file"]).name for a in actions[1:]] == [p.name for p in segs[2:]]
    assert segments07(pdir) == segs[:2] and seg.stat().st_size == victim
    assert run_kseg("verify", pdir).returncode == 0


def test_non_contiguous_segments_are_reported_precisely(log07, tmp_path):
    pdir = copy_log07(log07, tmp_path)
    segs = segments07(pdir)
    a, b = segs[1], segs[2]
    expected = int(a.name[:20]) + a.stat().st_size
    moved = pdir / f"{expected + 10:020d}.kafka"
    b.rename(moved)
    r = run_kseg("verify", "--format", "json", pdir)
    assert r.returncode == 4
    f, g = _findings(r.stdout)  # the renamed segment breaks the chain on both sides
    assert f["kind"] == "segment_not_contiguous" and f["file"] == str(moved)
    assert f["offset"] == expected + 10 and not f["repairable"]
    assert f"ends at byte offset {expected}" in f["message"] and "a gap of 10 bytes" in f["message"]
    assert (g["kind"], g["file"]) == ("segment_not_contiguous", str(segs[3]))
    assert "an overlap of 10 bytes" in g["message"]
    r = run_kseg("verify", "--repair", pdir)  # nothing kseg may cut: reported, exit 4
    assert r.returncode == 4 and not (tmp_path / "kseg-quarantine").exists()


def test_deep_checks_inner_messages(log07, tmp_path):
    pdir = copy_log07(log07, tmp_path)
    seg = segments07(pdir)[0]
    data = seg.read_bytes()
    w = next(e for e in k7.entries(data) if e.compression == "snappy")
    # a wrapper whose inner message fails its CRC, the outer CRC recomputed: 0.7 keeps it
    inner = bytearray(k7.encode_message_set([b"a" * (w.payload_size // 2), b"b"], codec=0))
    inner[-1] ^= 1
    bad = k7.encode_wrapper(bytes(inner), codec=2)
    with open(seg, "r+b") as f:
        f.seek(w.position)
        f.write(bad + data[w.position + w.entry_size :])
        f.truncate(w.position + len(bad) + len(data) - w.position - w.entry_size)
    shift = len(bad) - w.entry_size
    if shift:  # keep the names contiguous: rename the later segments by the shift
        for p in reversed(segments07(pdir)[1:]):
            p.rename(pdir / f"{int(p.name[:20]) + shift:020d}.kafka")
    assert run_kseg("verify", pdir).returncode == 0  # 0.7's rule: the outer CRC matches
    r = run_kseg("verify", "--deep", "--format", "json", pdir)
    assert r.returncode == 4
    (f,) = _findings(r.stdout)
    assert (f["kind"], f["position"], f["repairable"]) == ("crc_mismatch", w.position, False)
    assert "inside a compressed wrapper" in f["message"]


def test_empty_kafka_file_and_empty_partition(tmp_path):
    pdir = tmp_path / "logs" / "t-0"
    pdir.mkdir(parents=True)
    (pdir / "00000000000000000000.kafka").write_bytes(b"")
    r = run_kseg("verify", pdir)
    assert r.returncode == 0, r.stdout + r.stderr  # a new 0.7 log: one empty segment
    assert b"ok (0 bytes)" in r.stdout
    (pdir / "00000000000000000000.kafka").unlink()
    r = run_kseg("verify", "--format", "json", pdir)  # nothing to check is never clean
    assert r.returncode != 0 or any(e.get("kind") == "no_segments" for e in _findings(r.stdout))


def test_killed_repair_resumes(log07, tmp_path):
    pdir = copy_log07(log07, tmp_path)
    seg = segments07(pdir)[1]
    with open(seg, "r+b") as f:
        f.seek(_positions(seg)[1] + 11)
        f.write(b"\x00\x00")
    env = {**os.environ, "KSEG_TEST_CRASH_AT": "truncated"}
    r = run_kseg("verify", "--repair", pdir, env=env)
    assert r.returncode == 99, r.stderr
    r = run_kseg("verify", "--repair", pdir)
    assert r.returncode == 1, r.stdout + r.stderr
    assert b"resumed an interrupted repair" in r.stdout
    assert run_kseg("verify", pdir).returncode == 0


@pytest.mark.parametrize("cmd", [("index", "check"), ("index", "rebuild", "--dry-run")])
def test_index_commands_say_07_has_no_indexes(log07, cmd):
    r = run_kseg(*cmd, log07 / "events-0")
    assert r.returncode == 16, r.stdout + r.stderr  # nothing to check is never a clean run
    assert b"a Kafka 0.7 partition (.kafka segments) has no index files" in r.stderr
    assert b"Traceback" not in r.stderr and b"internal error" not in r.stderr
