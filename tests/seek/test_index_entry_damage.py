"""An offset-index entry that points nowhere valid (a negative position, one at or past the end
of the log, one inside a batch, one at a batch holding offsets past the entry's) is invalid data
for every lookup: exit 4, the index file and the entry's byte named, and the answer is still the
one a scan from the segment's start gives (the rule lives once: storage.Segment.start_for).

Kafka writes an entry (O, P) only where a batch starts whose last offset is O or below
(LogSegment.append / LogSegment.recover: offsetIndex.append(batch.lastOffset(), position)).
"""

from __future__ import annotations

import os
import shutil
import struct

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kseg import kernel
from kseg.format.offset_index import OffsetIndex
from kseg.format.record import Record
from kseg.seek.seek import seek_offset, seek_time
from kseg.storage.segment import OFFSET_INDEX, Segment
from kseg.storage.writer import LogWriter

from ..helpers import events, run_kseg

T = 1_700_000_000_000
ENTRY = 3  # the damaged entry: its byte in the .index is ENTRY * 8
BATCHES = 20


def _write(pdir):
    infos = []
    with LogWriter(pdir, index_interval_bytes=256, clock=lambda: T) as w:
        for b in range(BATCHES):
            recs = [Record(b"k", b"x" * 100, T + b * 10 + i) for i in range(3)]
            infos.append(w.append(recs))
    return infos


@pytest.fixture(scope="module")
def clean(tmp_path_factory):
    pdir = tmp_path_factory.mktemp("clean") / "t-0"
    return pdir, _write(pdir)


def _entry(pdir, n: int):
    seg = Segment(pdir / "00000000000000000000.log")
    return seg.index(OFFSET_INDEX).view.entry(n), seg


def _damage(clean, tmp_path, position: int):
    src, _ = clean
    pdir = tmp_path / "t-0"
    shutil.copytree(src, pdir)
    index = pdir / "00000000000000000000.index"
    data = bytearray(index.read_bytes())
    struct.pack_into(">i", data, ENTRY * 8 + 4, position)
    index.write_bytes(bytes(data))
    return pdir, index


def _positions(clean) -> dict[str, int]:
    pdir, infos = clean
    entry, seg = _entry(pdir, ENTRY)
    at = next(i for i, b in enumerate(infos) if b.position == entry.position)
    return {
        "negative": -5,
        "at-the-end": seg.size(),
        "far-past-the-end": 0x7FFFFFFF,
        "inside-a-batch": entry.position + 7,
        "at-a-later-batch": infos[at + 1].position,  # holds offsets past the entry's
    }


DAMAGES = ["negative", "at-the-end", "far-past-the-end", "inside-a-batch", "at-a-later-batch"]


def _answers(pdir, which: str, offset: int, ts: int):
    env = {**os.environ, kernel.ENV: which}
    out = {}
    for name, args in {
        "seek_offset": ["seek", pdir, "--offset", offset],
        "seek_time": ["seek", pdir, "--time", ts],
        "dump_offset": ["dump", pdir / "00000000000000000000.log", "--from-offset", offset],
        "dump_time": ["dump", pdir / "00000000000000000000.log", "--from-time", ts],
    }.items():
        if args[0] == "dump":
            args = [*args, "--limit", "2", "--payload", "none"]
        proc = run_kseg(*args, "-f", "json", env=env)
        evs = events(proc.stdout)
        if args[0] == "seek":
            (ev,) = evs
            answer = (ev["offset"], ev["position"])
        else:
            answer = [(e["offset"], e.get("timestamp")) for e in evs if e["type"] == "record"]
        errors = [e for e in evs if e["type"] == "error"]
        out[name] = (proc.returncode, answer, proc.stderr.decode(), errors)
    return out


@pytest.mark.parametrize("which", [kernel.RUST, kernel.PYTHON])
@pytest.mark.parametrize("damage", DAMAGES)
def test_a_damaged_index_entry_is_invalid_data_and_the_answer_stands(
    clean, tmp_path, damage, which
):
    entry, _ = _entry(clean[0], ENTRY)
    offset = entry.offset + 1  # the lookup for it lands on the damaged entry
    ts = T + (offset // 3) * 10 + offset % 3  # that record's timestamp
    want = _answers(clean[0], which, offset, ts)
    assert {k: v[0] for k, v in want.items()} == dict.fromkeys(want, 0)
    pdir, index = _damage(clean, tmp_path, _positions(clean)[damage])
    got = _answers(pdir, which, offset, ts)
    for name, (rc, answer, stderr, errors) in got.items():
        assert rc == 4, (name, stderr)
        assert answer == want[name][1], name  # a scan from the segment's start: the right one
        if name.startswith("seek"):
            assert f"kseg: {index}: byte {ENTRY * 8}: entry {ENTRY} " in stderr, stderr
            message = stderr
        else:
            (err,) = errors
            assert (err["file"], err["position"], err["kind"]) == (
                str(index),
                ENTRY * 8,
                "invalid_index",
            )
            message = err["message"]
        assert "the lookup scans the segment from its start instead" in message


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(n=st.integers(0, 18), position=st.integers(-(1 << 31), (1 << 31) - 1), data=st.data())
def test_any_damaged_entry_never_changes_an_answer(clean, tmp_path, n, position, data):
    """Library level, any entry, any position: seek by offset and by time answer what the clean
    files answer; the entry is reported exactly when it cannot be followed."""
    src, infos = clean
    pdir = tmp_path / "t-0"
    if not pdir.exists():
        shutil.copytree(src, pdir)
    index = pdir / "00000000000000000000.index"
    clean_bytes = (src / index.name).read_bytes()
    buf = bytearray(clean_bytes)
    struct.pack_into(">i", buf, n * 8 + 4, position)
    index.write_bytes(bytes(buf))
    entry = OffsetIndex(clean_bytes, 0).entry(n)
    offset = data.draw(st.integers(entry.offset, entry.offset + 2), label="offset")
    ts = T + (offset // 3) * 10 + offset % 3
    # entries are 3 offsets apart: a lookup for [O, O+2] lands on entry n itself
    followable = any(b.position == position and b.last_offset <= entry.offset for b in infos)
    try:
        got, want = seek_offset(pdir, offset), seek_offset(src, offset)
        assert (got.offset, got.position, got.error) == (want.offset, want.position, None)
        assert [(p.file, p.position) for p in got.problems] == (
            [] if followable else [(str(index), n * 8)]
        )
        got, want = seek_time(pdir, ts), seek_time(src, ts)
        assert (got.offset, got.position, got.error) == (want.offset, want.position, None)
        # only entry n is damaged: it is the only one that can be reported
        assert {(p.file, p.position) for p in got.problems} <= {(str(index), n * 8)}
        assert not (followable and got.problems)
    finally:
        index.write_bytes(clean_bytes)
