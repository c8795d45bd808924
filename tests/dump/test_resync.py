"""dump --resync and stats --resync: the walk goes on past damage (kseg.format.resync), each
unreadable range an event, every untouched batch shown, nothing invented; the same with the
compiled kernel and without. (walk_resync's own property suite lives in tests/format.)"""

from __future__ import annotations

import os
import random
from pathlib import Path

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kseg import kernel
from kseg.dump.options import DumpOptions
from kseg.dump.run import DumpRun
from kseg.format.batch import build_batch
from kseg.format.errors import CorruptionError
from kseg.format.log import iter_entries
from kseg.format.record import Record
from kseg.format.resync import Skipped, scan_candidates, skip_from, walk_resync
from kseg.outcome import Outcome
from kseg.stats.stats import StatsOptions, count
from kseg.storage.writer import LogWriter
from tests.helpers import run_kseg

KERNELS = ["rust", "python"]
T0 = 1_700_000_000_000
PAGE = 4096
SHAPES = [(2, "none"), (2, "gzip"), (1, "none"), (1, "gzip"), (0, "none")]


def write_partition(pdir: Path, magic=2, compression="none", batches=40, seed=0, **kw) -> Path:
    """A partition of ``batches`` batches (1-6 records of varied sizes) by kseg's writer."""
    rnd = random.Random(seed)
    with LogWriter(pdir, magic=magic, compression=compression, clock=lambda: T0, **kw) as w:
        for b in range(batches):
            w.append(
                [
                    Record(
                        b"k%d-%d" % (b, i),
                        bytes(rnd.randrange(256) for _ in range(rnd.randrange(5, 200))),
                    )
                    for i in range(rnd.randint(1, 6))
                ]
            )
    return pdir


def batches_of(data: bytes) -> list[tuple[int, int, list[tuple]]]:
    """(position, end, [(offset, key, value)]) of every entry of clean bytes."""
    out = []
    for e in iter_entries(data, validate=True):
        out.append(
            (e.position, e.position + e.size, [(r.offset, r.key, r.value) for r in e.records()])
        )
    return out


def damage(data: bytes, how: str, at: int, rnd: random.Random) -> tuple[bytes, int, int]:
    """``data`` damaged at byte ``at``: (bytes, first damaged byte, end of damaged bytes)."""
    b = bytearray(data)
    if how == "flip":
        b[at] ^= 1 << rnd.randrange(8)
        return bytes(b), at, at + 1
    if how == "zero_page":
        lo = at - at % PAGE
        hi = min(len(b), lo + PAGE)
        b[lo:hi] = bytes(hi - lo)
        return bytes(b), lo, hi
    if how == "garbage":
        n = min(len(b) - at, rnd.randrange(1, 700))
        b[at : at + n] = rnd.randbytes(n)
        return bytes(b), at, at + n
    raise AssertionError(how)


def lie_length(data: bytes, entry_pos: int, by: int) -> bytes:
    b = bytearray(data)
    size = int.from_bytes(b[entry_pos + 8 : entry_pos + 12], "big", signed=True)
    b[entry_pos + 8 : entry_pos + 12] = (size + by).to_bytes(4, "big", signed=True)
    return bytes(b)


@pytest.fixture(params=KERNELS)
def which(request, monkeypatch):
    monkeypatch.setenv("KSEG_KERNEL", request.param)
    kernel.reset()
    yield request.param
    kernel.reset()


def dumped_records(pdir: Path, **kw) -> tuple[list[tuple], list[dict], int]:
    run = DumpRun([pdir], DumpOptions(resync=True, payload="hex", **kw))
    recs, skipped = [], []
    for chunk in run.chunks():
        for ev in chunk:
            if ev["type"] == "record":
                recs.append((ev["offset"], bytes.fromhex(ev["key"]), bytes.fromhex(ev["value"])))
            elif ev["type"] == "skipped":
                skipped.append(ev)
    return recs, skipped, run.outcome


def check_untouched(clean: list, lo: int, hi: int, recs: list[tuple]) -> None:
    """Every batch outside the damaged bytes [lo, hi) is shown whole; every record shown was
    written (nothing invented)."""
    # nothing invented: a record's key and value were written (a v2 batch's base offset lies
    # outside its CRC: a flip there shows its records at the offsets it claims, as Kafka serves
    # them; salvage's business, not dump's)
    written = {r[1:] for _, _, rs in clean for r in rs}
    assert {r[1:] for r in recs} <= written, "a record that was never written"
    assert len(recs) == len(set(recs)), "a record shown twice"
    for pos, end, rs in clean:
        if end <= lo or pos >= hi:
            assert set(rs) <= set(recs), f"the untouched batch at byte {pos} is missing"


# --- dump, library ----------------------------------------------------------------------------


@pytest.mark.parametrize("magic,codec", SHAPES)
@pytest.mark.parametrize("how", ["flip", "zero_page", "garbage", "lie"])
def test_dump_resync_shows_every_untouched_batch(tmp_path, which, magic, codec, how):
    pdir = write_partition(tmp_path / "t-0", magic, codec, batches=60)
    log = next(pdir.glob("*.log"))
    data = log.read_bytes()
    clean = batches_of(data)
    rnd = random.Random(7)
    victim = clean[len(clean) // 3]
    if how == "lie":  # the damaged entry's size lies: the scan finds the next batch
        bad, lo, hi = lie_length(data, victim[0], 3), victim[0], victim[0] + 12
    else:
        bad, lo, hi = damage(data, how, victim[0] + (victim[1] - victim[0]) // 2, rnd)
    log.write_bytes(bad)
    recs, skipped, outcome = dumped_records(pdir)
    check_untouched(clean, lo, hi, recs)
    assert skipped and outcome == Outcome.INVALID_DATA
    s = skipped[0]
    assert s["file"] == str(log) and s["start"] <= max(lo, victim[0]) and s["end"] > s["start"]
    # the range names the offsets the batches it covers held
    lost = [o for pos, end, rs in clean if s["start"] <= pos < s["end"] for o, _, _ in rs]
    if s["first_offset"] is not None and s["last_offset"] is not None:
        assert s["first_offset"] <= min(lost) and max(lost) <= s["last_offset"]


def test_dump_without_resync_still_stops_at_damage(tmp_path):
    pdir = write_partition(tmp_path / "t-0", batches=30)
    log = next(pdir.glob("*.log"))
    clean = batches_of(log.read_bytes())
    log.write_bytes(lie_length(log.read_bytes(), clean[10][0], 100_000))
    run = DumpRun([pdir], DumpOptions(payload="hex"))
    evs = [ev for chunk in run.chunks() for ev in chunk]
    assert not any(ev["type"] == "skipped" for ev in evs)
    assert [ev["kind"] for ev in evs if ev["type"] == "error"] == ["torn_tail"]
    assert max(ev["offset"] for ev in evs if ev["type"] == "record") < clean[10][2][0][0]


def test_a_record_value_holding_a_batch_is_not_resynced_to(tmp_path, which):
    """A producer's batch (base offset 0, built by kseg's own batch builder) inside a record
    value: the offsets rule keeps the scan from taking it for a batch of the log."""
    inner = build_batch(
        [Record(b"evil", b"invented" * 4, T0, [], i) for i in range(3)], 0
    )  # a whole valid v2 batch, offsets 0..2
    pdir = tmp_path / "t-0"
    with LogWriter(pdir, clock=lambda: T0) as w:
        for b in range(12):
            w.append([Record(b"k%d" % b, inner if b == 6 else b"plain %d" % b)])
    log = next(pdir.glob("*.log"))
    data = log.read_bytes()
    clean = batches_of(data)
    pos = clean[6][0]
    log.write_bytes(lie_length(data, pos, 9999))  # its size lies: the scan starts inside it
    recs, skipped, _ = dumped_records(pdir)
    assert all(k != b"evil" for _, k, _ in recs)
    check_untouched(clean, pos, pos + 12, recs)
    assert [(s["start"], s["end"]) for s in skipped] == [(pos, clean[7][0])]


def test_dump_resync_several_segments_and_partitions(tmp_path, which):
    a = write_partition(tmp_path / "t-0", batches=50, segment_bytes=3000)
    b = write_partition(tmp_path / "t-1", batches=20, seed=3)
    logs = sorted(a.glob("*.log"))
    assert len(logs) >= 3
    clean_all = []
    for log in logs:
        clean_all += batches_of(log.read_bytes())
    clean_b = batches_of(next(b.glob("*.log")).read_bytes())
    first = batches_of(logs[1].read_bytes())
    bad, lo, hi = damage(logs[1].read_bytes(), "flip", first[1][0] + 30, random.Random(1))
    logs[1].write_bytes(bad)
    recs, skipped, outcome = dumped_records(tmp_path)
    assert (
        len(skipped) == 1 and skipped[0]["file"] == str(logs[1]) and outcome == Outcome.INVALID_DATA
    )
    ok = [(pos, end, rs) for pos, end, rs in first if end <= lo or pos >= hi]
    shown = set(recs)
    for _, _, rs in ok + clean_b:
        assert set(rs) <= shown
    # the later segments of the partition are shown whole
    for log in logs[2:]:
        for _, _, rs in batches_of(log.read_bytes()):
            assert set(rs) <= shown
    assert shown <= {r for _, _, rs in clean_all + clean_b for r in rs}


def test_dump_resync_with_offsets_count_and_search(tmp_path, which):
    pdir = write_partition(tmp_path / "t-0", batches=40)
    log = next(pdir.glob("*.log"))
    clean = batches_of(log.read_bytes())
    victim = clean[20]
    log.write_bytes(damage(log.read_bytes(), "flip", victim[0] + 40, random.Random(2))[0])
    lost = {o for o, _, _ in victim[2]}
    everything = [r for _, _, rs in clean for r in rs if r[0] not in lost]
    lo_off, hi_off = clean[15][2][0][0], clean[30][2][-1][0]
    recs, skipped, _ = dumped_records(pdir, from_offset=lo_off, to_offset=hi_off)
    assert recs == [r for r in everything if lo_off <= r[0] <= hi_off]
    assert len(skipped) == 1
    run = DumpRun([pdir], DumpOptions(resync=True, count=True))
    totals = [ev for chunk in run.chunks() for ev in chunk if ev["type"] == "match_total"]
    assert totals[0]["matches"] == len(everything)
    from kseg.dump.search import record_filter

    keep = record_filter(None, None, None, [b"k25-0"], None)
    recs, _, _ = dumped_records(pdir, record_filter=keep)
    assert [k for _, k, _ in recs] == [b"k25-0"]


# --- the property: every untouched batch, nothing invented ------------------------------------


_CLEAN: dict = {}


@pytest.fixture(scope="module")
def logs_ready(clean_logs):
    return len(clean_logs)  # the hypothesis test reads _CLEAN (a short repr when it fails)


@pytest.fixture(scope="module")
def clean_logs(tmp_path_factory):
    if _CLEAN:
        return _CLEAN
    out = _CLEAN
    for magic, codec in SHAPES:
        pdir = write_partition(
            tmp_path_factory.mktemp(f"m{magic}{codec}") / "t-0", magic, codec, 30
        )
        out[(magic, codec)] = next(pdir.glob("*.log")).read_bytes()
    return out


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    shape=st.sampled_from(SHAPES),
    how=st.sampled_from(["flip", "zero_page", "garbage", "lie"]),
    where=st.floats(0, 0.999),
    seed=st.integers(0, 2**32),
    kern=st.sampled_from(KERNELS),
)
def test_dump_resync_property(tmp_path_factory, logs_ready, shape, how, where, seed, kern):
    data = _CLEAN[shape]
    clean = batches_of(data)
    rnd = random.Random(seed)
    at = int(where * len(data))
    if how == "lie":
        victim = next(b for b in clean if b[1] > at)
        bad, lo, hi = (
            lie_length(data, victim[0], rnd.choice([-9, 1, 5, 777, -(1 << 20)])),
            victim[0],
            victim[0] + 12,
        )
    else:
        bad, lo, hi = damage(data, how, at, rnd)
    pdir = tmp_path_factory.mktemp("p") / "t-0"
    pdir.mkdir()
    (pdir / "00000000000000000000.log").write_bytes(bad)
    os.environ["KSEG_KERNEL"] = kern
    kernel.reset()
    try:
        recs, skipped, _ = dumped_records(pdir)
    finally:
        os.environ.pop("KSEG_KERNEL", None)
        kernel.reset()
    check_untouched(clean, lo, hi, recs)
    # the events are walk_resync's own (the one rule)
    ref = [x for x in walk_resync(bad) if isinstance(x, Skipped)]
    assert [
        (s["start"], s["end"], s["first_offset"], s["last_offset"], s["kind"]) for s in skipped
    ] == [(s.start, s.end, s.first_offset, s.last_offset, s.kind) for s in ref]


# --- the kernel's prefilter against the core's -----------------------------------------------


try:  # the compiled kernel itself, whatever KSEG_KERNEL says (the differential test compares)
    from kseg import _kernel as KERNEL
except ImportError:  # pragma: no cover - a build without the kernel
    KERNEL = None


@pytest.mark.skipif(KERNEL is None, reason="the compiled kernel is not built")
@pytest.mark.parametrize("shape", SHAPES)
def test_kernel_scan_equals_the_core_scan_on_random_damage(clean_logs, shape):
    k = KERNEL
    data = clean_logs[shape]
    rnd = random.Random(hash(shape) & 0xFFFF)
    for _ in range(60):
        bad = bytearray(data)
        for _ in range(rnd.randint(1, 4)):
            bad, _, _ = damage(
                bytes(bad),
                rnd.choice(["flip", "zero_page", "garbage"]),
                rnd.randrange(len(data)),
                rnd,
            )
        bad = bytes(bad)
        last = rnd.choice([-1, 0, 10, 50, 1 << 40])
        pos = rnd.randrange(len(bad))
        assert k.resync_scan(bad, pos, len(bad), last) == scan_candidates(bad, pos, len(bad), last)
        try:
            list(iter_entries(bad, validate=True))
        except CorruptionError as exc:
            a = skip_from(bad, exc, 0, len(bad), -1, scan=k.resync_scan)
            b = skip_from(bad, exc, 0, len(bad), -1)
            assert a == b


def test_scan_skips_a_zeroed_region_and_random_bytes():
    rnd = random.Random(5)
    for data in (bytes(1 << 16), rnd.randbytes(1 << 16)):
        assert scan_candidates(data, 0, len(data), 10) == -1
        if KERNEL is not None:
            assert KERNEL.resync_scan(data, 0, len(data), 10) == -1


# --- stats --------------------------------------------------------------------------------------


def test_stats_resync_counts_past_damage(tmp_path, which):
    pdir = write_partition(tmp_path / "t-0", magic=2, compression="gzip", batches=40)
    log = next(pdir.glob("*.log"))
    data = log.read_bytes()
    clean = batches_of(data)
    victim = clean[12]
    log.write_bytes(damage(data, "flip", victim[0] + 30, random.Random(3))[0])
    evs = list(count([pdir], opts=StatsOptions(resync=True)).events())
    row = next(ev for ev in evs if ev["type"] == "partition_stats")
    assert row["batches"] == len(clean) - 1
    assert row["records"] == sum(len(rs) for _, _, rs in clean) - len(victim[2])
    assert row["skipped_ranges"] == 1 and row["skipped_bytes"] == victim[1] - victim[0]
    assert row["errors"] == 1
    failures = [ev["message"] for ev in evs if ev["type"] == "failure"]
    assert len(failures) == 1 and f"skipped bytes {victim[0]}..{victim[1]}" in failures[0]
    plain = next(ev for ev in count([pdir]).events() if ev["type"] == "partition_stats")
    assert plain["batches"] == 12 and "skipped_bytes" not in plain


# --- the CLI ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def damaged_dir(tmp_path_factory):
    pdir = write_partition(
        tmp_path_factory.mktemp("cli") / "t-0", magic=2, compression="gzip", batches=30
    )
    log = next(pdir.glob("*.log"))
    data = log.read_bytes()
    clean = batches_of(data)
    data = damage(data, "flip", clean[8][0] + 40, random.Random(4))[0]
    data = lie_length(data, clean[20][0], 50)
    log.write_bytes(data)
    return pdir, log, clean


@pytest.mark.parametrize("fmt", ["text", "json", "table"])
def test_cli_dump_resync_same_output_with_either_kernel(damaged_dir, fmt):
    pdir, log, clean = damaged_dir
    outs = []
    for k in KERNELS:
        p = run_kseg("dump", pdir, "--resync", "-f", fmt, env={**os.environ, "KSEG_KERNEL": k})
        assert p.returncode == 4, p.stderr
        outs.append((p.stdout, p.stderr))
    assert outs[0] == outs[1]
    out, err = outs[0]
    lines = err.decode().splitlines()
    assert len(lines) == (0 if fmt == "json" else 2)  # JSON: the events only, as for errors
    assert fmt == "json" or lines[0] == (
        f"kseg: {log} at byte {clean[8][0]}: skipped bytes {clean[8][0]}..{clean[9][0]}"
        f" ({clean[9][0] - clean[8][0]} bytes, offsets {clean[8][2][0][0]}..{clean[8][2][-1][0]}):"
        " crc_mismatch: batch CRC-32C mismatch"
    )
    if fmt == "json":
        skipped = [orjson.loads(x) for x in out.splitlines() if b'"skipped"' in x]
        assert [(s["start"], s["end"], s["ambiguous"]) for s in skipped] == [
            (clean[8][0], clean[9][0], False),
            (clean[20][0], clean[21][0], True),  # found inside the extent its size claims
        ]
        n = sum(1 for x in out.splitlines() if x.startswith(b'{"type":"record"'))
        assert n == sum(len(rs) for _, _, rs in clean) - len(clean[8][2]) - len(clean[20][2])
    elif fmt == "text":
        assert out.count(b"\nSKIPPED bytes ") == 2
    else:
        assert out.count(b"SKIPPED") == 2


def test_cli_dump_resync_count_and_without(damaged_dir):
    pdir, _, clean = damaged_dir
    want = sum(len(rs) for _, _, rs in clean) - len(clean[8][2]) - len(clean[20][2])
    p = run_kseg("dump", pdir, "--resync", "--count", "-f", "json")
    assert p.returncode == 4
    totals = [orjson.loads(x) for x in p.stdout.splitlines() if b"match_total" in x]
    assert totals[0]["matches"] == want
    p = run_kseg("dump", pdir, "--count", "-f", "json")  # without: stops at the first damage
    assert p.returncode == 4
    got = [orjson.loads(x) for x in p.stdout.splitlines() if b"match_total" in x][0]["matches"]
    assert got < want


def test_cli_stats_resync_json(damaged_dir):
    pdir, _, clean = damaged_dir
    p = run_kseg("stats", pdir, "--resync", "-f", "json")
    assert p.returncode == 4
    row = next(orjson.loads(x) for x in p.stdout.splitlines() if b"partition_stats" in x)
    assert row["batches"] == len(clean) - 2 and row["skipped_ranges"] == 2
    assert b"skipped bytes" in p.stderr


def test_a_windowed_scan_gives_the_events_of_a_whole_one(tmp_path, which, monkeypatch):
    """A file read on demand is scanned window by window (kseg.format.resync._windowed):
    with windows of a few KiB over a segment of large and small batches and several damages
    (garbage, a zeroed page, a lying length past a window), the events are those of a walk
    over the bytes in memory, and the candidates are found across window ends."""
    from kseg.format import resync
    from kseg.storage import mapped
    from kseg.storage.kernel_walk import resync_scanner

    monkeypatch.setattr(resync, "SCAN_WINDOW", 16 * 1024)
    monkeypatch.setattr(resync, "SCAN_MARGIN", 4 * 1024)
    monkeypatch.setattr(mapped, "FILL_STEP", 4 * 1024)
    monkeypatch.setattr(mapped, "KEEP_BEHIND", 8 * 1024)
    rnd = random.Random(7)
    pdir = tmp_path / "w-0"
    with LogWriter(pdir, clock=lambda: T0) as w:
        for b in range(60):
            size = rnd.choice((50, 300, 3000, 9000))  # some batches span a window's margin
            w.append([Record(b"k%d" % b, rnd.randbytes(size))])
    (log,) = pdir.glob("*.log")
    clean = log.read_bytes()
    starts = [e.position for e in iter_entries(clean)]
    for seed in range(6):
        r = random.Random(seed)
        bad = clean
        for how in ("garbage", "zero_page", "flip"):
            bad, _, _ = damage(bad, how, r.randrange(len(bad)), r)
        at = r.randrange(len(bad) // 2)  # a region longer than a window
        bad = bad[:at] + r.randbytes(40_000) + bad[at + 40_000 :]
        if seed % 2:
            bad = lie_length(bad, r.choice(starts[:-1]), 1 << 20)
        log.write_bytes(bad)
        want = list(walk_resync(bad, scan=resync_scanner()))
        buf = mapped.open_mapped(log)
        got = list(walk_resync(buf, scan=resync_scanner()))
        norm = [(x.position, x.size) if not isinstance(x, Skipped) else x for x in got]
        assert norm == [(x.position, x.size) if not isinstance(x, Skipped) else x for x in want]
        assert any(isinstance(x, Skipped) for x in want)


def test_zeros_over_a_segments_last_batches_say_the_offsets_lost(tmp_path, which):
    """A segment whose last batches are zeroed (a lost page cache after the size grew) and a
    next segment: the zero-filled tail held the offsets up to the next one's base offset;
    with no next segment, zeros at the end may be preallocation: none."""
    pdir = write_partition(tmp_path / "z-0", batches=30, segment_bytes=2500)
    logs = sorted(pdir.glob("*.log"))
    assert len(logs) >= 3
    first = logs[0]
    data = first.read_bytes()
    entries = list(iter_entries(data))
    k = len(entries) - 2
    first.write_bytes(data[: entries[k].position] + bytes(len(data) - entries[k].position))
    _, evs, _ = dumped_records(pdir)
    (skip,) = [e for e in evs if e["type"] == "skipped"]
    assert skip["kind"] == "zero_filled_tail"
    next_base = int(logs[1].stem)
    assert (skip["first_offset"], skip["last_offset"]) == (entries[k].base_offset, next_base - 1)
    last = logs[-1]
    data = last.read_bytes()
    entries = list(iter_entries(data))
    last.write_bytes(data[: entries[-1].position] + bytes(entries[-1].size))
    _, evs, _ = dumped_records(pdir)
    tail = [e for e in evs if e["type"] == "skipped"][-1]
    assert tail["kind"] == "zero_filled_tail" and tail["first_offset"] is None
