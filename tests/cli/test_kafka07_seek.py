"""`kseg seek` on Kafka 0.7 partitions: byte offsets, and --time by segment file mtimes."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import orjson
import pytest

from kseg.fixtures.kafka07 import build_kafka07_tree
from kseg.format import kafka07 as k7
from tests.helpers import run_kseg, segments07

T0 = 1_300_000_000_000  # 2011: when 0.7 clusters ran


@pytest.fixture
def pdir(tmp_path_factory) -> Path:
    root = build_kafka07_tree(tmp_path_factory.mktemp("k07") / "logs")
    p = root / "events-0"
    for s in segments07(p):
        if not s.stat().st_size:
            s.unlink()  # the last segment holds data: the (log end, now) pair exists
    for i, s in enumerate(segments07(p)):
        t = (T0 + i * 60_000) / 1000
        os.utime(s, (t, t))
    return p


def _seek(*args) -> tuple[int, dict, bytes]:
    r = run_kseg("seek", "--format", "json", *args)
    return r.returncode, orjson.loads(r.stdout) if r.stdout.strip() else {}, r.stderr


def test_offset_boundary_inside_and_ends(pdir):
    segs = segments07(pdir)
    s1 = segs[1]
    base = int(s1.name[:20])
    entries = list(k7.entries(s1.read_bytes(), base=base))
    e = entries[1]
    code, ev, _ = _seek(pdir, "--offset", e.offset)
    assert code == 0
    assert (ev["status"], ev["offset"], ev["segment"], ev["position"]) == (
        "found", e.offset, str(s1), e.position,
    )  # fmt: skip
    code, ev, _ = _seek(pdir, "--offset", e.offset + 3)
    assert code == 0 and (ev["status"], ev["offset"]) == ("inside_entry", e.offset)
    assert ev["batch_last_offset"] + 1 == e.next_offset
    r = run_kseg("seek", pdir, "--offset", e.offset + 3)
    assert b"is not an entry boundary: it lies inside the entry at offset %d" % e.offset in r.stdout
    end = int(segs[-1].name[:20]) + segs[-1].stat().st_size
    code, ev, _ = _seek(pdir, "--offset", end)
    assert code == 0 and ev["status"] == "at_or_above_log_end" and ev["log_end_offset"] == end


def test_time_by_segment_mtimes(pdir):
    segs = segments07(pdir)
    bases = [int(s.name[:20]) for s in segs]
    end = bases[-1] + segs[-1].stat().st_size
    for t, want in [
        (T0 + 60_000, bases[1]),
        (T0 + 60_000 - 1, bases[0]),
        (T0 + 60_000 * (len(segs) - 1) + 5, bases[-1]),
        (T0 - 1, None),
        ("latest", end),
        ("earliest", 0),
    ]:
        code, ev, err = _seek(pdir, "--time", t)
        assert code == 0, err
        assert ev["offset"] == want, (t, ev)
        if isinstance(t, int):
            assert ev["time_basis"] == "segment_mtime"
            assert b"segment file mtimes" in err and b"changes this answer" in err
    r = run_kseg("seek", pdir, "--time", T0 + 60_000)
    assert b"0.7 rule: newest segment modified at or before" in r.stdout
    # copying without keeping mtimes changes the answer, as the output warns
    copy = pdir.parent / "copied-0"
    shutil.copytree(pdir, copy, copy_function=shutil.copyfile)
    code, ev, _ = _seek(copy, "--time", T0 + 60_000)
    assert code == 0 and ev["offset"] is None


def test_max_timestamp_is_refused(pdir):
    r = run_kseg("seek", pdir, "--time", "max-timestamp")
    assert r.returncode == 16
    assert b"0.7 messages carry no timestamps" in r.stderr and b"Traceback" not in r.stderr


def test_offset_in_a_corrupt_segment(pdir):
    s0 = segments07(pdir)[0]
    first = next(k7.entries(s0.read_bytes()))
    with open(s0, "r+b") as f:
        f.seek(first.entry_size + k7.MAGIC_POS)
        f.write(b"\x08")
    code, ev, err = _seek(pdir, "--offset", first.entry_size + 1)
    assert code == 4, err
    assert ev["status"] == "corrupt" and "invalid magic 8" in ev["error"]
